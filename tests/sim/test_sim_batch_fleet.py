"""The fleet's `[batch]` table: defaults, and every mistake refused with FLEET_INVALID."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.sim.fleet import BatchSettings, FailureRule, load_fleet

PERSONA = '\n[[persona]]\nid = "p"\n'


def test_a_fleet_without_a_batch_table_gets_the_defaults() -> None:
    assert load_fleet(PERSONA).batch == BatchSettings()
    assert BatchSettings().delay_s == 1.0 and BatchSettings().expire_after_s == 0


def test_the_batch_table_is_read() -> None:
    fleet = load_fleet(
        '[batch]\ndelay_s = 0.25\nexpire_after_s = 2\n[batch.failures]\np = [{kind = "503", '
        'at = [1, 3]}, {kind = "empty", rate = 0.5}]\n' + PERSONA
    )
    assert fleet.batch.delay_s == 0.25 and fleet.batch.expire_after_s == 2.0
    assert fleet.batch.failures["p"] == (
        FailureRule("503", at=(1, 3)),
        FailureRule("empty", rate=0.5),
    )


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ("[batch]\ndelay = 1\n", "unknown key(s) delay"),
        ("[batch]\ndelay_s = -1\n", "'delay_s' must be a number of seconds >= 0"),
        ("[batch]\ndelay_s = true\n", "'delay_s'"),
        ("[batch]\nexpire_after_s = '1'\n", "'expire_after_s'"),
        ("batch = 3\n", "[batch] must be a table"),
        ("[batch]\nfailures = 1\n", "'failures' must be a table"),
        ('[batch.failures]\nq = [{kind = "500", at = [1]}]\n', "no persona 'q'"),
        ('[batch.failures]\np = {kind = "500"}\n', "must be an array"),
        ('[batch.failures]\np = [{kind = "hang", at = [1]}]\n', "cannot fail with 'hang'"),
        ('[batch.failures]\np = [{kind = "500"}]\n', "exactly one of 'at'"),
    ],
)
def test_a_bad_batch_table_is_refused(table: str, words: str) -> None:
    with pytest.raises(ConfigError) as bad:
        load_fleet(table + PERSONA)
    assert bad.value.code == "FLEET_INVALID" and words in str(bad.value)
