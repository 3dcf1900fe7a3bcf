import hashlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.capability.decide import (
    DEFAULT_TTL_MS,
    CapabilityRecord,
    ToolPlan,
    claimable_verdict,
    current_verdict,
    is_stale,
    iso_ms,
    make_record,
    parse_iso_ms,
    plan_tool_attempt,
    scope_key,
    should_replace,
)
from workbench.errors import ConfigError

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z
DAY = 24 * 60 * 60 * 1000


def rec(verdict="native", at=T0, via="live", **kw):
    fields = dict(provider="p", model="m", scope="s", capability="tools")
    fields.update(kw)
    return make_record(verdict=verdict, via=via, now_ms=at, **fields)


def test_default_ttls():
    assert DEFAULT_TTL_MS == {
        "native": 30 * DAY,
        "text": 30 * DAY,
        "none": 7 * DAY,
        "unobserved": 0,
    }
    with pytest.raises(TypeError):
        DEFAULT_TTL_MS["none"] = 1  # type: ignore[index]


def test_iso_ms_is_the_javascript_format():
    assert iso_ms(T0) == "2026-01-01T00:00:00.000Z"
    assert iso_ms(T0 + 1234) == "2026-01-01T00:00:01.234Z"
    assert iso_ms(0) == "1970-01-01T00:00:00.000Z"
    assert iso_ms(-1) == "1969-12-31T23:59:59.999Z"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e30, -1e30])
def test_iso_ms_never_raises_on_odd_numbers(bad):
    assert iso_ms(bad).endswith("Z")


def test_iso_and_parse_round_trip():
    assert parse_iso_ms(iso_ms(T0 + 7)) == T0 + 7
    assert math.isnan(parse_iso_ms("yesterday"))
    assert math.isnan(parse_iso_ms(None))


@pytest.mark.parametrize("verdict", ["native", "text", "none"])
def test_age_equal_to_the_limit_is_fresh_and_one_more_ms_is_stale(verdict):
    r = rec(verdict)
    limit = DEFAULT_TTL_MS[verdict]
    assert not is_stale(r, T0 + limit)
    assert current_verdict(r, T0 + limit) == verdict
    assert is_stale(r, T0 + limit + 1)
    assert current_verdict(r, T0 + limit + 1) == "unobserved"


def test_unobserved_is_always_stale():
    assert is_stale(rec("unobserved"), T0)
    assert is_stale(rec("unobserved"), T0, {"unobserved": None})


def test_none_expires_before_native():
    at = T0 + 8 * DAY
    assert current_verdict(rec("none"), at) == "unobserved"
    assert current_verdict(rec("native"), at) == "native"


@pytest.mark.parametrize("now", [math.nan, math.inf, "soon", None])
def test_a_non_finite_age_is_stale(now):
    r = rec("native", at=T0)
    if now is None:  # the real clock, with a date nobody can read: stale, not an error
        r = CapabilityRecord("p", "m", "s", "tools", "native", "not a date", "live")
    assert is_stale(r, now)


def test_a_custom_ttl_overrides_the_default_and_zero_or_nan_means_stale():
    r = rec("native")
    assert is_stale(r, T0 + 11, {"native": 10})
    assert not is_stale(r, T0 + 10, {"native": 10})
    assert is_stale(r, T0, {"native": 0})
    assert is_stale(r, T0, {"native": math.nan})
    assert not is_stale(r, T0 + 10_000 * DAY, {"native": math.inf})
    assert not is_stale(r, T0 + 29 * DAY, {"none": 1})  # other verdicts keep their default


def test_missing_record_is_unobserved():
    assert current_verdict(None, T0) == "unobserved"


@pytest.mark.parametrize(
    ("observed", "declared", "expected"),
    [
        ("native", None, ToolPlan(True, False, False, "observed to return tool_calls")),
        ("native", "none", ToolPlan(True, False, False, "observed to return tool_calls")),
        ("text", None, ToolPlan(False, True, False, "observed to answer tools only in prose")),
        (
            "none",
            "native",
            ToolPlan(False, False, False, "the vendor said this model does not support tools"),
        ),
        (
            "unobserved",
            None,
            ToolPlan(True, True, True, "never observed — this request is also the probe"),
        ),
        (
            "unobserved",
            "native",
            ToolPlan(True, True, True, "never observed — this request is also the probe"),
        ),
        (
            "unobserved",
            "none",
            ToolPlan(
                False, True, True, "never observed, and the registry says no — asking in prose only"
            ),
        ),
        (
            "garbage",
            None,
            ToolPlan(True, True, True, "never observed — this request is also the probe"),
        ),
    ],
)
def test_plan_for_each_verdict(observed, declared, expected):
    assert plan_tool_attempt(observed, declared) == expected


@pytest.mark.parametrize(
    ("v", "claim"),
    [
        ("native", "native"),
        ("text", "text"),
        ("none", "none"),
        ("unobserved", "none"),
        ("??", "none"),
    ],
)
def test_claimable_verdict_is_pessimistic(v, claim):
    assert claimable_verdict(v) == claim


def test_scope_key_known_vector_and_anonymous():
    assert scope_key("sk-test") == hashlib.sha256(b"sk-test").hexdigest()[:16]
    assert scope_key("sk-test") == "f3abf2a6cc4f0098"
    assert scope_key(None) == "anonymous"
    assert scope_key("") == "anonymous"
    assert scope_key("a") != scope_key("b")


def test_make_record_stamps_and_drops_empty_evidence():
    r = make_record("p", "m", "s", "vision", "none", "probe", "", T0)
    assert r == CapabilityRecord(
        "p", "m", "s", "vision", "none", "2026-01-01T00:00:00.000Z", "probe", None
    )
    assert make_record("p", "m", "s", "tools", "native", "live", "why", T0).evidence == "why"
    assert CapabilityRecord.from_dict(r.as_dict()) == r
    assert r.key == ("p", "m", "s", "vision")


def test_a_text_record_keeps_its_protocol_family_through_a_dict_round_trip():
    r = make_record("p", "m", "s", "tools", "text", "live", "prose", T0, "mistral")
    assert r.protocol_family == "mistral"
    assert r.as_dict()["protocol_family"] == "mistral"
    assert CapabilityRecord.from_dict(r.as_dict()) == r
    # A dict written before the field existed (a store row, a JSON dump) reads as no family.
    old = {k: v for k, v in r.as_dict().items() if k != "protocol_family"}
    assert CapabilityRecord.from_dict(old).protocol_family is None
    assert CapabilityRecord.from_dict({**old, "protocol_family": ""}).protocol_family is None


@pytest.mark.parametrize(
    ("capability", "verdict"), [("tools", "native"), ("tools", "none"), ("vision", "text")]
)
def test_only_a_text_tools_record_carries_a_protocol_family(capability, verdict):
    r = make_record("p", "m", "s", capability, verdict, "live", "ev", T0, "hermes")
    assert r.protocol_family is None


def test_protocol_family_does_not_change_which_record_wins():
    native = make_record("p", "m", "s", "tools", "native", "live", "calls", T0)
    text = make_record("p", "m", "s", "tools", "text", "probe", "prose", T0 + 5, "mistral")
    assert not should_replace(native, text)  # a weaker provenance loses, whatever its format
    newer = make_record("p", "m", "s", "tools", "text", "live", "prose", T0 + 1, "hermes")
    assert should_replace(text, newer) and not should_replace(newer, text)


def test_a_text_plan_carries_the_family_and_no_other_plan_does():
    plan = plan_tool_attempt("text", protocol_family="mistral")
    assert plan.protocol_family == "mistral" and plan.expect_text_protocol
    assert not plan.send_tools
    for observed in ("native", "none", "unobserved"):
        assert plan_tool_attempt(observed, protocol_family="mistral").protocol_family is None
    assert plan_tool_attempt("unobserved", "none", "mistral").protocol_family is None
    assert plan_tool_attempt("text", protocol_family="").protocol_family is None


@pytest.mark.parametrize(
    "bad", [dict(capability="audio"), dict(verdict="maybe"), dict(via="rumour")]
)
def test_make_record_refuses_unknown_names(bad):
    args = dict(
        provider="p", model="m", scope="s", capability="tools", verdict="native", via="live"
    )
    args.update(bad)
    with pytest.raises(ConfigError) as err:
        make_record(**args)
    assert err.value.code == "CAPABILITY_INVALID"


def test_should_replace_ranks_then_time():
    assert should_replace(None, rec(via="declared"))
    # stronger provenance wins even when older
    assert should_replace(rec(via="declared", at=T0), rec(via="probe", at=T0 - DAY))
    assert should_replace(rec(via="probe", at=T0), rec(via="live", at=T0 - DAY))
    # weaker loses even when newer
    assert not should_replace(rec(via="live", at=T0), rec(via="probe", at=T0 + DAY))
    assert not should_replace(rec(via="live", at=T0), rec(via="declared", at=T0 + DAY))
    # equal rank: newer wins, a tie replaces, older loses; a none may replace a native
    assert should_replace(rec("native", at=T0), rec("none", at=T0 + 1))
    assert should_replace(rec("native", at=T0), rec("none", at=T0))
    assert not should_replace(rec("native", at=T0), rec("none", at=T0 - 1))


def test_should_replace_with_unreadable_dates():
    good = rec(at=T0)
    broken = CapabilityRecord("p", "m", "s", "tools", "native", "garbage", "live")
    assert not should_replace(good, broken)
    assert should_replace(broken, good)


VIAS = ["declared", "probe", "live"]


@given(
    st.sampled_from(VIAS),
    st.sampled_from(VIAS),
    st.integers(-(10**12), 10**13),
    st.integers(-(10**12), 10**13),
)
def test_should_replace_is_antisymmetric_on_different_ranks(va, vb, ta, tb):
    a, b = rec(via=va, at=ta), rec(via=vb, at=tb)
    if va != vb:
        assert should_replace(a, b) != should_replace(b, a)
        assert should_replace(a, b) == (VIAS.index(vb) > VIAS.index(va))
    else:
        # equal rank: at least one direction replaces; both exactly when the times tie
        assert should_replace(a, b) or should_replace(b, a)
        assert (should_replace(a, b) and should_replace(b, a)) == (ta == tb)


@given(
    st.one_of(st.floats(), st.integers(), st.none(), st.text()),
    st.sampled_from(["native", "text", "none", "unobserved"]),
)
def test_current_verdict_never_raises(now, verdict):
    assert current_verdict(rec(verdict), now) in ("native", "text", "none", "unobserved")
