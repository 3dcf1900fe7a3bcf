"""Prompting-mode replies decoded as BFCL decodes them: the same calls, or the same failure,
as BFCL's own decoder on hand-written replies and on every real question's answer written out
in Python, Java and JavaScript; and the whole reply graded as BFCL grades it in each mode."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from workbench.eval.suites.bfcl import load_bfcl
from workbench.eval.suites.bfcl.case import Undecodable
from workbench.eval.suites.bfcl.decode import decode_prompt_reply
from workbench.eval.suites.bfcl.reply import grade_reply
from workbench.types import ToolCall

PYTHON_REPLIES = [
    "[calc(base=10, height=5)]",
    "calc(base=10, height=5)",  # BFCL adds the brackets
    "```\n[calc(base=10)]\n```",  # backticks and newlines are trimmed
    "```python\n[calc(base=10)]\n```",  # ...but not the word: BFCL cannot read this
    "[math.factorial(number=5), a.b.c(x='y')]",
    "[f(10, 5)]",  # positional arguments are dropped, not refused
    "[f(x=some_name, t=datetime.now(), n=g(a=1), s=xs[0], y=-3, z=+3, w=not True)]",
    "[f(p=(1, 2), q=[1, (2, 3)], d={'a': 1, 1: 'b'}, e=..., h=2 + 3 * 4, k='a' * 3)]",
    "[f(x=1 / 0)]",
    "[f(x=math.pi)]",
    "[f(x=lambda y: y)]",
    "[f(x={1, 2})]",
    "[f(x=f'{a}')]",
    "[f(x=1 if a else 2)]",
    "[f(**kw)]",
    "[f(x=1), 2]",
    "[]",
    "[{}]",
    "",
    "I cannot help with that.",
    '[{"name": "calc", "arguments": {"base": 10}}]',
    'TOOL: calc\nARGS: {"base": 10}',
    "'[calc(base=10)]'",
    "[calc(base=10)] and then some words",
    "[[calc(base=1)]]",
    "[f(x=-'a')]",
    "[f(x=1 << 3, y=5 | 2)]",
    "[f(x=+1 + 1, y=3 - +2, z=~2 + 0, w=[not 1] + [], v=[None] + [...], u=f'x' + 'y')]",
    "[f(x='Mont' + 'erey', y=[+-1, 1 + 1] + [], z={1} | {2})]",
    "[f(x=[a] + [1])]",
    "[f(x={[1]: 2})]",
    "[f(x=g(0x" + "f" * 5000 + "))]",
    "[calc(base=10)]\t",
    "\t[calc(base=10)]",
]
JAVA_REPLIES = [
    '[Db.open(name="café", x="y")]',  # BFCL slices text by byte offsets: its reading is kept
    '[Db.open(name="main", retries=3, big=5L, ratio=1.5f)]',
    '[Db.open(opts=new HashMap<String, String>() {{ put("a", "b"); }})]',
    '[Db.open(ids=new ArrayList<>(Arrays.asList("a", "b")), arr=new int[]{1, 2})]',
    "[Db.open(c='x', flag=true, o=obj.field, n=-1, s=a + b)]",
    '[Db.open(name="main"), Db.close(x=1)]',
    '[Db.open(name="main"',
    "[x = 1]",
    "[Db.open(name)]",
    "hello there",
    "[]",
]
JS_REPLIES = [
    '[go(on=true, xs=["a", "b"], o={k: 1}, s=\'q\')]',
    "[go(on=true), stop(x=1)]",
    "[go(fn=() => 1, n=-2, big=5n)]",
    "[go(on)]",
    "[go(on=true",
    "nothing to call",
    "[]",
]


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, Exception):
        return isinstance(ours, Undecodable)
    return ours == theirs


def _ours(text: str, language: str) -> Any:
    try:
        return decode_prompt_reply(text, language)  # type: ignore[arg-type]
    except Undecodable as exc:
        return exc


@pytest.mark.parametrize(
    ("language", "text"),
    [("python", t) for t in PYTHON_REPLIES]
    + [("java", t) for t in JAVA_REPLIES]
    + [("javascript", t) for t in JS_REPLIES],
)
def test_a_reply_decodes_as_bfcls_decoder_decodes_it(language, text, bfcl_decoder):
    theirs = bfcl_decoder(text, language)
    assert _same(_ours(text, language), theirs), (text, theirs)


def _python_source(value: Any) -> str:
    return repr(value)


def _java_source(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "new ArrayList<>(Arrays.asList(" + ", ".join(_java_source(v) for v in value) + "))"
    if isinstance(value, dict):
        puts = " ".join(f'put("{k}", {_java_source(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return repr(value)


def _js_source(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


RENDER = {"python": _python_source, "java": _java_source, "javascript": _js_source}


def _written(item: Any, k: int, rng: random.Random) -> str:
    case = item.expect.bfcl
    render = RENDER[case.language]
    calls = []
    for answer in case.ground_truth:
        name, params = next(iter(answer.items()))
        args = []
        for p, values in params.items():
            allowed = [v for v in values if v != ""]
            if allowed:
                args.append(f"{p}={render(allowed[k % len(allowed)])}")
        calls.append(f"{name}({', '.join(args)})")
    text = "[" + ", ".join(calls) + "]"
    return rng.choice([text, text[1:-1], f"```\n{text}\n```", text.replace(", ", ","), text + " "])


@pytest.mark.parametrize(
    "category",
    [
        "simple_python",
        "simple_java",
        "simple_javascript",
        "multiple",
        "parallel",
        "live_simple",
        "live_parallel_multiple",
    ],
)
def test_every_real_answer_written_out_decodes_and_grades_as_bfcl(
    category, bfcl_wheel, bfcl_decoder, bfcl_oracle
):
    rng = random.Random(category)
    disagreements, valid = [], 0
    for item in load_bfcl(category, source=bfcl_wheel):
        case = item.expect.bfcl
        for k in range(2):
            text = _written(item, k, rng)
            theirs = bfcl_decoder(text, case.language)
            if not _same(_ours(text, case.language), theirs):
                disagreements.append(("decode", case.id, text))
                continue
            if isinstance(theirs, Exception):
                expected: tuple[bool, str | None] = (False, "ast_decoder:decoder_failed")
            elif not isinstance(theirs, list):
                expected = (False, "ast_decoder:decoder_wrong_output_format")
            else:
                expected = bfcl_oracle(case, theirs)
            got = grade_reply(case, text, [], "text")
            valid += got.valid
            if (got.valid, got.error_type) != expected:
                disagreements.append(("grade", case.id, text, got.error_type, expected))
    assert not disagreements[:5], f"{len(disagreements)} disagree"
    assert valid > 0


def test_irrelevance_in_prompting_mode_is_right_when_bfcl_decodes_no_call(bfcl_wheel):
    case = load_bfcl("irrelevance", source=bfcl_wheel, limit=1)[0].expect.bfcl
    for text, right in [
        ("I cannot answer that with these tools.", True),
        ("[]", True),
        ("[{}]", True),
        ("[anything(x=1)]", False),
        ("anything(x=1)", False),
        ("```python\n[anything(x=1)]\n```", True),
    ]:
        assert grade_reply(case, text, [], "text").valid is right, text


def test_function_calling_mode_grades_native_calls_and_never_prose(bfcl_wheel):
    item = load_bfcl("simple_python", source=bfcl_wheel, limit=1)[0]
    case = item.expect.bfcl
    written = "[calculate_triangle_area(base=10, height=5)]"
    prose = ToolCall(
        "t0", "calculate_triangle_area", {"base": 10, "height": 5}, "{}", source="text"
    )
    native = ToolCall(
        "c0", "calculate_triangle_area", {"base": 10, "height": 5}, '{"base":10,"height":5}'
    )
    assert grade_reply(case, written, [prose], "native").error_type == "ast_decoder:decoder_failed"
    assert grade_reply(case, written, [prose], "text").valid
    assert grade_reply(case, "", [native], "native").valid
    assert grade_reply(case, "", [native], "plan").valid  # answered natively: function-calling
    listed = ToolCall(
        "c0", "calculate_triangle_area", {}, "[10, 5]", invalid=True, invalid_reason="not_object"
    )
    assert grade_reply(case, "", [listed], "native").error_type == (
        "ast_decoder:decoder_wrong_output_format"
    )


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (
            "[go(x=" + "[" * 20000 + "]" * 20000 + ")]",
            "javascript",
        ),  # sexp() would overflow C's stack
        ("[Db.open(x=" + "(" * 20000 + "1" + ")" * 20000 + ")]", "java"),
        ("[Db.open(x=" + "1+" * 50000 + "1)]", "java"),
        ("[f(x=(10**10000)**10000)]", "python"),  # minutes of arithmetic in BFCL
        ("[f(x='a' * 10**9)]", "python"),  # a gigabyte
        ("[f(x=[0] * 10**9)]", "python"),
        ("[f(x=1 << 10**9)]", "python"),
        ("[f(x=" + "[" * 5000 + "]" * 5000 + ")]", "python"),
        ("[f(x={(1, [2]): 3})]", "python"),
    ],
)
def test_a_degenerate_reply_is_read_at_once_never_a_crash(text, language):
    import time

    started = time.perf_counter()
    got = _ours(text, language)  # anything but Undecodable raised would fail here
    assert time.perf_counter() - started < 5  # a bound against hangs, not a measurement
    assert isinstance(got, Undecodable) or got[0]  # no call list, or the one call read
    if language == "python":
        assert isinstance(got, Undecodable)  # too large or unhashable: BFCL fails or stalls
