"""`workbench run --batch`: a run's requests through the simulator's real Batch API (files
uploaded, batches polled, output and error files read over loopback HTTP)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from workbench.cli.verbs import main
from workbench.config.providers_file import load_config
from workbench.errors import ConfigError, ProviderError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers.batch_api import OpenAIBatch
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.sim import SimServer
from workbench.sim.process import SimProcess
from workbench.types import ChatRequest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke.jsonl"

PERSONA = """
[[persona]]
id = "sim-native"
tool_style = "native"
vision = true
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0
"""


def fleet(batch: str = "[batch]\ndelay_s = 0.2\n") -> str:
    return f"seed = 1\n{batch}\n{PERSONA}"


def providers(tmp_path: Path, url: str, *, batch: bool | None = True, name: str = "p") -> Path:
    path = tmp_path / f"{name}.toml"
    flag = "" if batch is None else f"batch = {str(batch).lower()}\n"
    path.write_text(
        f'[router]\nname = "{name}"\n[[providers]]\nid = "sim"\nadapter = "openai"\n'
        f'base_url = "{url}/v1"\nkey_env = "SIM_KEY"\nmodels = ["sim-native"]\n{flag}'
    )
    return path


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("SIM_KEY", "sim-key")


def keys_sent(batches: list[dict]) -> list[str]:
    return [k for b in batches for k in b["keys"]]


async def test_the_smoke_set_in_batches_is_answered_and_graded_as_one_by_one(tmp_path):
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            alone = await run_prompt_set(SMOKE, config, store, progress=False)
            sim.reset()
            batched = await run_prompt_set(SMOKE, config, store, progress=False, batch=True)
            by_run = {
                run: {(o.item_id, o.passed, o.error_code) for o in store.outputs_for(run)}
                for run in (alone.run_id, batched.run_id)
            }
            attempts = store.con.execute(
                "SELECT count(*), count(batch_id) FROM attempts WHERE run_id = ?",
                [batched.run_id],
            ).fetchall()[0]
            journaled = store.batches(batched.run_id)
    assert by_run[batched.run_id] == by_run[alone.run_id]
    assert batched.passed == alone.passed and batched.passed > 0
    assert attempts[0] == attempts[1] > 0  # every answer is an attempt naming its batch
    sent = keys_sent(sim.batches())
    assert len(sent) == len(set(sent)) == attempts[0]
    assert {b.status for b in journaled} == {"collected"}
    # An item with a tool loop went round twice: its next turn joined the next batch.
    tool_item = "smoke-tool-order-001"
    rounds = {k: n for n, b in enumerate(sim.batches()) for k in b["keys"]}
    assert rounds[f"0:0:{tool_item}"] == 0 and rounds[f"0:1:{tool_item}"] == 1
    assert [b.round for b in journaled] == [1, 2]


async def test_a_cached_batch_answer_is_not_sent_again(tmp_path):
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        data = echo_set(tmp_path, 3)
        with Store.open(tmp_path / "run.duckdb") as store:
            first = await run_prompt_set(
                data, config, store, progress=False, batch=True, cache_ttl_s=600
            )
            again = await run_prompt_set(
                data, config, store, progress=False, batch=True, cache_ttl_s=600
            )
            cached = store.con.execute(
                "SELECT count(*) FILTER (cached), count(*) FROM attempts WHERE run_id = ?",
                [again.run_id],
            ).fetchall()[0]
        assert len(sim.batches()) == 1
    assert first.passed == again.passed == 3 and cached == (3, 3)


def echo_set(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "echo.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"e{i}",
                    "prompt": f"Reply with exactly: pong {i}",
                    "expect": {"contains": [f"pong {i}"]},
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


async def test_a_provider_without_a_batch_api_is_refused_before_anything_is_sent(tmp_path):
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url, batch=None))  # loopback: no API
        with Store.open(tmp_path / "run.duckdb") as store:
            with pytest.raises(ConfigError) as info:
                await run_prompt_set(
                    echo_set(tmp_path, 2), config, store, progress=False, batch=True
                )
            assert store.latest_run() is None  # the run was never recorded
        assert sim.requests() == [] and sim.batches() == []
    assert info.value.code == "BATCH_UNSUPPORTED"
    assert "p" in info.value.message and "sim:sim-native" in info.value.message


def test_batch_with_the_ray_engine_is_refused_in_one_line(tmp_path, capsys):
    argv = ["run", str(echo_set(tmp_path, 1)), "--batch", "--engine", "ray", "--quiet"]
    assert main([*argv, "--db", str(tmp_path / "run.duckdb"), "--no-report"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("error: BATCH_ENGINE:") and "\n" not in err and "journals and polls" in err
    )


async def test_an_expired_batch_sends_its_leftovers_once_more_then_leaves_them_unanswered(
    tmp_path,
):
    # Each batch expires halfway: what it finished is kept, the rest goes in the next batch,
    # and what two batches left unanswered is unanswered (BATCH_EXPIRED), never sent a third
    # time, never graded as failed; `--resume` asks it again.
    async with SimServer(fleet("[batch]\ndelay_s = 0.4\nexpire_after_s = 0.2\n")) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        data = echo_set(tmp_path, 8)
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(data, config, store, progress=False, batch=True)
            outputs = store.outputs_for(summary.run_id)
            journaled = store.batches(summary.run_id)
            batches = sim.batches()
            left = {o.item_id for o in outputs if o.error_code is not None}
            await run_prompt_set(data, config, store, progress=False, resume=summary.run_id)
            resent = keys_sent(sim.batches()[len(batches) :])
    sent = keys_sent(batches)
    assert len(batches) == 2 and {b.status for b in journaled} == {"expired"}
    assert max(sent.count(k) for k in sent) == 2 and len(set(sent)) == 8
    assert len(outputs) == 8 and left and len(left) < 8
    for o in outputs:
        if o.item_id in left:
            assert o.error_code == "BATCH_EXPIRED" and o.unanswered == "provider_error"
            assert o.passed is None and o.retry_at_ms is not None
        else:
            assert o.passed and o.unanswered is None
    assert summary.unanswered == {"provider_error": len(left)} and summary.failed == 0
    assert summary.graded == 8 - len(left) == summary.passed  # a pass rate of 100 %
    assert {k.rsplit(":", 1)[-1] for k in resent} == left  # the resume asks exactly those


async def test_a_line_the_batch_failed_is_sent_again_in_the_next_batch(tmp_path):
    table = '[batch]\ndelay_s = 0.2\n[batch.failures]\nsim-native = [{ kind = "500", at = [2] }]\n'
    async with SimServer(fleet(table)) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 4), config, store, progress=False, batch=True
            )
            outputs = store.outputs_for(summary.run_id)
            failed = store.con.execute(
                "SELECT item_id, status, error_code, batch_id FROM attempts "
                "WHERE run_id = ? AND outcome = 'error'",
                [summary.run_id],
            ).fetchall()
        batches = sim.batches()
    assert summary.passed == 4 and all(o.error_code is None for o in outputs)
    assert len(batches) == 2 and len(batches[1]["keys"]) == 1
    [(item, status, code, batch_id)] = failed
    assert status == 500 and code == "PROVIDER_OUTAGE" and batch_id == batches[0]["id"]
    assert batches[1]["keys"] == [f"0:0:{item}"]


async def test_a_line_refused_with_a_429_in_both_batches_is_unanswered_as_rate_limit(
    tmp_path, monkeypatch
):
    # The simulator's batch lines fail with 5xx only: a vendor's 429 line is made here.
    real = OpenAIBatch.results

    async def refused(self, state, requests, **kw):
        found = await real(self, state, requests, **kw)
        for cid in found.replies:
            found.replies[cid] = ProviderError(
                "the batch refused the request (HTTP 429)", kind="rate_limit", status_code=429
            )
        return found

    monkeypatch.setattr(OpenAIBatch, "results", refused)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 1), config, store, progress=False, batch=True
            )
            [output] = store.outputs_for(summary.run_id)
        assert len(sim.batches()) == 2  # sent once more, then left
    assert output.unanswered == "rate_limit" and output.error_code == "PROVIDER_RATE_LIMIT"
    assert output.passed is None and summary.failed == 0


async def test_a_batch_run_costs_half_of_the_same_run_one_by_one(tmp_path):
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            data = echo_set(tmp_path, 3)
            alone = await run_prompt_set(data, config, store, progress=False)
            sim.reset()
            batched = await run_prompt_set(data, config, store, progress=False, batch=True)
            frames = RunFrames(store)
            prices = {"sim-native": (2.0, 8.0)}
            one_by_one = frames.usage(alone.run_id, prices=prices).iloc[0]
            in_batch = frames.usage(batched.run_id, prices=prices).iloc[0]
    assert in_batch["tokens_in"] == one_by_one["tokens_in"] > 0
    assert in_batch["cost_usd"] == pytest.approx(one_by_one["cost_usd"] / 2)
    # The report's table of tokens says how many calls a batch answered.
    from workbench.eval.report.page import write_report

    page = write_report(tmp_path / "run.duckdb", batched.run_id, tmp_path / "reports")
    html = page.read_text()
    assert "in_batches" in html and "a batch's calls cost half" in html


async def test_an_output_line_that_matches_no_request_is_warned_about_and_ignored(tmp_path, caplog):
    # The simulator never writes a stray line: a vendor's output file is served by hand here.
    provider = openai_compatible_provider("v", "http://vendor.test/v1", None, ["m"])
    line = {
        "custom_id": "%s",
        "response": {
            "status_code": 200,
            "body": {"choices": [{"message": {"content": "pong"}, "finish_reason": "stop"}]},
        },
    }
    text = "\n".join(json.dumps(line) % c for c in ("mine", "stray")) + "\nnot json\n"
    batch = OpenAIBatch(provider, "m", None)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=text)

    from workbench.providers.batch_api import BatchState

    batch._http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    state = BatchState("b1", "completed", "completed", detail={"output_file_id": "f1"})
    found = await batch.results(state, {"mine": ChatRequest(messages=[])})
    await batch.aclose()
    assert found.replies["mine"].text == "pong"
    assert found.unmatched == ["stray", None]


KILL_FLEET = fleet("[batch]\ndelay_s = 3.0\n")


class Recorder:
    """A loopback HTTP relay in front of the simulator that notes each request's method and
    path: the simulator logs no poll, and the test must know when the first one came (a
    batch is journaled before it is polled)."""

    def __init__(self, target: str) -> None:
        import http.server
        import threading

        seen: list[str] = []
        self.seen = seen

        class Relay(http.server.BaseHTTPRequestHandler):
            def relay(self) -> None:
                seen.append(f"{self.command} {self.path}")
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                sent = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                got = httpx.request(
                    self.command, target + self.path, headers=sent, content=body, timeout=60
                )
                self.send_response(got.status_code)
                for name, value in got.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(got.content)))
                self.end_headers()
                self.wfile.write(got.content)

            do_GET = do_POST = do_DELETE = relay

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Relay)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_a_run_killed_while_its_batch_runs_resumes_by_polling_it_and_sends_nothing_twice(
    tmp_path,
):
    env = {**os.environ, "SIM_KEY": "sim-key"}
    with SimProcess(fleet_toml=KILL_FLEET) as sim:
        relay = Recorder(sim.base_url)
        db = tmp_path / "run.duckdb"
        command = [
            sys.executable, "-m", "workbench.cli", "run", str(echo_set(tmp_path, 6)),
            "--providers", str(providers(tmp_path, relay.url)), "--db", str(db),
            "--quiet", "--no-report",
        ]  # fmt: skip
        run = subprocess.Popen(
            [*command, "--batch"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        # Killed once the batch was first polled: it was journaled before (not after a guess).
        while not any(s.startswith("GET /v1/batches/batch_") for s in relay.seen):
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        run.send_signal(signal.SIGKILL)
        run.wait()
        with Store.open(db) as store:
            latest = store.latest_run()
            assert latest is not None
            [journaled] = store.batches(latest.run_id)
            assert journaled.status == "submitted" and store.done(latest.run_id) == set()
        # `--resume` alone: the run's row says it was a batch run.
        done = subprocess.run(
            [*command, "--resume", latest.run_id], env=env, capture_output=True, timeout=60
        )
        assert done.returncode == 0, done.stderr.decode()
        batches, asked = sim.batches(), sim.requests()
        relay.close()
        with Store.open(db) as store:
            outputs = store.outputs_for(latest.run_id)
            [after] = store.batches(latest.run_id)
    sent = keys_sent(batches)
    assert len(batches) == 1 and len(sent) == len(set(sent)) == 6  # nothing paid for twice
    assert after.batch_id == journaled.batch_id and after.status == "collected"
    assert len(outputs) == 6 and all(o.passed for o in outputs)
    assert asked == []  # and nothing was asked one by one either


def gemini_providers(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "gemini.toml"
    path.write_text(
        '[router]\nname = "g"\n[[providers]]\nid = "google"\nadapter = "gemini"\n'
        f'base_url = "{url}"\nkey_env = "SIM_KEY"\nmodels = ["sim-native"]\nbatch = true\n'
    )
    return path


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "file"])
async def test_gemini_batch_mode_answers_inline_or_from_an_uploaded_file(
    tmp_path, monkeypatch, inline
):
    if not inline:  # past the inline size, the requests go up through the Files API
        monkeypatch.setattr("workbench.providers.batch_api.GEMINI_INLINE_BYTES", 0)
    async with SimServer(fleet()) as sim:
        config = load_config(gemini_providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 4), config, store, progress=False, batch=True
            )
            [journaled] = store.batches(summary.run_id)
        [batch] = sim.batches()
    assert summary.passed == 4
    assert journaled.batch_id.startswith("batches/") and journaled.status == "collected"
    assert sorted(batch["keys"]) == [f"0:0:e{i}" for i in range(4)]


async def test_an_expired_gemini_batch_sends_what_it_did_not_run_once_more(tmp_path):
    async with SimServer(fleet("[batch]\ndelay_s = 0.4\nexpire_after_s = 0.2\n")) as sim:
        config = load_config(gemini_providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 8), config, store, progress=False, batch=True
            )
            outputs = store.outputs_for(summary.run_id)
        batches = sim.batches()
    sent = keys_sent(batches)
    assert len(batches) == 2 and max(sent.count(k) for k in sent) == 2
    assert {o.error_code for o in outputs} == {None, "BATCH_EXPIRED"}
    assert {o.unanswered for o in outputs if o.error_code} == {"provider_error"}


async def test_stray_output_lines_are_warned_about_once_and_the_run_finishes(
    tmp_path, monkeypatch, caplog
):
    # The simulator writes no stray line: the vendor's reading is wrapped to add two.
    real = OpenAIBatch.results

    async def with_strays(self, state, requests, **kw):
        found = await real(self, state, requests, **kw)
        found.unmatched.extend(["9:9:nobody", None])
        return found

    monkeypatch.setattr(OpenAIBatch, "results", with_strays)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            with caplog.at_level(logging.WARNING, logger="workbench.eval.run.batch_mode"):
                summary = await run_prompt_set(
                    SMOKE, config, store, progress=False, batch=True, limit=3
                )
    warned = [r for r in caplog.records if "match no request" in r.getMessage()]
    assert summary.status == "finished" and summary.passed == 3
    assert len(warned) == 1 and "9:9:nobody" in warned[0].getMessage()


async def test_a_batch_api_that_refuses_the_upload_fails_each_item_with_its_error(tmp_path):
    async with SimServer(fleet()) as sim:
        # A gateway said to have a batch API that has none: its /files answers 404.
        config = load_config(providers(tmp_path, sim.base_url + "/nowhere"))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
            outputs = store.outputs_for(summary.run_id)
            assert store.batches(summary.run_id) == []  # nothing was made, nothing journaled
    assert summary.status == "finished"
    assert [o.error_code for o in outputs] == ["PROVIDER_BAD_REQUEST"] * 3


async def test_a_batch_api_body_that_is_not_json_is_provider_malformed():
    provider = openai_compatible_provider("v", "http://vendor.test/v1", None, ["m"])
    batch = OpenAIBatch(provider, "m", None)
    batch._http = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, text="<html>"))
    )
    with pytest.raises(ProviderError) as info:
        await batch.submit({"a": ChatRequest(messages=[{"role": "user", "content": "hi"}])})
    await batch.aclose()
    assert info.value.code == "PROVIDER_MALFORMED"


@pytest.mark.parametrize("value", ['"yes"', "1"])
def test_the_providers_file_batch_flag_is_true_or_false(tmp_path, value):
    path = providers(tmp_path, "http://127.0.0.1:9", batch=None)
    path.write_text(path.read_text() + f"batch = {value}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.code == "PROVIDERS_INVALID" and "batch" in info.value.message


def test_the_command_runs_the_built_in_fleet_in_batches_without_the_local_model(tmp_path, capsys):
    db = tmp_path / "run.duckdb"
    argv = ["run", str(SMOKE), "--batch", "--limit", "3", "--quiet", "--no-report"]
    assert main([*argv, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "3/3 passed" in out and "local" not in out
    assert "masking audit" not in out  # the simulator's request log holds no batch line
    with Store.open(db) as store:
        run = store.latest_run()
        assert run is not None and run.config is not None and run.config["batch"] is True
        assert [b.status for b in store.batches(run.run_id)] == ["collected"]


async def test_each_configuration_gets_its_own_batch_and_repeats_their_own_ids(tmp_path):
    async with SimServer(fleet()) as sim:
        configs = [load_config(providers(tmp_path, sim.base_url, name=n)) for n in ("p", "q")]
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 2), configs, store, progress=False, batch=True, repeats=2
            )
            journaled = store.batches(summary.run_id)
        batches = sim.batches()
    assert summary.passed == 8
    assert sorted(b.config for b in journaled) == ["p", "q"] and len(batches) == 2
    for batch in batches:
        assert sorted(batch["keys"]) == ["0:0:e0", "0:0:e1", "1:0:e0", "1:0:e1"]


async def test_run_prompt_set_refuses_batch_on_ray_before_anything_starts(tmp_path):
    from workbench.eval.engines.ray.engine import RayEngine

    config = load_config(providers(tmp_path, "http://127.0.0.1:9"))
    with Store.open(tmp_path / "run.duckdb") as store:
        with pytest.raises(ConfigError) as info:
            await run_prompt_set(
                echo_set(tmp_path, 1), config, store, engine=RayEngine(2), batch=True
            )
        assert store.latest_run() is None
    assert info.value.code == "BATCH_ENGINE"


def provider_error(kind: str, status: int = 0) -> ProviderError:
    return ProviderError(f"the vendor's bad moment ({kind})", kind=kind, status_code=status)


async def test_a_failed_read_of_a_finished_batch_is_read_again_not_sent_again(
    tmp_path, monkeypatch
):
    real, calls = OpenAIBatch.results, []

    async def flaky(self, state, requests, **kw):
        calls.append(state.batch_id)
        if len(calls) == 1:  # the output file's download answers 503 once
            raise provider_error("outage", 503)
        return await real(self, state, requests, **kw)

    monkeypatch.setattr(OpenAIBatch, "results", flaky)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
            [journaled] = store.batches(summary.run_id)
        batches = sim.batches()
    assert len(batches) == 1 and len(calls) == 2  # paid once, read twice
    assert summary.passed == 3 and journaled.status == "collected"


async def test_a_tool_loop_in_batch_mode_is_bounded_by_its_turns_not_by_the_clock(
    tmp_path, monkeypatch
):
    # A batch round takes minutes to a day: the loop's 60 s (+ --max-wait) would end it after
    # one slow round, and the item would be graded on a shorter conversation.
    import workbench.eval.run.jobs as jobs

    real, bounds = jobs.run_tool_loop, []

    async def noting(*args, **kw):
        bounds.append(kw["max_s"])
        return await real(*args, **kw)

    monkeypatch.setattr(jobs, "run_tool_loop", noting)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            await run_prompt_set(SMOKE, config, store, progress=False, batch=True)
            synchronous = len(bounds)
            await run_prompt_set(SMOKE, config, store, progress=False)
    assert synchronous > 0 and all(b == float("inf") for b in bounds[:synchronous])
    assert all(b < float("inf") for b in bounds[synchronous:])  # one by one: as before


async def test_a_submit_refused_for_the_vendors_reasons_is_tried_again_after_a_pause(
    tmp_path, monkeypatch
):
    real, calls = OpenAIBatch.submit, []

    async def refused_once(self, requests, *, label=""):
        calls.append(label)
        if len(calls) == 1:  # OpenAI's enqueued-token limit: a 429 on /batches
            raise provider_error("rate_limit", 429)
        return await real(self, requests, label=label)

    monkeypatch.setattr(OpenAIBatch, "submit", refused_once)
    monkeypatch.setattr("workbench.eval.run.batch_mode.SUBMIT_PAUSE_S", 0.01)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
        batches = sim.batches()
    assert len(calls) == 2 and len(batches) == 1
    assert summary.passed == 3 and summary.failed == 0


async def test_a_submit_the_vendor_keeps_refusing_leaves_its_items_unanswered(
    tmp_path, monkeypatch
):
    async def refused(self, requests, *, label=""):
        raise provider_error("rate_limit", 429)

    monkeypatch.setattr(OpenAIBatch, "submit", refused)
    monkeypatch.setattr("workbench.eval.run.batch_mode.SUBMIT_PAUSE_S", 0.01)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
            outputs = store.outputs_for(summary.run_id)
            assert store.batches(summary.run_id) == []
        assert sim.batches() == []
    assert [o.unanswered for o in outputs] == ["rate_limit"] * 3
    assert summary.failed == 0 and summary.unanswered == {"rate_limit": 3}


@pytest.mark.parametrize("vendor", ["openai", "gemini"])
async def test_a_submit_whose_reply_was_lost_finds_the_batch_it_made_and_pays_once(
    tmp_path, monkeypatch, vendor
):
    from workbench.providers.batch_api import GeminiBatch

    api = OpenAIBatch if vendor == "openai" else GeminiBatch
    real, labels = api.submit, []

    async def made_then_timed_out(self, requests, *, label=""):
        labels.append(label)
        await real(self, requests, label=label)  # the vendor made it and bills it...
        raise provider_error("timeout")  # ...but its reply never came back

    monkeypatch.setattr(api, "submit", made_then_timed_out)
    async with SimServer(fleet()) as sim:
        path = providers(tmp_path, sim.base_url)
        config = load_config(
            path if vendor == "openai" else gemini_providers(tmp_path, sim.base_url)
        )
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
            [journaled] = store.batches(summary.run_id)
        [batch] = sim.batches()
    assert labels == [f"{summary.run_id}:{config.name}:1"]
    assert journaled.batch_id.endswith(batch["id"]) and journaled.status == "collected"
    assert summary.passed == 3


async def test_a_batch_that_cannot_be_polled_is_given_up_and_its_items_left_unanswered(
    tmp_path, monkeypatch
):
    async def down(self, batch_id):
        raise provider_error("outage", 503)

    monkeypatch.setattr(OpenAIBatch, "poll", down)
    monkeypatch.setattr("workbench.eval.run.batch_mode.MAX_FAILED_READS", 2)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            run = run_prompt_set(echo_set(tmp_path, 2), config, store, progress=False, batch=True)
            summary = await asyncio.wait_for(run, 30)  # before: polled for ever
            outputs = store.outputs_for(summary.run_id)
            [journaled] = store.batches(summary.run_id)
        assert len(sim.batches()) == 1  # given up, not sent again
    assert {(o.error_code, o.unanswered) for o in outputs} == {("BATCH_FAILED", "provider_error")}
    assert journaled.status == "given_up" and "2 times in a row" in (journaled.message or "")


async def test_a_batch_not_over_within_its_window_is_given_up(tmp_path, monkeypatch):
    monkeypatch.setattr(OpenAIBatch, "window_s", 0.0)
    monkeypatch.setattr("workbench.eval.run.batch_mode.WINDOW_MARGIN_S", 0.1)
    async with SimServer(fleet("[batch]\ndelay_s = 60\n")) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            run = run_prompt_set(echo_set(tmp_path, 2), config, store, progress=False, batch=True)
            summary = await asyncio.wait_for(run, 30)  # before: waited for the batch's minute
            outputs = store.outputs_for(summary.run_id)
        assert len(sim.batches()) == 1
    assert {(o.error_code, o.unanswered) for o in outputs} == {("BATCH_EXPIRED", "provider_error")}


def test_gemini_inline_answers_without_their_key_are_read_in_the_order_sent():
    from workbench.providers.batch_api import BatchState, GeminiBatch
    from workbench.providers.gemini import gemini_provider

    batch = GeminiBatch(gemini_provider(url="http://vendor.test", models=["m"]), "m", None)

    def answer(text: str) -> dict:
        parts = [{"text": text}]
        return {"response": {"candidates": [{"content": {"parts": parts}, "finishReason": "STOP"}]}}

    inline = [answer(t) for t in ("A", "B", "C")]  # no key: only the position says whose
    state = BatchState("batches/1", "completed", "BATCH_STATE_SUCCEEDED", detail={
        "response": {"inlinedResponses": {"inlinedResponses": inline}}
    })  # fmt: skip
    # A resumed run waits for two of the three, in the order its jobs asked.
    asked = {"c": ChatRequest(messages=[]), "b": ChatRequest(messages=[])}
    found = asyncio.run(batch.results(state, asked, submitted=("a", "b", "c")))
    assert found.replies["b"].text == "B" and found.replies["c"].text == "C"
    assert found.unmatched == ["a"]


def test_cancelled_lines_are_read_as_cancelled_by_both_vendors():
    from workbench.providers.batch_api import BatchResults, BatchState, GeminiBatch
    from workbench.providers.gemini import gemini_provider

    asked = {"x": ChatRequest(messages=[])}
    openai = OpenAIBatch(
        openai_compatible_provider("v", "http://vendor.test/v1", None, ["m"]), "m", None
    )
    found = BatchResults()
    openai._line(found, {"custom_id": "x", "error": {"code": "batch_cancelled"}}, asked)
    assert found.cancelled == {"x"} and found.replies == {}
    gemini = GeminiBatch(gemini_provider(url="http://vendor.test", models=["m"]), "m", None)
    line = {"key": "x", "error": {"code": 1, "status": "CANCELLED"}}
    state = BatchState(
        "batches/1", "completed", "x", detail={"response": {"inlinedResponses": [line]}}
    )
    found = asyncio.run(gemini.results(state, asked))
    assert found.cancelled == {"x"} and found.replies == {}


@pytest.mark.parametrize("left", ["expired", "cancelled"])
async def test_a_line_the_vendor_did_not_run_is_said_as_it_was(tmp_path, monkeypatch, left):
    # A batch whose overall state is "completed" may still name lines it never reached
    # (expired: sent once more, BATCH_EXPIRED) or never ran (cancelled: not sent behind the
    # canceller's back, unanswered).
    real, calls = OpenAIBatch.results, []

    async def one_left(self, state, requests, **kw):
        found = await real(self, state, requests, **kw)
        calls.append(state.batch_id)
        if len(calls) == 1:
            cid = sorted(found.replies)[0]
            del found.replies[cid]
            getattr(found, left).add(cid)
        return found

    monkeypatch.setattr(OpenAIBatch, "results", one_left)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
            outputs = store.outputs_for(summary.run_id)
            [code] = store.con.execute(
                "SELECT error_code FROM attempts WHERE run_id = ? AND outcome = 'error'",
                [summary.run_id],
            ).fetchall()[0]
        batches = sim.batches()
    if left == "expired":
        assert code == "BATCH_EXPIRED" and len(batches) == 2 and summary.passed == 3
    else:
        assert code == "BATCH_FAILED" and len(batches) == 1 and summary.passed == 2
        assert [o.unanswered for o in outputs if o.error_code] == ["provider_error"]


async def test_a_round_cut_in_parts_labels_each_part_apart(tmp_path, monkeypatch):
    real, labels = OpenAIBatch.submit, []

    async def noting(self, requests, *, label=""):
        labels.append((label, len(requests)))
        return await real(self, requests, label=label)

    monkeypatch.setattr(OpenAIBatch, "submit", noting)
    monkeypatch.setattr("workbench.eval.run.batch_mode.MAX_REQUESTS", 2)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            summary = await run_prompt_set(
                echo_set(tmp_path, 3), config, store, progress=False, batch=True
            )
            journaled = store.batches(summary.run_id)
        assert len(sim.batches()) == 2
    run = summary.run_id
    assert labels == [(f"{run}:p:1", 2), (f"{run}:p:1.1", 1)]
    assert [b.round for b in journaled] == [1, 1] and summary.passed == 3


async def test_batch_pricing_follows_the_calls_a_batch_answered_not_the_runs_flag(tmp_path):
    # A run recorded as --batch whose calls went one by one (resumed with --batch, answered
    # from elsewhere) is billed in full; only the calls naming a batch are billed at half.
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        with Store.open(tmp_path / "run.duckdb") as store:
            alone = await run_prompt_set(echo_set(tmp_path, 2), config, store, progress=False)
            prices = {"sim-native": (2.0, 8.0)}
            full = RunFrames(store).usage(alone.run_id, prices=prices).iloc[0]["cost_usd"]
            store.con.execute(
                "UPDATE runs SET config = json_merge_patch(config, '{\"batch\": true}') "
                "WHERE run_id = ?",
                [alone.run_id],
            )
            flagged = RunFrames(store).usage(alone.run_id, prices=prices).iloc[0]["cost_usd"]
            # One item's call named a batch: that item's tokens alone are billed at half.
            store.con.execute(
                "UPDATE attempts SET batch_id = 'b1' WHERE run_id = ? AND item_id = 'e0'",
                [alone.run_id],
            )
            usage = RunFrames(store).usage(alone.run_id, prices=prices).iloc[0]
            [e0_in, e0_out] = store.con.execute(
                "SELECT tokens_in, tokens_out FROM outputs WHERE run_id = ? AND item_id = 'e0'",
                [alone.run_id],
            ).fetchall()[0]
    assert flagged == pytest.approx(full) and full > 0
    half = (e0_in * 2.0 + e0_out * 8.0) / 1e6 / 2
    assert usage["cost_usd"] == pytest.approx(full - half)


async def test_a_batch_given_up_is_read_by_the_resume_not_paid_for_again(tmp_path, monkeypatch):
    real = OpenAIBatch.poll

    async def down(self, batch_id):
        raise provider_error("outage", 503)

    monkeypatch.setattr(OpenAIBatch, "poll", down)
    monkeypatch.setattr("workbench.eval.run.batch_mode.MAX_FAILED_READS", 2)
    async with SimServer(fleet()) as sim:
        config = load_config(providers(tmp_path, sim.base_url))
        data = echo_set(tmp_path, 2)
        with Store.open(tmp_path / "run.duckdb") as store:
            first = await run_prompt_set(data, config, store, progress=False, batch=True)
            monkeypatch.setattr(OpenAIBatch, "poll", real)  # the vendor is back
            again = await run_prompt_set(data, config, store, progress=False, resume=first.run_id)
            outputs = store.outputs_for(first.run_id)
            [journaled] = store.batches(first.run_id)
        assert len(sim.batches()) == 1
    assert first.unanswered == {"provider_error": 2} and again.passed == 2
    assert all(o.passed and o.unanswered is None for o in outputs)
    assert journaled.status == "collected"
