"""A router's options are one `RouterSettings`: given whole, by keyword, or both."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.errors import ConfigError
from workbench.providers import openai_compatible_provider
from workbench.routing import Router, RouterSettings, RouteSettings


def providers() -> list:
    return [openai_compatible_provider("a", "http://127.0.0.1:9/v1", "k", ["m"])]


def test_keywords_lay_over_the_settings_given():
    base = RouterSettings(cooldown_s=5.0, degrade_after=2, when_all_cooling="try")
    router = Router(providers(), settings=base, degrade_after=4)
    assert router.settings.cooldown_s == 5.0 and router.settings.when_all_cooling == "try"
    assert router.settings.degrade_after == 4  # the keyword wins
    assert base.degrade_after == 2  # and the settings given are left as they were


def test_keywords_alone_work_as_they_always_did():
    seen: list[object] = []
    router = Router(providers(), cooldown_s=7.0, sinks=[seen.append], attempt_timeout_s=None)
    assert router.settings.cooldown_s == 7.0 and router.settings.attempt_timeout_s is None
    assert router.sinks == router.settings.sinks == (seen.append,)
    # What was left out was chosen: a clock, and an observer that tells the router's sinks.
    assert router.settings.clock() > 0
    assert router.observer.sinks == (seen.append,)


def test_a_keyword_that_is_no_option_is_refused():
    with pytest.raises(TypeError):
        Router(providers(), cooldown=5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"when_all_cooling": "sleep"}, "when_all_cooling must be fail, try or wait, not 'sleep'"),
        ({"degrade_after": 0}, "degrade_after ≥ 1 and non-negative cooldowns, please"),
        ({"cooldown_s": float("nan")}, "degrade_after ≥ 1 and non-negative cooldowns, please"),
        ({"cooldown_jitter_s": -1.0}, "degrade_after ≥ 1 and non-negative cooldowns, please"),
    ],
)
def test_a_bad_option_is_refused_by_keyword_and_in_settings(options, message):
    for make in (lambda: Router(providers(), **options), lambda: RouterSettings(**options)):
        with pytest.raises(ConfigError) as info:
            make()
        assert (
            info.value.code == "ROUTER_INVALID" and str(info.value) == f"ROUTER_INVALID: {message}"
        )


def test_a_walk_reads_the_same_fields_the_user_sets():
    # One declaration: the walks' settings add only what the router chooses, never an option.
    options = {f.name for f in dataclasses.fields(RouterSettings)}
    assert {f.name for f in dataclasses.fields(RouteSettings)} == options
    router = Router(providers(), settings=RouterSettings(cache_ttl_s=60.0))
    assert isinstance(router.settings, RouterSettings)
    again = Router(providers(), settings=router.settings)  # a router's settings make another
    assert again.settings.cache_ttl_s == 60.0
