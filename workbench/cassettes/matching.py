"""Which recorded exchange answers a request, and, when none does, the nearest one and what
differs.

A match compares the provider's id, the method, the path and query (without the host, whose
port changes every run for the embedded simulator and the local model, and without a
key-bearing query parameter) and the JSON body as it left the machine, key order aside and
tool-call ids normalised (`canonical_ids`). Nothing else: no header, no timing. A REPLAY_MISS names the nearest recorded request by the
same comparison, with the JSON paths where the bodies differ (`messages[1].content`), so a
changed prompt or a new option reads at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_plus

import httpx

from workbench.cassettes.format import MATCHES, Exchange, dumps

#: Query parameters that carry a credential: never recorded, never compared.
KEY_PARAMS = frozenset({"key", "api_key", "api-key", "apikey", "access_token", "token"})
_SHOWN_PATHS = 6


def request_key(provider: str, method: str, path: str, body: Any) -> str:
    """One string per distinct request: two asks with the same key get recorded answers in
    the order they were recorded. Tool-call ids are compared normalised (`canonical_ids`)."""
    return dumps([provider, method.upper(), path, canonical_ids(body)])


#: Where a request carries a tool call's id: OpenAI's `tool_calls[].id` and `tool_call_id`,
#: Gemini's `functionCall.id` and `functionResponse.id`.
_ID_HOLDERS = frozenset({"functionCall", "functionResponse"})


def canonical_ids(body: Any) -> Any:
    """`body` with every tool-call id replaced by `id0`, `id1`, … in order of first
    appearance. An id is made up per run where the vendor gave none (Gemini's streamed
    calls): compared as written, a tool loop that sends one back would never match. The
    file keeps the real body; only the match compares this one."""
    seen: dict[str, str] = {}

    def named(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return seen.setdefault(value, f"id{len(seen)}")

    def walk(value: Any, holder: str | None = None) -> Any:
        if isinstance(value, list):
            return [walk(v, holder) for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "tool_call_id" or (key == "id" and holder is not None):
                out[key] = named(item)
            elif key == "tool_calls":
                out[key] = walk(item, "tool_calls")
            elif key in _ID_HOLDERS:
                out[key] = walk(item, key)
            else:
                out[key] = walk(item, None)
        return out

    return walk(body)


def exchange_key(exchange: Exchange) -> str:
    return request_key(exchange.provider, exchange.method, exchange.path, exchange.body)


def recorded_path(url: httpx.URL) -> str:
    """The path and query a cassette keeps: no scheme, host or port, no key parameter."""
    query = url.query.decode("ascii", errors="replace")
    kept = [
        part
        for part in query.split("&")
        if part and unquote_plus(part.partition("=")[0]).lower() not in KEY_PARAMS
    ]
    return url.path + ("?" + "&".join(kept) if kept else "")


def request_body(content: bytes) -> Any:
    """The body a cassette keeps and compares: its JSON, else its text (None when empty)."""
    if not content:
        return None
    text = content.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def differences(recorded: Any, asked: Any, where: str = "") -> list[str]:
    """The JSON paths where `asked` differs from `recorded` (`messages[1].content`, `tools`,
    `temperature`); the whole value (`""` → "body") when their types differ."""
    if isinstance(recorded, dict) and isinstance(asked, dict):
        out: list[str] = []
        for key in sorted(set(recorded) | set(asked)):
            path = f"{where}.{key}" if where else str(key)
            if key not in recorded or key not in asked:
                out.append(path)
            else:
                out.extend(differences(recorded[key], asked[key], path))
        return out
    if isinstance(recorded, list) and isinstance(asked, list):
        out = []
        for i in range(max(len(recorded), len(asked))):
            path = f"{where}[{i}]"
            if i >= len(recorded) or i >= len(asked):
                out.append(path)
            else:
                out.extend(differences(recorded[i], asked[i], path))
        return out
    return [] if recorded == asked else [where or "body"]


def nearest(
    recorded: Iterable[Exchange], provider: str, method: str, path: str, body: Any
) -> tuple[Exchange, list[str]] | None:
    """The recorded exchange closest to the request, and what differs: fields compared in
    `MATCHES` order (another provider is farther than another path), then the number of
    differing body paths."""
    best: tuple[tuple[int, ...], Exchange, list[str]] | None = None
    for exchange in recorded:
        fields = [
            name
            for name, same in (
                ("provider", exchange.provider == provider),
                ("method", exchange.method == method.upper()),
                ("path", exchange.path == path),
            )
            if not same
        ]
        paths = differences(canonical_ids(exchange.body), canonical_ids(body))
        rank = (
            *(int(name in fields) for name in ("provider", "method", "path")),
            len(paths),
            exchange.line,
        )
        if best is None or rank < best[0]:
            best = (rank, exchange, fields + [f"body.{p}" if p != "body" else p for p in paths])
    return None if best is None else (best[1], best[2])


def describe_miss(
    file: str, recorded: list[Exchange], provider: str, method: str, path: str, body: Any
) -> str:
    """The REPLAY_MISS line: what was asked, the nearest recorded request and what differs,
    and which fields a match compares."""
    asked = f"{provider} {method.upper()} {path}"
    found = nearest(recorded, provider, method, path, body)
    if found is None:
        near = "it holds no exchange"
    else:
        exchange, diff = found
        shown = ", ".join(diff[:_SHOWN_PATHS]) + (
            f" (+{len(diff) - _SHOWN_PATHS} more)" if len(diff) > _SHOWN_PATHS else ""
        )
        what = f"differs at {shown}"  # an over-asked request replays its last answer
        near = (
            f"nearest: line {exchange.line} ({exchange.provider} {exchange.method} "
            f"{exchange.path}), {what}"
        )
    return (
        f"no recorded exchange in {file} answers {asked}; {near}; a match compares "
        f"{', '.join(MATCHES)} (the path without host or key, tool-call ids normalised) — "
        "record it with "
        "--record-missing, or the whole run again with --record"
    )


__all__ = [
    "KEY_PARAMS",
    "describe_miss",
    "differences",
    "exchange_key",
    "nearest",
    "recorded_path",
    "request_body",
    "request_key",
]
