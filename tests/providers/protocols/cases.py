"""Hand-written replies, one or more per family, written from each format's documentation
with tools and arguments of our own (the corpus is not the whole world). Each case: the
family, the reply, the calls it means, and the text left once they are read. The prose, when
there is any, comes first, so that a reply cut anywhere inside its calls should leave exactly
that prose."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NAMES = ["book_flight", "lookup_stock", "ping"]
SCHEMAS: dict[str, dict[str, Any]] = {
    "book_flight": {
        "type": "object",
        "properties": {
            "origin": {"type": "string"},
            "passengers": {"type": "integer"},
            "refundable": {"type": "boolean"},
            "via": {"type": "array"},
        },
    },
    "lookup_stock": {"type": "object", "properties": {"ticker": {"type": "string"}}},
    "ping": {"type": "object", "properties": {}},
}
FLIGHT = {"origin": "LHR", "passengers": 2}
STOCK = {"ticker": "ACME"}


@dataclass(frozen=True)
class Case:
    family: str
    text: str
    calls: list[tuple[str, dict[str, Any]]]
    rest: str = ""
    prose: str = field(default="")  # the text before the first call

    @property
    def id(self) -> str:
        return f"{self.family}:{self.text[:40]!r}"


def _c(family: str, text: str, calls: list[tuple[str, dict[str, Any]]], rest: str = "") -> Case:
    return Case(family, text, calls, rest, rest)


CASES = [
    _c(
        "tool_lines",
        'Checking.\nTOOL: book_flight\nARGS: {"origin": "LHR", "passengers": 2}',
        [("book_flight", FLIGHT)],
        "Checking.",
    ),
    _c(
        "hermes",
        'On it.\n<tool_call>\n{"name": "book_flight", "arguments": {"origin": "LHR", "passengers": 2}}\n</tool_call>',
        [("book_flight", FLIGHT)],
        "On it.",
    ),
    _c(
        "hermes",
        '<tool_call>{"name": "lookup_stock", "arguments": "{\\"ticker\\": \\"ACME\\"}"}</tool_call><tool_call>{"name": "ping", "arguments": {}}</tool_call>',
        [("lookup_stock", STOCK), ("ping", {})],
    ),
    _c(
        "qwen3_xml",
        "Booking.\n<tool_call>\n<function=book_flight>\n<parameter=origin>\nLHR\n</parameter>\n<parameter=passengers>\n2\n</parameter>\n<parameter=refundable>\nTrue\n</parameter>\n</function>\n</tool_call>",
        [("book_flight", {**FLIGHT, "refundable": True})],
        "Booking.",
    ),
    _c(
        "seed_oss",
        "<seed:tool_call>\n<function=lookup_stock>\n<parameter=ticker>ACME</parameter>\n</function>\n</seed:tool_call>",
        [("lookup_stock", STOCK)],
    ),
    _c(
        "glm",
        "Let me book it.\n<tool_call>book_flight\n<arg_key>origin</arg_key>\n<arg_value>LHR</arg_value>\n<arg_key>passengers</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
        [("book_flight", FLIGHT)],
        "Let me book it.",
    ),
    _c(
        "glm",
        "<tool_call>ping</tool_call><tool_call>lookup_stock<arg_key>ticker</arg_key><arg_value>ACME</arg_value></tool_call>",
        [("ping", {}), ("lookup_stock", STOCK)],
    ),
    _c(
        "hunyuan",
        "<tool_calls><tool_call>lookup_stock<tool_sep><arg_key>ticker</arg_key><arg_value>ACME</arg_value></tool_call></tool_calls>",
        [("lookup_stock", STOCK)],
    ),
    _c(
        "mistral",
        '[TOOL_CALLS][{"name": "book_flight", "arguments": {"origin": "LHR", "passengers": 2}}, {"name": "ping", "arguments": {}}]',
        [("book_flight", FLIGHT), ("ping", {})],
    ),
    _c(
        "mistral",
        'Sure.[TOOL_CALLS]lookup_stock[ARGS]{"ticker": "ACME"}[TOOL_CALLS]ping[ARGS]{}',
        [("lookup_stock", STOCK), ("ping", {})],
        "Sure.",
    ),
    _c(
        "mistral",
        '[TOOL_CALLS]book_flight{"origin": "LHR", "passengers": 2}',
        [("book_flight", FLIGHT)],
    ),
    _c(
        "llama3_json",
        '{"name": "book_flight", "parameters": {"origin": "LHR", "passengers": 2}}; {"name": "ping", "parameters": {}}',
        [("book_flight", FLIGHT), ("ping", {})],
    ),
    _c(
        "llama3_json",
        'Looking it up. <|python_tag|>{"name": "lookup_stock", "parameters": {"ticker": "ACME"}}',
        [("lookup_stock", STOCK)],
        "Looking it up.",
    ),
    _c(
        "xlam",
        '[{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}, {"name": "ping", "arguments": {}}]',
        [("lookup_stock", STOCK), ("ping", {})],
    ),
    _c(
        "xlam",
        'I will check the price.\n```json\n[{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}]\n```',
        [("lookup_stock", STOCK)],
        "I will check the price.",
    ),
    _c(
        "pythonic",
        '[book_flight(origin="LHR", passengers=2), ping()]',
        [("book_flight", FLIGHT), ("ping", {})],
    ),
    _c(
        "pythonic",
        "Here you go: [lookup_stock(ticker='ACME')]",
        [("lookup_stock", STOCK)],
        "Here you go:",
    ),
    _c(
        "llama4_pythonic",
        '<|python_start|>[book_flight(origin="LHR", passengers=2)]<|python_end|>',
        [("book_flight", FLIGHT)],
    ),
    _c(
        "lfm2",
        "Checking the price.<|tool_call_start|>[lookup_stock(ticker='ACME')]<|tool_call_end|>",
        [("lookup_stock", STOCK)],
        "Checking the price.",
    ),
    _c(
        "olmo",
        "<function_calls>book_flight(origin='LHR', passengers=2)\nping()</function_calls>",
        [("book_flight", FLIGHT), ("ping", {})],
    ),
    _c(
        "gemma_tool_code",
        "```tool_code\nprint(lookup_stock(ticker='ACME'))\n```",
        [("lookup_stock", STOCK)],
    ),
    _c(
        "granite",
        '<|tool_call|>[{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}]',
        [("lookup_stock", STOCK)],
    ),
    _c(
        "granite_20b",
        'Booking.\n<function_call> {"name": "book_flight", "arguments": {"origin": "LHR", "passengers": 2}}\n<function_call> {"name": "ping", "arguments": {}}',
        [("book_flight", FLIGHT), ("ping", {})],
        "Booking.",
    ),
    _c(
        "internlm",
        'Sure.<|action_start|><|plugin|>{"name": "lookup_stock", "parameters": {"ticker": "ACME"}}<|action_end|>',
        [("lookup_stock", STOCK)],
        "Sure.",
    ),
    _c(
        "phi4_mini",
        'functools[{"name": "book_flight", "arguments": {"origin": "LHR", "passengers": 2}}]',
        [("book_flight", FLIGHT)],
    ),
    _c(
        "jamba",
        'On it.<tool_calls>[{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}]</tool_calls>',
        [("lookup_stock", STOCK)],
        "On it.",
    ),
    _c(
        "minimax",
        '<tool_calls>\n{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}\n{"name": "ping", "arguments": {}}\n</tool_calls>',
        [("lookup_stock", STOCK), ("ping", {})],
    ),
    _c(
        "minimax_m2",
        'Let me see.<minimax:tool_call><invoke name="book_flight"><parameter name="origin">LHR</parameter><parameter name="passengers">2</parameter></invoke></minimax:tool_call>',
        [("book_flight", FLIGHT)],
        "Let me see.",
    ),
    _c(
        "longcat",
        '<longcat_tool_call>{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}</longcat_tool_call>',
        [("lookup_stock", STOCK)],
    ),
    _c(
        "deepseek",
        'Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>lookup_stock\n```json\n{"ticker": "ACME"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        [("lookup_stock", STOCK)],
        "Checking.",
    ),
    _c(
        "deepseek",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>book_flight<｜tool▁sep｜>{"origin": "LHR", "passengers": 2}<｜tool▁call▁end｜><｜tool▁call▁begin｜>ping<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        [("book_flight", FLIGHT), ("ping", {})],
    ),
    _c(
        "deepseek_dsml",
        '<｜DSML｜function_calls><｜DSML｜invoke name="book_flight"><｜DSML｜parameter name="origin" string="true">LHR</｜DSML｜parameter><｜DSML｜parameter name="passengers" string="false">2</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>',
        [("book_flight", FLIGHT)],
    ),
    _c(
        "kimi",
        'Checking. <|tool_calls_section_begin|><|tool_call_begin|>functions.lookup_stock:0<|tool_call_argument_begin|>{"ticker": "ACME"}<|tool_call_end|><|tool_call_begin|>functions.ping:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>',
        [("lookup_stock", STOCK), ("ping", {})],
        "Checking.",
    ),
    _c(
        "step3",
        '<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="lookup_stock"><steptml:parameter name="ticker">ACME</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>',
        [("lookup_stock", STOCK)],
    ),
    _c(
        "harmony",
        '<|start|>assistant<|channel|>commentary to=functions.lookup_stock <|constrain|>json<|message|>{"ticker": "ACME"}<|call|>',
        [("lookup_stock", STOCK)],
    ),
    _c(
        "gigachat",
        '<|function_call|>{"name": "lookup_stock", "arguments": {"ticker": "ACME"}}',
        [("lookup_stock", STOCK)],
    ),
    _c(
        "apertus",
        'Let me check.<|tools_prefix|>[{"lookup_stock": {"ticker": "ACME"}}, {"ping": {}}]<|tools_suffix|>',
        [("lookup_stock", STOCK), ("ping", {})],
        "Let me check.",
    ),
    _c(
        "function_gemma",
        "<start_function_call>call:book_flight{origin:<escape>LHR<escape>,passengers:2}<end_function_call>",
        [("book_flight", FLIGHT)],
    ),
    _c(
        "gemma4",
        '<|tool_call>call:book_flight{origin:<|"|>LHR<|"|>,passengers:2,via:[<|"|>CDG<|"|>]}<tool_call|>',
        [("book_flight", {**FLIGHT, "via": ["CDG"]})],
    ),
    _c(
        "cohere",
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "lookup_stock", "parameters": {"ticker": "ACME"}}]<|END_ACTION|>',
        [("lookup_stock", STOCK)],
    ),
]
