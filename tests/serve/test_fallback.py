"""The deterministic fallback: honest, carried, declined rather than invented."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import ConfigError, ProviderError, RoutingError
from workbench.providers import openai_compatible_provider
from workbench.routing import Router
from workbench.serve import DeterministicFallback, FallbackResult
from workbench.sim import SimServer


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def classify(input: dict) -> str | None:
    if "moyenne" in input["question"]:
        return "average"
    if "combien" in input["question"]:
        return "count"
    if "rien" in input["question"]:
        return "nothing"
    return None


def fallback() -> DeterministicFallback:
    async def average(input: dict) -> str:
        return f"La moyenne est de {mean(input['grades']):g}/20."

    return DeterministicFallback(
        responders={
            "average": average,  # async
            "count": lambda input: f"{len(input['grades'])} notes.",  # sync
            "nothing": lambda input: None,  # knows it has nothing to say
        },
        classify=classify,
    )


INPUT = {"question": "Quelle est ma moyenne ?", "grades": [12, 14, 16]}
OUTAGE = RoutingError("no model could answer: 2 candidate(s), 2 error", code="AI_UNAVAILABLE")


def failing(error: BaseException):
    calls = []

    async def fn(input):
        calls.append(input)
        raise error

    fn.calls = calls
    return fn


async def test_a_provider_answer_is_not_degraded():
    async def fn(input):
        return "Ta moyenne est 14."

    result = await fallback().with_fallback(fn, INPUT)
    assert result == FallbackResult(
        degraded=False, answer="Ta moyenne est 14.", provider_error=None
    )
    assert result.declined is False


async def test_a_routing_failure_is_answered_by_the_responder_and_says_so():
    fn = failing(OUTAGE)
    result = await fallback().with_fallback(fn, INPUT)
    assert fn.calls == [INPUT]
    assert result.degraded is True
    assert result.answer == "La moyenne est de 14/20."
    assert result.provider_error is OUTAGE  # carried, not swallowed
    assert result.declined is False


async def test_a_sync_responder_works_too_and_provider_errors_count():
    error = ProviderError("HTTP 503", kind="outage", status_code=503, provider="p", model="m")
    result = await fallback().with_fallback(
        failing(error), {"question": "combien de notes ?", "grades": [1, 2]}
    )
    assert (result.degraded, result.answer, result.provider_error) == (True, "2 notes.", error)


@pytest.mark.parametrize(
    "question",
    ["Raconte-moi une histoire", "rien à dire"],  # no category; a responder that returns None
)
async def test_no_deterministic_answer_is_declined_never_invented(question):
    result = await fallback().with_fallback(failing(OUTAGE), {"question": question, "grades": []})
    assert result.declined is True
    assert result.degraded is True
    assert result.answer is None
    assert result.provider_error is OUTAGE


async def test_a_category_without_a_responder_is_declined():
    fb = DeterministicFallback(responders={}, classify=lambda input: "average")
    result = await fb.with_fallback(failing(OUTAGE), INPUT)
    assert (result.declined, result.answer, result.provider_error) == (True, None, OUTAGE)


async def test_a_blank_fallback_answer_is_declined():
    fb = DeterministicFallback(responders={"a": lambda i: "   "}, classify=lambda i: "a")
    result = await fb.with_fallback(failing(OUTAGE), INPUT)
    assert result.declined and result.answer is None


async def test_classify_is_not_asked_when_the_provider_answers():
    asked = []

    def spy(input):
        asked.append(input)
        return "average"

    async def fn(input):
        return "ok"

    await DeterministicFallback({"average": lambda i: "x"}, spy).with_fallback(fn, INPUT)
    assert asked == []


async def test_any_workbench_error_falls_back():
    result = await fallback().with_fallback(failing(ConfigError("bad")), INPUT)
    assert result.degraded and result.answer == "La moyenne est de 14/20."


@pytest.mark.parametrize("error", [TypeError("bug"), KeyError("k"), ValueError("v")])
async def test_programming_errors_are_not_hidden_behind_a_fallback(error):
    with pytest.raises(type(error)):
        await fallback().with_fallback(failing(error), INPUT)


async def test_cancellation_passes_through():
    with pytest.raises(asyncio.CancelledError):
        await fallback().with_fallback(failing(asyncio.CancelledError()), INPUT)


async def test_a_responder_returning_something_else_than_text_is_a_bug():
    fb = DeterministicFallback(responders={"a": lambda i: {"text": "x"}}, classify=lambda i: "a")
    with pytest.raises(TypeError):
        await fb.with_fallback(failing(OUTAGE), INPUT)


@given(
    grades=st.lists(st.integers(0, 20), min_size=1, max_size=10),
    fails=st.booleans(),
    question=st.sampled_from(["ma moyenne ?", "combien ?", "rien", "autre chose"]),
)
async def test_honesty_holds_for_any_input(grades, fails, question):
    async def fn(input):
        if fails:
            raise OUTAGE
        return "model answer"

    result = await fallback().with_fallback(fn, {"question": question, "grades": grades})
    if not fails:
        assert (result.degraded, result.answer, result.provider_error) == (
            False,
            "model answer",
            None,
        )
    else:
        assert result.degraded is True and result.provider_error is OUTAGE
        assert result.declined == (result.answer is None)
        assert result.answer != "model answer"


async def test_over_a_real_router_that_fails():
    fleet = {
        "seed": 3,
        "persona": [{"id": "down", "latency_ms": 0, "failures": [{"kind": "500", "rate": 1.0}]}],
    }
    async with SimServer(fleet) as sim:
        router = Router([openai_compatible_provider("sim", sim.openai_url, "k", ["down"])])
        try:
            result = await fallback().with_fallback(lambda i: router.ask(i["question"]), INPUT)
        finally:
            await router.close()
    assert result.degraded and result.answer == "La moyenne est de 14/20."
    assert isinstance(result.provider_error, RoutingError)
    assert result.provider_error.errors[0].status_code == 500


async def test_a_cancelled_turn_is_not_answered_by_the_fallback():
    from workbench.errors import RoutingError
    from workbench.serve import DeterministicFallback

    async def cancelled(_):
        raise RoutingError("the reader left", code="AI_CANCELLED", status=499)

    fallback = DeterministicFallback({"hours": lambda q: "9 to 5"}, classify=lambda q: "hours")
    with pytest.raises(RoutingError) as info:
        await fallback.with_fallback(cancelled, "opening hours?")
    assert info.value.code == "AI_CANCELLED"
