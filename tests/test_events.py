"""`emit`: a failing sink never breaks the traffic it observes, and says why in the log."""

from __future__ import annotations

import logging

from workbench.errors import WorkbenchError
from workbench.events import AttemptEvent, emit


async def test_a_coded_sink_failure_is_one_line_and_a_bug_keeps_its_traceback(caplog):
    event = AttemptEvent("p:m", None, "ok", 1, 1.0)
    heard: list[object] = []

    def full(_: object) -> None:
        raise WorkbenchError("w.duckdb: the disk is full", code="STORE_DISK_FULL")

    def broken(_: object) -> None:
        raise KeyError("bug")

    with caplog.at_level(logging.ERROR, logger="workbench.events"):
        await emit([full, broken, heard.append], event)
    assert heard == [event]  # the sinks after the failing ones still hear it
    coded, bug = caplog.records
    assert "STORE_DISK_FULL" in coded.getMessage() and coded.exc_info is None
    assert bug.exc_info is not None
