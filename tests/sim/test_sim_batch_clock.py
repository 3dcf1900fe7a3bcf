"""A batch's clock, read at chosen moments (an injected clock, no sleeping): every state it
passes through, which lines have run, and what a cancel or an expiry keeps."""

from __future__ import annotations

import pytest

from workbench.sim.batch_jobs import BatchBook, LineRequest
from workbench.sim.fleet import load_fleet

FLEET = """
seed = 1
[batch]
delay_s = 10
expire_after_s = {expire}
[batch.failures]
p = [{{ kind = "503", at = [2] }}]
[[persona]]
id = "p"
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def book(expire: float = 0) -> tuple[BatchBook, Clock]:
    clock = Clock()
    return BatchBook(load_fleet(FLEET.format(expire=expire)), clock=clock), clock


def lines(n: int, vendor: str = "openai") -> list[LineRequest]:
    body: dict[str, object] = (
        {"contents": [{"parts": [{"text": "Reply with exactly: k"}]}]}
        if vendor == "gemini"
        else {"model": "p", "messages": [{"role": "user", "content": "Reply with exactly: k"}]}
    )
    return [LineRequest(f"k{i}", "p", body) for i in range(n)]


def test_a_batch_runs_validating_in_progress_finalizing_completed() -> None:
    b, _ = book()
    job = b.submit("j", "openai", "p", lines(4), [], {})
    seen = [job.state(1000 + t) for t in (0, 0.99, 1, 2.9, 3, 8.99, 9, 9.99, 10, 99)]
    assert seen == ["validating"] * 2 + ["in_progress"] * 4 + ["finalizing"] * 2 + ["completed"] * 2
    # Line i of 4 is done at 1 + 8·(i+1)/4 seconds: 3, 5, 7, 9.
    assert [len(job.done(1000 + t)) for t in (2.9, 3, 5, 7, 9)] == [0, 1, 2, 3, 4]
    assert job.counts(1004) == {"total": 4, "completed": 1, "failed": 0}
    assert job.counts(1010) == {"total": 4, "completed": 3, "failed": 1}  # line 2 is a 503
    assert [o.status for o in job.outcomes] == [200, 503, 200, 200]
    assert job.ended_at(1009) is None and job.ended_at(1010) == 1010


def test_an_invalid_batch_fails_once_validated_and_runs_nothing() -> None:
    b, _ = book()
    job = b.submit("j", "openai", "p", lines(2), [{"code": "x", "line": 1}], {})
    assert job.outcomes == ()
    assert [job.state(1000 + t) for t in (0, 0.5, 1, 50)] == ["validating"] * 2 + ["failed"] * 2
    assert job.ended_at(1001) == 1001


def test_a_cancel_keeps_the_lines_done_by_then_and_lingers_for_its_grace() -> None:
    b, clock = book()
    job = b.submit("j", "openai", "p", lines(4), [], {})
    clock.now = 1005.5  # lines 0 and 1 have run (at 3 and 5)
    assert b.cancel(job) and b.cancel(job)  # again: a no-op
    assert job.state(1005.5) == "cancelling" and job.state(1006.5) == "cancelled"
    assert len(job.done(1099)) == 2
    assert job.counts(1099) == {"total": 4, "completed": 1, "failed": 3}
    clock.now = 1020
    ended = b.submit("k", "openai", "p", lines(1), [], {})
    clock.now = 1031
    assert not b.cancel(ended) and ended.state(1031) == "completed"


def test_an_expiry_stops_the_run_where_it_is() -> None:
    b, _ = book(expire=6)
    job = b.submit("j", "gemini", "p", lines(4, "gemini"), [], {})
    assert job.state(1005.9) == "in_progress" and job.state(1006) == "expired"
    assert len(job.done(1099)) == 2 and job.ended_at(1099) == 1006


def test_an_expiry_after_completion_never_happens() -> None:
    b, _ = book(expire=30)
    job = b.submit("j", "openai", "p", lines(1), [], {})
    assert job.state(1040) == "completed" and not job.expiring


@pytest.mark.parametrize("vendor", ["openai", "gemini"])
def test_lines_are_numbered_per_persona_across_batches_and_reset_restarts_them(vendor) -> None:
    b, _ = book()
    first = b.submit("a", vendor, "p", lines(1, vendor), [], {})
    second = b.submit("b", vendor, "p", lines(1, vendor), [], {})
    assert first.outcomes[0].ok and second.outcomes[0].status == 503  # the persona's 2nd line
    b.reset()
    again = b.submit("c", vendor, "p", lines(2, vendor), [], {})
    assert [o.status for o in again.outcomes] == [200, 503]
    assert [e["id"] for e in b.snapshot()] == ["c"]
