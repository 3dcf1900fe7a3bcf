"""The shared reader for `<invoke name="…"><parameter name="…">value</parameter></invoke>`
inside a section token pair, which three families write with their own prefixes: MiniMax-M2
(`<minimax:tool_call>`), Step-3 (`<｜tool_calls_begin｜>` with `steptml:`) and DeepSeek V3.2
(`<｜DSML｜function_calls>`). A parameter marked `string="true"` is text as written; otherwise
the value is typed from the tool's schema. An invoke holding a JSON object instead of
parameter elements is read as that object."""

from __future__ import annotations

import re
from typing import Any

from workbench.providers.protocols.jsonish import Args, args_from_text, compact_json
from workbench.providers.protocols.reading import Offer, Reading, block_calls, blocks, typed_value

__all__ = ["invoke_example", "read_invokes"]


def read_invokes(
    text: str, offer: Offer, family: str, section: tuple[str, str], invoke: str, param: str
) -> Reading:
    inv = re.compile(
        rf"<{re.escape(invoke)}\s+name\s*=\s*\"([^\"]*)\"\s*>(.*?)(?:</{re.escape(invoke)}\s*>|(?=<{re.escape(invoke)}\s)|$)",
        re.S,
    )
    par = re.compile(
        rf"<{re.escape(param)}\s+name\s*=\s*\"([^\"]*)\"(?:\s+string\s*=\s*\"(true|false)\")?\s*>"
        rf"(.*?)(?:</{re.escape(param)}\s*>|(?=<{re.escape(param)}[\s>])|$)",
        re.S,
    )
    out = Reading()
    for start, end, body, closed in blocks(text, *section):
        invokes = list(inv.finditer(body))
        calls: list[tuple[str, Args]] = []
        for k, m in enumerate(invokes):
            name, inner = m.group(1).strip(), m.group(2)
            if name not in offer.names:
                continue
            cut = not closed and k == len(invokes) - 1 and not m.group(0).rstrip().endswith(">")
            params = list(par.finditer(inner))
            if params:
                values = {}
                for p in params:
                    key, flag, raw = p.group(1), p.group(2), p.group(3).strip()
                    values[key] = (
                        raw if flag == "true" else typed_value(raw, offer.param(name, key))
                    )
                args: Args = (values, compact_json(values), None)
            else:
                args = args_from_text(inner, at_end=cut)
            if cut:
                args = (args[0], inner.strip(), "truncated")
            calls.append((name, args))
        if calls:
            out.calls += block_calls(start, end, calls, len(invokes), family)
    return out


def invoke_example(
    section: tuple[str, str],
    invoke: str,
    param: str,
    name: str,
    arguments: dict[str, Any],
    *,
    typed: bool = False,
    wrap: tuple[str, str] = ("", ""),
) -> str:
    """One call in an invoke family's markup (`typed`: mark each value `string="true|false"`,
    as DSML does; `wrap`: tokens around the invoke, as Step-3's call begin and end)."""
    params = "".join(
        f'<{param} name="{k}"'
        + (f' string="{"true" if isinstance(v, str) else "false"}"' if typed else "")
        + f">{v if isinstance(v, str) else compact_json(v)}</{param}>"
        for k, v in arguments.items()
    )
    call = f'{wrap[0]}<{invoke} name="{name}">{params}</{invoke}>{wrap[1]}'
    return f"{section[0]}{call}{section[1]}"
