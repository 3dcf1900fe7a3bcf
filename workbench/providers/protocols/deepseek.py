"""DeepSeek's special-token calls. V3 and R1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function
<｜tool▁sep｜>name` then the arguments in a ```json fence, `<｜tool▁call▁end｜>`, and
`<｜tool▁calls▁end｜>` after the last call. V3.1 drops the type and the fence:
`<｜tool▁call▁begin｜>name<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`. V3.2 writes DSML invoke elements
(`<｜DSML｜function_calls>`), read as the family `deepseek_dsml`.

The bars are fullwidth (｜) and the spaces are ▁ in the real tokens; inside a section ASCII `|`
and `_` are accepted too, as some servers detokenise them so.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from workbench.providers.protocols.invoke_xml import invoke_example, read_invokes
from workbench.providers.protocols.jsonish import Args, args_from_text, compact_json
from workbench.providers.protocols.reading import Family, Found, Marker, Offer, Reading

__all__ = ["DSML", "FAMILY"]

NAME = "deepseek"
_B = r"[｜|]"
_S = r"[▁_]"
_SECTION_OPEN = re.compile(rf"<{_B}tool{_S}calls{_S}begin{_B}>")
_SECTION_CLOSE = re.compile(rf"<{_B}tool{_S}calls{_S}end{_B}>")
_SECTION_TOKENS = re.compile(rf"{_SECTION_OPEN.pattern}|{_SECTION_CLOSE.pattern}")
_BEGIN = re.compile(rf"<{_B}tool{_S}call{_S}begin{_B}>")
_SEP = re.compile(rf"<{_B}tool{_S}sep{_B}>")
_END = re.compile(rf"<{_B}tool{_S}call{_S}end{_B}>")
_FIRST_LINE = re.compile(r"\s*([^\s`]+)\s*\n?(.*)", re.S)


def read(text: str, offer: Offer) -> Reading:
    out = Reading()
    found: list[Found] = []
    total = 0
    begins = list(_BEGIN.finditer(text))
    for k, m in enumerate(begins):
        limit = begins[k + 1].start() if k + 1 < len(begins) else len(text)
        sep = _SEP.search(text, m.end(), limit)
        if sep is None:
            continue
        em = _END.search(text, sep.end(), limit)
        kind, body = (
            text[m.end() : sep.start()].strip(),
            text[sep.end() : em.start() if em else limit],
        )
        end = em.end() if em else limit
        if kind == "function" or (not kind and "\n" in body.strip()):
            fm = _FIRST_LINE.match(body)
            name, raw = (fm.group(1), fm.group(2)) if fm else ("", body)
        else:
            name, raw = kind, body
        total += 1
        if name not in offer.names:
            continue
        args: Args = args_from_text(raw, at_end=em is None and limit == len(text))
        found.append(Found(m.start(), end, name, args, NAME))
    if not found:
        return out
    if len(found) < total:
        out.calls += [Found(f.start, f.start, f.name, f.args, NAME) for f in found]
        return out
    # The section tokens around the calls are markup that goes with them.
    # The section tokens between and around the calls are markup that goes with them.
    for a, b in pairwise(found):
        between = text[a.end : b.start]
        if not _SECTION_TOKENS.sub("", between).strip():
            a.extra.append((a.end, b.start))
    head = text[max(0, found[0].start - 64) : found[0].start]
    if om := re.search(rf"{_SECTION_OPEN.pattern}\s*\Z", head):
        found[0].extra.append((found[0].start - len(head) + om.start(), found[0].start))
    if cm := re.compile(rf"\s*{_SECTION_CLOSE.pattern}").match(text, found[-1].end):
        found[-1].extra.append((found[-1].end, cm.end()))
    out.calls += found
    return out


def example(name: str, arguments: dict[str, Any]) -> str:
    return (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
        f"{name}\n```json\n{compact_json(arguments)}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )


FAMILY = Family(
    NAME,
    (
        Marker("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
        Marker("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"),
    ),
    read,
    example,
    needs_close=True,
)

DSML_NAME = "deepseek_dsml"
_DSML_SECTION = ("<｜DSML｜function_calls>", "</｜DSML｜function_calls>")


def read_dsml(text: str, offer: Offer) -> Reading:
    return read_invokes(
        text, offer, DSML_NAME, _DSML_SECTION, "｜DSML｜invoke", "｜DSML｜parameter"
    )


def example_dsml(name: str, arguments: dict[str, Any]) -> str:
    return invoke_example(
        _DSML_SECTION, "｜DSML｜invoke", "｜DSML｜parameter", name, arguments, typed=True
    )


DSML = Family(
    DSML_NAME,
    (Marker(*_DSML_SECTION), Marker("<｜DSML｜invoke", "</｜DSML｜invoke>")),
    read_dsml,
    example_dsml,
    needs_close=True,
)
