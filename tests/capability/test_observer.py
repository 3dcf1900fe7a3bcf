import pytest

from workbench.capability.classify import Classification
from workbench.capability.decide import ToolPlan, scope_key
from workbench.capability.observer import CapabilityObserver
from workbench.capability.store import MemoryCapabilityStore
from workbench.errors import ConfigError
from workbench.events import VerdictEvent

SECRET = "sk-live-abcdef0123456789-very-secret"
T0 = 1_767_225_600_000
DAY = 24 * 60 * 60 * 1000


class Clock:
    def __init__(self, t=T0):
        self.t = t

    def __call__(self):
        return self.t


def make(store=True, via="live"):
    events: list = []
    clock = Clock()
    obs = CapabilityObserver(
        MemoryCapabilityStore() if store else None, sinks=[events.append], via=via, clock_ms=clock
    )
    return obs, events, clock


def assert_no_secret(*things):
    for thing in things:
        assert SECRET not in repr(thing)
        assert "very-secret" not in repr(thing)


async def test_a_native_answer_is_emitted_and_stored_under_the_scope_hash():
    obs, events, _ = make()
    parsed = {"choices": [{"message": {"tool_calls": [{"id": "1"}]}}]}
    c = await obs.observe_tools("groq", "llama", SECRET, status=200, parsed=parsed)
    assert c == Classification("native", True, "returned tool_calls")
    assert events == [
        VerdictEvent(
            "groq",
            "llama",
            scope_key(SECRET),
            "tools",
            "native",
            True,
            "returned tool_calls",
            "live",
            T0,
        )
    ]
    [record] = await obs.store.all()
    assert record.scope == scope_key(SECRET)
    assert record.observed_at == "2026-01-01T00:00:00.000Z"
    assert record.via == "live" and record.evidence == "returned tool_calls"
    assert_no_secret(events, record, await obs.store.all())


async def test_tools_offered_only_in_prose_prove_nothing_about_native_calls():
    obs, events, _ = make()
    parsed = {"choices": [{"message": {"tool_calls": [{"id": "1"}]}}]}
    await obs.observe_tools("groq", "llama", SECRET, status=200, parsed=parsed)
    prose = await obs.observe_tools(
        "groq", "llama", SECRET, status=200, text_protocol_found=True, offered_natively=False
    )
    assert prose.verdict == "text" and not prose.record and events[-1].recorded is False
    assert await obs.verdict("groq", "llama", SECRET) == "native"  # not demoted
    await obs.observe_tools(
        "groq", "qwen", SECRET, status=200, text_protocol_found=True, offered_natively=False
    )
    assert await obs.verdict("groq", "qwen", SECRET) == "unobserved"  # never offered natively
    # Offered natively and answered in prose: that is evidence, and it is recorded.
    await obs.observe_tools("groq", "llama", SECRET, status=200, text_protocol_found=True)
    assert await obs.verdict("groq", "llama", SECRET) == "text"


async def test_an_unrecorded_classification_is_still_emitted_but_not_stored():
    obs, events, _ = make()
    c = await obs.observe_tools("p", "m", SECRET, status=429, body_text=f"rate limit for {SECRET}")
    assert not c.record
    assert len(events) == 1
    assert events[0].recorded is False and events[0].verdict == "unobserved"
    assert events[0].evidence == "429: not a statement about tool support"
    assert await obs.store.all() == []
    assert_no_secret(events)


async def test_the_secret_never_leaves_the_observer():
    obs, events, _ = make()
    await obs.observe_tools(
        "p", "m", SECRET, status=400, body_text=f"{SECRET} does not support tools"
    )
    await obs.observe_vision(
        "p", "m", SECRET, status=200, answer_text=f"red {SECRET}", expected="red"
    )
    await obs.observe_vision(
        "p", "m2", SECRET, status=400, body_text="image input is not supported"
    )
    stored = await obs.store.all()
    assert len(events) == 3 and len(stored) == 3
    assert_no_secret(events, stored, obs)


async def test_vision_observations_are_recorded_as_vision():
    obs, events, _ = make()
    c = await obs.observe_vision(
        "p", "m", SECRET, status=200, answer_text="A red dot", expected="red"
    )
    assert c.verdict == "native"
    assert events[0].capability == "vision"
    assert await obs.verdict("p", "m", SECRET, "vision") == "native"
    assert await obs.verdict("p", "m", SECRET, "tools") == "unobserved"


async def test_via_can_be_overridden_per_call_and_live_beats_probe():
    obs, events, clock = make()
    await obs.observe_tools("p", "m", SECRET, status=200, text_protocol_found=True)
    clock.t += 1
    await obs.observe_tools(
        "p", "m", SECRET, status=400, body_text="does not support tools", via="probe"
    )
    assert [e.via for e in events] == ["live", "probe"]
    assert await obs.verdict("p", "m", SECRET, "tools") == "text"  # the probe did not overrule live


async def test_verdict_expires_and_is_scoped_per_key():
    obs, _, clock = make()
    await obs.observe_tools("p", "m", SECRET, status=400, body_text="no tool support")
    assert await obs.verdict("p", "m", SECRET, "tools") == "none"
    assert await obs.verdict("p", "m", "another-key", "tools") == "unobserved"
    assert await obs.verdict("p", "m", None, "tools") == "unobserved"
    clock.t += 7 * DAY + 1
    assert await obs.verdict("p", "m", SECRET, "tools") == "unobserved"


async def test_plan_reads_the_stored_verdict():
    obs, _, _ = make()
    assert (await obs.plan("p", "m", SECRET)).is_learning
    assert (await obs.plan("p", "m", SECRET, declared="none")).send_tools is False
    await obs.observe_tools(
        "p", "m", SECRET, status=200, parsed={"choices": [{"finish_reason": "tool_calls"}]}
    )
    assert await obs.plan("p", "m", SECRET) == ToolPlan(
        True, False, False, "observed to return tool_calls"
    )


async def test_without_a_store_it_still_emits_and_answers_unobserved():
    obs, events, _ = make(store=False)
    await obs.observe_tools("p", "m", None, status=200, text_protocol_found=True)
    assert events[0].scope == "anonymous" and events[0].recorded is True
    assert await obs.verdict("p", "m", None, "tools") == "unobserved"


async def test_async_and_per_call_sinks_and_a_broken_sink_does_not_break_the_call():
    got: list = []

    async def async_sink(e):
        got.append(("async", e.verdict))

    def broken(e):
        raise RuntimeError("sink down")

    obs = CapabilityObserver(sinks=[broken, async_sink], clock_ms=Clock())
    c = await obs.observe_tools(
        "p", "m", SECRET, status=None, sinks=[lambda e: got.append(("call", e.verdict))]
    )
    assert c.evidence == "no response"
    assert got == [("async", "unobserved"), ("call", "unobserved")]


async def test_an_unknown_provenance_is_refused():
    with pytest.raises(ConfigError):
        CapabilityObserver(via="rumour")
    obs, events, _ = make()
    with pytest.raises(ConfigError):
        await obs.observe_tools("p", "m", SECRET, status=200, via="rumour")
    assert events == []


async def test_a_text_verdict_keeps_the_family_on_its_event_and_its_record():
    obs, events, _ = make()
    c = await obs.observe_tools(
        "p", "m", SECRET, status=200, text_protocol_found=True, protocol_family="mistral"
    )
    assert c.verdict == "text" and c.record
    assert events[-1].protocol_family == "mistral" and events[-1].recorded
    [record] = await obs.store.all()
    assert record.verdict == "text" and record.protocol_family == "mistral"
    fresh = await obs.record("p", "m", SECRET)
    assert fresh == record
    assert await obs.plan("p", "m", SECRET) == ToolPlan(
        False, True, False, "observed to answer tools only in prose", "mistral"
    )


async def test_a_family_only_travels_with_a_text_verdict():
    obs, events, _ = make()
    parsed = {"choices": [{"message": {"tool_calls": [{"id": "1"}]}}]}
    # Native calls beside prose ones: the verdict is native, and the prose format means nothing.
    await obs.observe_tools(
        "p",
        "m",
        SECRET,
        status=200,
        parsed=parsed,
        text_protocol_found=True,
        protocol_family="hermes",
    )
    await obs.observe_tools(
        "p", "m2", SECRET, status=400, body_text="does not support tools", protocol_family="hermes"
    )
    assert [e.protocol_family for e in events] == [None, None]
    assert [r.protocol_family for r in await obs.store.all()] == [None, None]


async def test_calls_in_prose_offered_only_in_prose_name_their_family_but_store_nothing():
    obs, events, _ = make()
    await obs.observe_tools(
        "p",
        "m",
        SECRET,
        status=200,
        text_protocol_found=True,
        protocol_family="hermes",
        offered_natively=False,
    )
    assert events[-1].verdict == "text" and events[-1].protocol_family == "hermes"
    assert not events[-1].recorded
    assert await obs.store.all() == []


async def test_an_expired_record_is_no_record():
    obs, _, clock = make()
    await obs.observe_tools(
        "p", "m", SECRET, status=200, text_protocol_found=True, protocol_family="mistral"
    )
    assert (await obs.record("p", "m", SECRET)).protocol_family == "mistral"
    clock.t += 30 * DAY + 1
    assert await obs.record("p", "m", SECRET) is None
    assert (await obs.plan("p", "m", SECRET)).protocol_family is None
    assert await make(store=False)[0].record("p", "m", SECRET) is None
