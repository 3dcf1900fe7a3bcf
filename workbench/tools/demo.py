"""The demo tool catalogue the workbench runs prompt sets against: deterministic read tools,
and write tools that only ever PROPOSE a pending action.

The tools' descriptions and JSON schemas come from the prompt set's catalogue
(`datasets/tools.json`); this module supplies what they do, by name. Read tools answer from
small fixed tables, so a graded run is reproducible; write tools (`send_email`,
`create_ticket`) are `confirm` tools: the model reads that nothing happens until a person
approves, whatever protocol the model used to ask.
"""

from __future__ import annotations

import ast
import hashlib
import operator
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from workbench.tools.native_tools import Tool
from workbench.tools.pending import PendingActions

_WEATHER = {
    "paris": (18, "light rain"), "london": (14, "overcast"), "berlin": (16, "sunny"),
    "madrid": (27, "sunny"), "rome": (24, "clear"), "tokyo": (21, "humid"),
    "new york": (19, "windy"), "oslo": (9, "snow showers"), "helsinki": (7, "cloudy"),
    "sydney": (23, "sunny"), "lisbon": (22, "breezy"), "amsterdam": (13, "drizzle"),
}  # fmt: skip
_OFFSETS = {
    "utc": 0,
    "europe/paris": 1,
    "europe/london": 0,
    "europe/berlin": 1,
    "asia/tokyo": 9,
    "america/new_york": -5,
    "america/los_angeles": -8,
    "australia/sydney": 11,
}
_RATES_TO_EUR = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "JPY": 0.0061, "CHF": 1.05, "CAD": 0.68}
_ORDERS = {
    "A-1042": {"status": "shipped", "carrier": "DHL", "eta": "2026-12-03", "items": 2},
    "A-1043": {"status": "processing", "eta": "2026-12-06", "items": 1},
    "B-2001": {"status": "delivered", "delivered_on": "2026-11-20", "items": 3},
    "B-2002": {"status": "cancelled", "refund": "issued", "items": 1},
}
DOCS = (
    {
        "id": "DOC-1",
        "title": "Resetting your password",
        "text": "Open Settings, choose Security, then Reset password. A link valid for 30 minutes is emailed.",
    },
    {
        "id": "DOC-2",
        "title": "Refund policy",
        "text": "Refunds are issued within 14 days of delivery to the original payment method.",
    },
    {
        "id": "DOC-3",
        "title": "Shipping times",
        "text": "Standard shipping takes 3 to 5 business days; express takes 1 to 2 business days.",
    },
    {
        "id": "DOC-4",
        "title": "API rate limits",
        "text": "The public API allows 60 requests per minute per key; a 429 carries Retry-After.",
    },
    {
        "id": "DOC-5",
        "title": "Exporting data",
        "text": "Exports are CSV or JSON, from Settings, Data, Export; large exports arrive by email.",
    },
)


def _fallback_number(text: str, low: int, high: int) -> int:
    digest = hashlib.sha256(text.lower().encode()).digest()
    return low + digest[0] % (high - low + 1)


async def get_weather(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    city = str(args.get("city", "")).strip()
    temp, sky = _WEATHER.get(city.lower(), (_fallback_number(city, 5, 30), "clear"))
    if args.get("unit") == "fahrenheit":
        return {
            "city": city,
            "temperature": round(temp * 9 / 5 + 32),
            "unit": "fahrenheit",
            "sky": sky,
        }
    return {"city": city, "temperature": temp, "unit": "celsius", "sky": sky}


async def get_time(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    zone = str(args.get("timezone", "UTC"))
    if zone.lower() not in _OFFSETS:
        return {"error": "unknown_timezone", "timezone": zone}
    hour = (12 + _OFFSETS[zone.lower()]) % 24  # the demo's clock is always 12:00 UTC
    return {"timezone": zone, "time": f"{hour:02d}:00"}


async def convert_currency(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    source, target = str(args.get("from", "")).upper(), str(args.get("to", "")).upper()
    if source not in _RATES_TO_EUR or target not in _RATES_TO_EUR:
        return {"error": "unknown_currency", "known": sorted(_RATES_TO_EUR)}
    amount = float(args.get("amount", 0))
    value = amount * _RATES_TO_EUR[source] / _RATES_TO_EUR[target]
    return {"amount": amount, "from": source, "to": target, "result": round(value, 2)}


async def search_docs(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    words = {w for w in str(args.get("query", "")).lower().split() if len(w) > 2}
    scored = [(sum(w in (d["title"] + " " + d["text"]).lower() for w in words), d) for d in DOCS]
    hits = [d for score, d in sorted(scored, key=lambda x: -x[0]) if score > 0][:3]
    return {"results": hits or [], "count": len(hits)}


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.FloorDiv: operator.floordiv,
}


def _evaluate(node: ast.AST) -> float:
    """Arithmetic only: numbers and + - * / // % ** — never a name, a call or an attribute."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        right = _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](_evaluate(node.left), right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError("not arithmetic")


async def calculator(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    expression = str(args.get("expression", ""))[:200]
    try:
        value = _evaluate(ast.parse(expression, mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        return {"error": "invalid_expression", "expression": expression}
    return {
        "expression": expression,
        "result": int(value) if float(value).is_integer() else round(value, 10),
    }


async def lookup_order(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    order_id = str(args.get("order_id", "")).strip().upper()
    found = _ORDERS.get(order_id)
    return (
        {"order_id": order_id, **found}
        if found
        else {"error": "order_not_found", "order_id": order_id}
    )


READ_TOOLS: dict[str, Callable[[dict[str, Any], Any], Awaitable[Any]]] = {
    "get_weather": get_weather,
    "get_time": get_time,
    "convert_currency": convert_currency,
    "search_docs": search_docs,
    "calculator": calculator,
    "lookup_order": lookup_order,
}
WRITE_TOOLS = ("send_email", "create_ticket")


async def _sent(payload: dict[str, Any]) -> dict[str, Any]:
    """What an approved demo write does: nothing leaves the machine; it says what it would do."""
    return {"done": True, "would_have": payload}


def demo_executors() -> dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]:
    """The tools PendingActions may execute once a person approves (and only these)."""
    return {name: _sent for name in WRITE_TOOLS}


def demo_tools(
    specs: Iterable[dict[str, Any]], pending: PendingActions, proposed_by: str = "agent"
) -> list[Tool]:
    """Tools for the given OpenAI specs: the demo's implementation of each name it knows.

    A write tool is a `confirm` tool: its run only PROPOSES a pending action (deduplicated on
    its arguments), and the model reads that it awaits a person."""
    tools: list[Tool] = []
    for spec in specs:
        fn = spec.get("function") or {}
        name = fn.get("name", "")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        if name in READ_TOOLS:
            tools.append(
                Tool(
                    name,
                    fn.get("description", ""),
                    params,
                    "read",
                    READ_TOOLS[name],
                    summary=_summary,
                )
            )
        elif name in WRITE_TOOLS:
            propose = _proposer(name, pending, proposed_by)
            tools.append(
                Tool(
                    name,
                    fn.get("description", ""),
                    params,
                    "confirm",
                    propose,
                    summary=_summary,
                    perform=_sent,
                )
            )
    return tools


def _summary(args: dict[str, Any]) -> str:
    """The step line's values (the UI writes the sentence): the arguments, as given."""
    return ", ".join(f"{k}={v}" for k, v in args.items())


def _proposer(
    name: str, pending: PendingActions, proposed_by: str
) -> Callable[..., Awaitable[Any]]:
    async def propose(args: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        from workbench.providers.protocols import compact_json

        # The same proposer asking the same thing again stacks nothing (its dedupe key).
        key = f"{proposed_by}|{compact_json(args)}"
        action = await pending.propose(name, dict(args), proposed_by, dedupe_key=key)
        return {"action_id": action.id, "status": action.status}

    return propose
