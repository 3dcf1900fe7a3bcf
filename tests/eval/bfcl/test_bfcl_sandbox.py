"""BFCL's backends in their worker: calls dispatched, never evaluated; limits that hold; a
worker lost mid-entry comes back with its state."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.suites.bfcl import grade_multi_turn
from workbench.eval.suites.bfcl.backends import BackendCall
from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.eval.suites.bfcl.sandbox import BackendSandbox, SandboxLimits
from workbench.eval.suites.bfcl.sandbox_worker import _audit


@pytest.fixture(scope="module")
def base(bfcl_wheel: Path) -> list[BfclEntry]:
    from workbench.eval.suites.bfcl.loader import bfcl_dataset

    return [i.expect.bfcl for i in bfcl_dataset("multi_turn_base", source=bfcl_wheel).items]


@pytest.fixture(scope="module")
def files(base: list[BfclEntry]) -> BfclEntry:
    """multi_turn_base_0: TwitterAPI and GorillaFileSystem."""
    return base[0]


@pytest.fixture(scope="module")
def maths(base: list[BfclEntry]) -> BfclEntry:
    return next(e for e in base if "MathAPI" in e.involved_classes)


@pytest.fixture
def sandbox(files: BfclEntry) -> Iterator[BackendSandbox]:
    with BackendSandbox(files) as made:
        yield made


# ------------------------------------------------------------------ calls


def test_bfcl_call_text_is_read_with_positional_and_nested_literal_arguments() -> None:
    assert BackendCall.parse("sort('final_report.pdf')") == BackendCall(
        "sort", ("final_report.pdf",)
    )
    call = BackendCall.parse("f(a=[1, {'k': (2, -3.5)}], b=None)")
    assert call.kwargs == {"a": [1, {"k": (2, -3.5)}], "b": None}
    assert BackendCall.parse(call.text()) == call


@pytest.mark.parametrize(
    "text", ["cd(folder=x)", "__import__('os').system('ls')", "cd(**{'folder': 'a'})", "cd("]
)
def test_bfcl_call_text_that_is_not_literal_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ConfigError) as raised:
        BackendCall.parse(text)
    assert raised.value.code == "BFCL_FILE_INVALID"
    assert repr(text) in str(raised.value)


def test_a_model_call_reads_its_arguments_as_bfcl_decodes_them() -> None:
    assert BackendCall.of({"name": "cd", "arguments": '{"folder": "a"}'}) == BackendCall(
        "cd", (), {"folder": "a"}
    )
    for undecodable in ('{"folder": ', "[1, 2]"):
        with pytest.raises(ValueError):
            BackendCall.of({"name": "cd", "arguments": undecodable})


# ------------------------------------------------------------------ dispatch


def test_calls_answer_as_bfcl_words_them_and_state_persists(sandbox: BackendSandbox) -> None:
    first = sandbox.execute([BackendCall.parse("cd(folder='document')")])
    assert first == ['{"current_working_directory": "document"}']
    second = sandbox.execute([BackendCall.parse("mkdir(dir_name='temp')"), BackendCall("ls")])
    assert second[0] == "None"  # a method that returns nothing: str(None), as BFCL
    assert "temp" in json.loads(second[1])["current_directory_content"]
    state = sandbox.state()
    assert set(state) == {"TwitterAPI", "GorillaFileSystem"}
    json.dumps(state)  # JSON-safe: what JSON cannot hold is its repr
    assert all(not k.startswith("_") for attrs in state.values() for k in attrs)


def test_an_exception_and_a_denied_name_give_bfcls_texts(sandbox: BackendSandbox) -> None:
    got = sandbox.execute(
        [
            BackendCall("cd", (), {"nope": 1}),
            BackendCall("kill"),
            BackendCall("ls", (), {"from": 1}),
        ]
    )
    assert got[0].startswith("Error during execution: ") and "unexpected keyword" in got[0]
    assert got[1] == "Error during execution: Function call kill is not allowed."
    assert got[2] == "Error during execution: invalid syntax (<string>, line 1)"


def escapes(marker: Path) -> list[BackendCall]:
    code = f"open({str(marker)!r}, 'w').close()"
    return [
        BackendCall("__import__", ("os",)),
        BackendCall("eval", (code,)),
        BackendCall("exec", (code,)),
        BackendCall("open", (str(marker), "w")),
        BackendCall(f"__import__('os').system('touch {marker}')"),
        BackendCall("__init__"),
        BackendCall("__class__"),
        BackendCall("_load_scenario", ({},)),
        BackendCall("get_stock_info", (), {"symbol": "AAPL"}),  # TradingBot: not involved
    ]


def test_escapes_run_nothing_and_read_as_unknown_names(
    sandbox: BackendSandbox, tmp_path: Path
) -> None:
    marker = tmp_path / "escaped"
    before = sandbox.state()
    results = sandbox.execute(escapes(marker))
    assert not marker.exists()
    assert all(r.startswith("Error during execution: name '") for r in results), results
    assert results[0] == "Error during execution: name '__import__' is not defined"
    assert sandbox.state() == before  # not even _load_scenario ran
    # An argument holding code is a value: the simulated file is named by it, nothing runs.
    sandbox.execute(
        [BackendCall("touch", (), {"file_name": f"__import__('os').system('touch {marker}')"})]
    )
    assert not marker.exists()


def test_an_escape_is_graded_as_bfcl_grades_an_invalid_call(
    files: BfclEntry, tmp_path: Path
) -> None:
    marker = tmp_path / "escaped"
    truth = [[[BackendCall.parse(t) for t in turn]] for turn in files.ground_truth]

    def with_first_call(call: BackendCall) -> Any:
        trace = [[list(step) for step in turn] for turn in truth]
        trace[0][0][0] = call
        return trace

    unknown = grade_multi_turn(files, with_first_call(BackendCall("no_such_function")))
    assert not unknown.valid
    for escape in escapes(marker):
        graded = grade_multi_turn(files, with_first_call(escape))
        assert (graded.valid, graded.error_type) == (unknown.valid, unknown.error_type), escape
    assert not marker.exists()


def test_the_worker_refuses_network_processes_and_writes() -> None:
    for event, args in [
        ("socket.connect", (None, ("1.1.1.1", 80))),
        ("socket.getaddrinfo", ("example.com", 80, 0, 0, 0)),
        ("subprocess.Popen", ("sh", [], None, None)),
        ("os.system", ("ls",)),
        ("os.remove", ("x", -1)),
        ("open", ("x", "w", 0)),
        ("open", ("x", None, os.O_WRONLY | os.O_CREAT)),
    ]:
        with pytest.raises(PermissionError):
            _audit(event, args)
    _audit("open", ("x", "r", os.O_RDONLY))  # reading stays allowed: imports read files


# ------------------------------------------------------------------ limits and losses

_SPIN = BackendCall("power", (), {"base": 7, "exponent": 10**9})  # minutes of big-int work
_ADD = BackendCall("add", (), {"a": 1, "b": 2})


def test_a_backend_that_hangs_is_stopped_and_the_next_call_works(maths: BfclEntry) -> None:
    # 2 s: the spin needs minutes, and the restart and replay after it must fit a loaded machine.
    with BackendSandbox(maths, limits=SandboxLimits(step_timeout_s=2)) as sandbox:
        sandbox.execute([BackendCall.parse("mkdir(dir_name='kept')")])
        got = sandbox.execute([_SPIN, _ADD])
        assert got == [
            "Error during execution: the backend did not answer within 2 s",
            '{"result": 3}',
        ]
        assert "kept" in sandbox.execute([BackendCall("ls")])[0]  # rebuilt by replay


def test_a_backend_past_its_cpu_time_is_stopped(maths: BfclEntry) -> None:
    with BackendSandbox(maths, limits=SandboxLimits(cpu_s=1, step_timeout_s=30)) as sandbox:
        got = sandbox.execute([_SPIN, _ADD])
    assert got == [
        "Error during execution: the backend ran out of its 1 s of CPU time",
        '{"result": 3}',
    ]


def test_a_backend_past_its_memory_is_stopped_and_the_state_rebuilt(maths: BfclEntry) -> None:
    # A billion digits of a square root: BFCL's decimal asks for gigabytes at once.
    huge = BackendCall("square_root", (), {"number": 2, "precision": 10**9})
    limits = SandboxLimits(memory_mb=300, step_timeout_s=30)
    with BackendSandbox(maths, limits=limits) as sandbox:
        sandbox.execute([BackendCall.parse("mkdir(dir_name='kept')")])
        got = sandbox.execute([huge, _ADD])
        assert got == [
            "Error during execution: the backend ran out of its 300 MB of memory",
            '{"result": 3}',
        ]
        assert "kept" in sandbox.execute([BackendCall("ls")])[0]


def test_a_worker_reused_over_entries_never_spends_one_entrys_cpu_on_the_others(
    maths: BfclEntry,
) -> None:
    # ~0.15 s of CPU each (its text then exceeds Python's digit limit: an error result).
    work = BackendCall("power", (), {"base": 7, "exponent": 10**6})
    with BackendSandbox(maths, limits=SandboxLimits(cpu_s=1, step_timeout_s=30)) as sandbox:
        for _ in range(12):  # 1.8 s of CPU in all: one worker's limit would stop it
            sandbox.reset(maths)
            got = sandbox.execute([work, _ADD])
            assert "CPU" not in got[0] and got[1] == '{"result": 3}', got


def test_a_worker_killed_mid_entry_comes_back_with_its_state(sandbox: BackendSandbox) -> None:
    sandbox.execute(
        [BackendCall.parse("cd(folder='document')"), BackendCall("mkdir", (), {"dir_name": "t"})]
    )
    before, pid = sandbox.state(), sandbox.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert sandbox.state() == before
    assert sandbox.pid != pid
    os.kill(sandbox.pid or 0, signal.SIGKILL)
    # Either the sandbox sees the worker gone before the call and restarts it first, or the
    # call meets the dead worker and fails alone; then the state is back either way.
    pwd = '{"current_working_directory": "/workspace/document"}'
    got = sandbox.execute([BackendCall("pwd")])
    assert got == [pwd] or got[0].startswith("Error during execution: the backend was stopped")
    assert sandbox.execute([BackendCall("pwd")]) == [pwd]


def test_a_worker_that_cannot_start_is_one_line_with_its_code(
    files: BfclEntry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_BFCL_DIR", str(tmp_path / "cache"))
    data = tmp_path / "checkout/bfcl_eval/data"
    data.mkdir(parents=True)
    (data / "BFCL_v4_simple_python.json").write_text("")
    with pytest.raises(WorkbenchError) as raised:  # a data folder alone: no backends
        BackendSandbox(files, source=data)
    assert raised.value.code == "BFCL_BACKEND_FAILED"
    code = tmp_path / "checkout/bfcl_eval/eval_checker/multi_turn_eval/func_source_code"
    code.mkdir(parents=True)
    for name in ("posting_api.py", "gorilla_file_system.py"):
        (code / name).write_text("raise ImportError('this backend is broken')\n")
    with pytest.raises(WorkbenchError) as raised:
        BackendSandbox(files, source=data)
    assert raised.value.code == "BFCL_BACKEND_FAILED"
    assert "this backend is broken" in str(raised.value) and "\n" not in str(raised.value)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        SandboxLimits(step_timeout_s=0)


def test_a_string_naming_a_method_reads_as_bfcls_eval_leaves_it(
    files: BfclEntry, bfcl_package: None
) -> None:
    """BFCL prefixes `name(` with the method's instance even inside a string: the same text."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (  # type: ignore[import-not-found]
        execute_multi_turn_func_call,
    )

    calls = [
        BackendCall.parse("cd(folder='document')"),
        BackendCall.parse("touch(file_name='note.txt')"),
        BackendCall("echo", (), {"content": "run ls(x) and pwd ()", "file_name": "note.txt"}),
        BackendCall("cat", (), {"file_name": "note.txt"}),
        BackendCall("echo", (), {"content": "unknown(y), \\n ls("}),
    ]
    theirs, _ = execute_multi_turn_func_call(
        [c.text() for c in calls],
        files.initial_config,
        list(files.involved_classes),
        "quirk",
        files.id,
        long_context=files.long_context,
    )
    with BackendSandbox(files, sides={"model": "quirk"}) as sandbox:
        ours = sandbox.execute(calls)
    assert "quirk_multi_turn_base_0_GorillaFileSystem_instance.ls(x)" in ours[3]
    assert ours == theirs
