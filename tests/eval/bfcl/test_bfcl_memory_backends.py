"""BFCL's memory backends in the sandbox, loaded from a snapshot: they answer as BFCL's own
classes do in-process when BFCL loads them from its snapshot file, and the memory they leave
is the snapshot BFCL's flush writes."""

from __future__ import annotations

import copy
import inspect
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.suites.bfcl.backends import BackendCall
from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.eval.suites.bfcl.memory import snapshot_of
from workbench.eval.suites.bfcl.sandbox import BackendSandbox
from workbench.types import ChatRequest, Reply, ToolCall

KV_SNAPSHOT: dict[str, Any] = {
    "core_memory": {
        "user_name": "Michael",
        "user_age": "35",
        "user_city": "Seattle, moved from Portland in 2019",
    },
    "archival_memory": {
        "hobby_hiking": "Michael hikes in the Cascades most weekends, usually Mount Rainier trails",
        "job_details": "Freelance graphic designer working mostly with outdoor gear brands",
        "camera_gear": "Shoots landscapes with a mirrorless camera and a wide-angle lens",
        "order_history": "Ordered a waterproof hiking backpack last spring, returned it once",
    },
}
# Every public method of MemoryAPI_kv, reads before and after writes, and the calls BFCL
# answers with an error (an invalid key, a key that is not there).
KV_CALLS = [
    "core_memory_retrieve(key='user_name')",
    "core_memory_retrieve(key='missing_key')",
    "core_memory_list_keys()",
    "core_memory_key_search(query='user city')",
    "core_memory_retrieve_all()",
    "archival_memory_key_search(query='hiking trails', k=2)",
    "archival_memory_key_search(query='camera')",
    "archival_memory_retrieve(key='job_details')",
    "archival_memory_list_keys()",
    "core_memory_add(key='favourite_brand', value='Patagonia')",
    "core_memory_add(key='not a valid key!', value='x')",
    "core_memory_replace(key='user_age', value='36')",
    "core_memory_remove(key='user_city')",
    "archival_memory_add(key='return_policy_question', value='Asked about 30-day returns')",
    "archival_memory_replace(key='camera_gear', value='Sold the wide-angle lens')",
    "archival_memory_remove(key='order_history')",
    "archival_memory_remove(key='order_history')",
    "archival_memory_key_search(query='return policy')",
    "core_memory_retrieve_all()",
    "core_memory_clear()",
    "core_memory_list_keys()",
    "archival_memory_clear()",
    "archival_memory_add(key='after_clear', value='written after the clear')",
]
REC_SUM_SNAPSHOT = {"memory": "Michael, 35, lives in Seattle. Likes hiking. Ordered a backpack."}
REC_SUM_CALLS = [
    "memory_retrieve()",
    "memory_append(text=' Prefers email over phone.')",
    "memory_replace(old_text='Seattle', new_text='Tacoma')",
    "memory_replace(old_text='not in the memory', new_text='x')",
    "memory_retrieve()",
    "memory_update(text='Michael, 36, Tacoma. Hikes. Prefers email.')",
    "memory_retrieve()",
    "memory_clear()",
    "memory_append(text='A fresh start.')",
    "memory_retrieve()",
]


def _entry(backend: str, entry_id: str, snapshot: dict[str, Any] | None) -> BfclEntry:
    config = {} if snapshot is None else {backend: {"snapshot": copy.deepcopy(snapshot)}}
    return BfclEntry(
        id=entry_id,
        category=f"memory_{backend.removeprefix('MemoryAPI_')}",
        turns=((),),
        functions=(),
        involved_classes=(backend,),
        initial_config=config,
        scenario="customer",
        prerequisite="prereq" in entry_id,
    )


class BfclInProcess:
    """BFCL's own memory backend, in this process, loaded by its own `_load_scenario` from the
    snapshot file its previous conversation's flush would have left, and run by its own
    `execute_multi_turn_func_call` — the oracle the sandbox must agree with."""

    def __init__(
        self, backend: str, entry_id: str, snapshot: dict[str, Any] | None, results: Path
    ) -> None:
        from bfcl_eval.utils import get_directory_structure_by_id  # type: ignore[import-not-found]

        folder = results / get_directory_structure_by_id(entry_id) / "memory_snapshot"
        if snapshot is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "customer_final.json").write_text(json.dumps(snapshot, indent=4))
        self.backend, self.entry_id, self.latest = backend, entry_id, folder / "customer_final.json"
        self.config = {
            backend: {"model_result_dir": results, "test_id": entry_id, "scenario": "customer"}
        }
        self.model = f"oracle_{id(self)}"  # BFCL keeps its instances in globals, by this name

    def execute(self, calls: list[str]) -> tuple[list[str], Any]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (  # type: ignore[import-not-found]
            execute_multi_turn_func_call,
        )

        results, instances = execute_multi_turn_func_call(
            calls, self.config, [self.backend], self.model, self.entry_id
        )
        return results, instances[self.backend]

    def flushed(self, instance: Any) -> dict[str, Any]:
        """What BFCL's flush at the end of a prerequisite conversation writes."""
        instance._flush_memory_to_local_file()
        return dict(json.loads(self.latest.read_text()))


def _public_methods(instance: Any) -> set[str]:
    return {
        name
        for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod)
        if not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("backend", "snapshot", "calls"),
    [
        ("MemoryAPI_kv", KV_SNAPSHOT, KV_CALLS),
        ("MemoryAPI_rec_sum", REC_SUM_SNAPSHOT, REC_SUM_CALLS),
    ],
)
def test_a_memory_loaded_from_a_snapshot_answers_as_bfcls_own_and_leaves_what_its_flush_writes(
    bfcl_package: None,
    bfcl_wheel: Path,
    tmp_path: Path,
    backend: str,
    snapshot: dict[str, Any],
    calls: list[str],
) -> None:
    entry_id = f"memory_{backend.removeprefix('MemoryAPI_')}_prereq_2-customer-2"
    entry = _entry(backend, entry_id, snapshot)
    bfcl = BfclInProcess(backend, entry_id, snapshot, tmp_path)
    clears = next(i for i, c in enumerate(calls) if "clear" in c)
    called: set[str] = set()
    with BackendSandbox(entry, source=bfcl_wheel) as sandbox:
        # Before the clears (the snapshot's memory with the writes in it), then after them.
        for batch in (calls[:clears], calls[clears:]):
            expected, instance = bfcl.execute(batch)
            got = sandbox.execute([BackendCall.parse(c) for c in batch])
            assert got == expected
            assert snapshot_of(entry, sandbox.state()) == bfcl.flushed(instance)
            called |= {BackendCall.parse(c).name for c in batch}
        assert snapshot_of(entry, sandbox.state()) != snapshot  # the writes are in it
    assert called == _public_methods(instance)  # every public method, none missed


@pytest.mark.parametrize("backend", ["MemoryAPI_kv", "MemoryAPI_rec_sum"])
def test_an_empty_snapshot_is_bfcls_first_prerequisite_a_clean_memory(
    bfcl_package: None, bfcl_wheel: Path, tmp_path: Path, backend: str
) -> None:
    entry_id = f"memory_{backend.removeprefix('MemoryAPI_')}_prereq_0-customer-0"
    bfcl = BfclInProcess(backend, entry_id, None, tmp_path)
    calls = ["core_memory_list_keys()"] if backend.endswith("kv") else ["memory_retrieve()"]
    expected, instance = bfcl.execute(calls)
    for snapshot in ({}, None):  # `{"snapshot": {}}`, and no config at all
        with BackendSandbox(_entry(backend, entry_id, snapshot), source=bfcl_wheel) as sandbox:
            assert sandbox.execute([BackendCall.parse(c) for c in calls]) == expected
            assert snapshot_of(_entry(backend, entry_id, {}), sandbox.state()) == bfcl.flushed(
                instance
            )


def test_the_worker_loads_the_fields_the_snapshots_keep() -> None:
    """The worker is a stdlib-only script, so it holds its own copy of the table."""
    from workbench.eval.suites.bfcl import sandbox_worker
    from workbench.eval.suites.bfcl.memory import SNAPSHOT_FIELDS

    assert (
        sandbox_worker.MEMORY_FIELDS | {sandbox_worker.VECTOR: sandbox_worker.VECTOR_STORES}
        == SNAPSHOT_FIELDS
    )


def test_a_snapshot_that_lacks_a_field_is_refused_naming_it(bfcl_wheel: Path) -> None:
    entry = _entry("MemoryAPI_kv", "memory_kv_3-customer-0", {"core_memory": {"a": "b"}})
    with pytest.raises(WorkbenchError) as raised:
        BackendSandbox(entry, source=bfcl_wheel)
    assert raised.value.code == "BFCL_BACKEND_FAILED"
    assert "MemoryAPI_kv's snapshot has no archival_memory" in str(raised.value)


def test_memory_vector_without_its_extra_is_refused_before_a_worker_starts(
    bfcl_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "faiss" else found(name, *a)
    )
    entry = _entry("MemoryAPI_vector", "memory_vector_3-customer-0", {})
    with pytest.raises(ConfigError) as raised:
        BackendSandbox(entry, source=bfcl_wheel)
    assert raised.value.code == "BFCL_CATEGORY_UNAVAILABLE"
    said = str(raised.value)  # names what is missing (here faiss, in CI all three) and the extra
    assert "faiss" in said and "missing" in said and "workbench[bfcl-vector]" in said


def test_the_memory_backends_private_methods_and_files_stay_out_of_reach(
    bfcl_wheel: Path, tmp_path: Path
) -> None:
    entry = _entry("MemoryAPI_kv", "memory_kv_prereq_1-customer-1", KV_SNAPSHOT)
    marker = tmp_path / "flushed"
    escapes = [
        "_flush_memory_to_local_file()",
        f"_load_scenario({{'model_result_dir': {str(marker)!r}, 'test_id': 'x', 'scenario': 'y'}})",
        "_dump_core_memory_to_context()",
        "_similarity_search(query='a', corpus=['a'])",
        "_prepare_snapshot({})",
        "snapshot_folder()",
    ]
    with BackendSandbox(entry, source=bfcl_wheel) as sandbox:
        results = sandbox.execute([BackendCall.parse(c) for c in escapes])
        state = sandbox.state()
    for call, result in zip(escapes, results, strict=True):
        name = call.split("(")[0]
        assert result == f"Error during execution: name '{name}' is not defined"
    assert snapshot_of(entry, state) == KV_SNAPSHOT
    assert not marker.exists()


def test_a_memory_worker_killed_mid_entry_comes_back_from_its_snapshot_and_steps(
    bfcl_wheel: Path,
) -> None:
    entry = _entry("MemoryAPI_rec_sum", "memory_rec_sum_prereq_1-customer-1", REC_SUM_SNAPSHOT)
    with BackendSandbox(entry, source=bfcl_wheel) as sandbox:
        sandbox.execute([BackendCall.parse("memory_append(text=' Has a dog.')")])
        pid = sandbox.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        state = sandbox.state()  # a worker found dead is restarted and asked again
        assert sandbox.pid != pid
    assert state["MemoryAPI_rec_sum"]["memory"] == REC_SUM_SNAPSHOT["memory"] + " Has a dog."


# ------------------------------------------------------------------ played


async def test_a_memory_prerequisite_played_leaves_a_snapshot_holding_what_it_wrote(
    bfcl_wheel: Path,
) -> None:
    from workbench.eval.suites.bfcl.loader import bfcl_dataset
    from workbench.eval.suites.bfcl.play import play_and_grade

    items = bfcl_dataset("memory_kv", source=bfcl_wheel, limit=1).items
    entry = next(i.expect.bfcl for i in items if i.expect.bfcl.prerequisite)
    asked: list[ChatRequest] = []

    async def ask(request: ChatRequest) -> Reply:
        """A call at the start of each turn (after the user spoke), then an answer: the first
        turn writes the core memory, the later ones (past its 7 keys) the archival one."""
        asked.append(request)
        if request.messages[-1]["role"] != "user":
            return Reply(text="Noted, thank you!")
        turn = sum(1 for m in request.messages if m["role"] == "user")
        name, arguments = "archival_memory_add", {"key": f"turn_{turn}", "value": f"said {turn}"}
        if turn == 1:
            name, arguments = "core_memory_add", {"key": "user_age", "value": "35"}
        call = ToolCall(f"c{turn}", name, arguments, json.dumps(arguments))
        return Reply(text="", tool_calls=[call], protocol="native")

    start = {"core_memory": {"user_name": "Michael"}, "archival_memory": {"a": "b"}}
    verdict = await play_and_grade(entry, mode="native", ask=ask, memory=start)
    assert verdict.valid is None  # a prerequisite writes the memory; nothing grades it
    assert not verdict.played.force_quit and len(verdict.played.turns) == len(entry.turns) > 2
    assert verdict.memory == {
        "core_memory": {"user_name": "Michael", "user_age": "35"},
        "archival_memory": {
            "a": "b",
            **{f"turn_{t}": f"said {t}" for t in range(2, len(entry.turns) + 1)},
        },
    }
    assert verdict.played.results[0][0] == ['{"status": "Key-value pair added."}']
    assert '"user_name": "Michael"' in str(asked[0].system)  # the memory it started from
