"""OpenAI's Batch API on the simulator, driven by the official `openai` SDK over real HTTP to a
simulator process: files in, a batch through its states, output and error files out."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI
from simhelp import PROBE, WEATHER_TOOL, image_message

from workbench.sim.png import encode_png
from workbench.sim.process import SimProcess

pytestmark = pytest.mark.sdk

PERSONAS = """
[[persona]]
id = "steady"
tool_style = "native"
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0

[[persona]]
id = "flaky"
latency_ms = 0
latency_jitter_ms = 0

[[persona]]
id = "blind"
vision = false
latency_ms = 0
latency_jitter_ms = 0

[[persona]]
id = "groq-30"
rate_limit_style = "groq"
rpm = 2
latency_ms = 0
latency_jitter_ms = 0
"""

FLEET = (
    """
seed = 7
[batch]
delay_s = 1.0
[batch.failures]
flaky = [{ kind = "500", at = [2] }]
"""
    + PERSONAS
)

EXPIRING_FLEET = (
    """
seed = 7
[batch]
delay_s = 1.0
expire_after_s = 0.6
"""
    + PERSONAS
)

ENDED = ("completed", "failed", "expired", "cancelled")
ORDER = ["validating", "in_progress", "finalizing", "completed"]


@pytest.fixture(scope="module")
def proc() -> Iterator[SimProcess]:
    with SimProcess(fleet_toml=FLEET) as sim:
        yield sim


@pytest.fixture
def sim(proc: SimProcess) -> SimProcess:
    proc.reset()
    return proc


def client(sim: SimProcess) -> OpenAI:
    return OpenAI(base_url=sim.openai_url, api_key="sim-key", max_retries=0)


def line(custom_id: str, body: dict[str, Any], url: str = "/v1/chat/completions") -> str:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})


def upload(c: OpenAI, lines: list[str], purpose: str = "batch") -> str:
    data = ("\n".join(lines) + "\n").encode()
    return c.files.create(file=("input.jsonl", io.BytesIO(data)), purpose=purpose).id  # type: ignore[arg-type]


def submit(c: OpenAI, lines: list[str], **kw: Any) -> Any:
    return c.batches.create(
        input_file_id=upload(c, lines),
        endpoint="/v1/chat/completions",
        completion_window="24h",
        **kw,
    )


def wait(c: OpenAI, batch_id: str, seen: list[str] | None = None) -> Any:
    deadline = time.monotonic() + 20
    while True:
        batch = c.batches.retrieve(batch_id)
        if seen is not None and (not seen or seen[-1] != batch.status):
            seen.append(batch.status)
        if batch.status in ENDED:
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.status}"
        time.sleep(0.02)


def jsonl(c: OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(x) for x in c.files.content(file_id).text.splitlines() if x.strip()]


BODIES: list[dict[str, Any]] = [
    {"model": "steady", "messages": [{"role": "user", "content": "Reply with exactly: one"}]},
    {"model": "steady", "messages": [{"role": "user", "content": PROBE}], "tools": [WEATHER_TOOL]},
    {
        "model": "steady",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is the capital of Italy?"},
        ],
        "max_tokens": 64,
    },
]


def test_a_completed_batch_answers_each_line_as_the_synchronous_endpoint_does(sim) -> None:
    c = client(sim)
    created = submit(c, [line(f"q{i}", b) for i, b in enumerate(BODIES)], metadata={"run": "r1"})
    assert created.status == "validating" and created.id.startswith("batch_")
    assert created.object == "batch" and created.metadata == {"run": "r1"}
    assert created.expires_at == created.created_at + 24 * 3600
    assert created.request_counts is not None and created.request_counts.total == 0
    seen: list[str] = []
    done = wait(c, created.id, seen)
    assert seen == [s for s in ORDER if s in seen] and seen[-1] == "completed"
    assert done.in_progress_at and done.finalizing_at and done.completed_at
    assert created.created_at <= done.in_progress_at <= done.finalizing_at <= done.completed_at
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed) == (3, 3)
    assert done.request_counts.failed == 0 and done.error_file_id is None
    assert done.model == "steady" and done.usage is not None and done.usage.total_tokens > 0
    out = jsonl(c, done.output_file_id)
    assert [row["custom_id"] for row in out] == ["q0", "q1", "q2"]
    assert all(row["error"] is None and row["response"]["status_code"] == 200 for row in out)
    assert all(row["id"].startswith("batch_req_") for row in out)

    # The same requests, asked synchronously of a freshly reset simulator, get the same
    # answers: text, tool calls (their ids too), finish reasons and usage.
    sim.reset()
    for row, body in zip(out, BODIES, strict=True):
        sync = c.chat.completions.with_raw_response.create(**body).http_response.json()
        batch_body = row["response"]["body"]
        for part in ("choices", "usage", "model", "object"):
            assert batch_body[part] == sync[part]
    assert out[1]["response"]["body"]["choices"][0]["message"]["tool_calls"]


def test_partial_failures_go_to_the_error_file_with_the_synchronous_status_and_body(sim) -> None:
    c = client(sim)
    flaky = wait(
        c,
        submit(c, [line(f"f{i}", {**BODIES[0], "model": "flaky"}) for i in range(3)]).id,
    )
    assert flaky.status == "completed"
    assert flaky.request_counts is not None
    assert (flaky.request_counts.completed, flaky.request_counts.failed) == (2, 1)
    assert [r["custom_id"] for r in jsonl(c, flaky.output_file_id)] == ["f0", "f2"]
    (failed,) = jsonl(c, flaky.error_file_id)
    assert failed["custom_id"] == "f1" and failed["error"] is None
    assert failed["response"]["status_code"] == 500

    # A request the persona refuses fails its line exactly as the synchronous call fails.
    png = encode_png(8, 8, (200, 30, 30))
    seeing = {"model": "blind", "messages": [image_message("What colour is this?", png)]}
    blind = wait(
        c, submit(c, [line("text", {**BODIES[0], "model": "blind"}), line("image", seeing)]).id
    )
    (refused,) = jsonl(c, blind.error_file_id)
    assert refused["custom_id"] == "image"
    with pytest.raises(openai.BadRequestError) as sync:
        c.chat.completions.create(**seeing)
    assert refused["response"]["status_code"] == sync.value.status_code == 400
    assert refused["response"]["body"] == sync.value.response.json()


def test_an_invalid_input_file_fails_the_batch_naming_each_bad_line(sim) -> None:
    c = client(sim)
    lines = [
        line("a", BODIES[0]),
        "{not json",
        line("a", BODIES[0]),
        line("b", BODIES[0], url="/v1/embeddings"),
        line("c", {**BODIES[0], "model": "no-such-model"}),
        line("d", {**BODIES[0], "model": "flaky"}),
    ]
    created = submit(c, lines)
    assert created.status == "validating"
    done = wait(c, created.id)
    assert done.status == "failed" and done.failed_at and done.in_progress_at is None
    assert done.errors is not None and done.errors.data is not None
    found = [(e.code, e.line) for e in done.errors.data]
    assert found == [
        ("invalid_json_line", 2),
        ("duplicate_custom_id", 3),
        ("invalid_url", 4),
        ("model_not_found", 5),
        ("mismatched_model", 6),
    ]
    assert done.output_file_id is None and done.error_file_id is None
    assert done.request_counts is not None and done.request_counts.total == 0
    # Nothing ran: the batch log holds the batch as submitted, invalid.
    (logged,) = sim.batches()
    assert logged["id"] == done.id and logged["valid"] is False


def test_a_cancelled_batch_keeps_what_ran_and_reports_the_rest(sim) -> None:
    c = client(sim)
    created = submit(c, [line(f"c{i}", BODIES[0]) for i in range(4)])
    cancelling = c.batches.cancel(created.id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at
    done = wait(c, created.id)
    assert done.status == "cancelled" and done.cancelled_at and done.completed_at is None
    assert done.request_counts is not None
    assert done.request_counts.completed + done.request_counts.failed == 4
    ran = {r["custom_id"] for r in jsonl(c, done.output_file_id)}
    skipped = jsonl(c, done.error_file_id)
    assert {r["custom_id"] for r in skipped} | ran == {"c0", "c1", "c2", "c3"}
    assert skipped and all(r["error"]["code"] == "batch_cancelled" for r in skipped)
    assert all(r["response"] is None for r in skipped)
    # An ended batch cannot be cancelled; cancelling twice is harmless.
    assert c.batches.cancel(created.id).status == "cancelled"
    finished = wait(c, submit(c, [line("x", BODIES[0])]).id)
    with pytest.raises(openai.BadRequestError, match="completed"):
        c.batches.cancel(finished.id)


def test_a_batch_past_its_window_expires_with_the_lines_that_ran() -> None:
    with SimProcess(fleet_toml=EXPIRING_FLEET) as sim:
        c = client(sim)
        created = submit(c, [line(f"e{i}", BODIES[0]) for i in range(4)])
        assert created.expires_at is not None and created.expires_at < created.created_at + 60
        seen: list[str] = []
        done = wait(c, created.id, seen)
        assert done.status == "expired" and done.expired_at and seen[0] == "validating"
        assert "finalizing" not in seen and done.completed_at is None
        # Lines finish in order across the run: by 0.6 of it the first two have.
        assert [r["custom_id"] for r in jsonl(c, done.output_file_id)] == ["e0", "e1"]
        expired = jsonl(c, done.error_file_id)
        assert [r["custom_id"] for r in expired] == ["e2", "e3"]
        assert all(r["error"]["code"] == "batch_expired" and r["response"] is None for r in expired)
        assert done.request_counts is not None
        assert (done.request_counts.completed, done.request_counts.failed) == (2, 2)


def test_batch_lines_skip_the_rate_limits_and_the_request_log(sim) -> None:
    c = client(sim)
    body = {**BODIES[0], "model": "groq-30"}  # 2 requests a minute
    done = wait(c, submit(c, [line(f"r{i}", body) for i in range(5)]).id)
    assert done.request_counts is not None and done.request_counts.completed == 5
    assert c.chat.completions.create(**body).choices[0].message.content == "one"
    chats = [r for r in sim.requests() if r["path"].endswith("/chat/completions")]
    assert len(chats) == 1
    (logged,) = sim.batches()
    assert logged["keys"] == [f"r{i}" for i in range(5)] and logged["vendor"] == "openai"


def test_lists_page_with_limit_and_after_and_files_can_be_deleted(sim) -> None:
    c = client(sim)
    ids = [submit(c, [line("x", BODIES[0])]).id for _ in range(3)]
    page = c.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[::-1][:2] and page.has_more
    assert [b.id for b in c.batches.list(limit=2)] == ids[::-1]  # the SDK follows `after`
    assert {f.purpose for f in c.files.list(purpose="batch")} == {"batch"}
    file_id = upload(c, [line("y", BODIES[0])])
    assert c.files.retrieve(file_id).bytes > 0
    assert c.files.delete(file_id).deleted is True
    with pytest.raises(openai.NotFoundError):
        c.files.retrieve(file_id)
    assert len(sim.batches()) == 3


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"endpoint": "/v1/embeddings"}, "endpoint"),
        ({"completion_window": "1h"}, "completion_window"),
        ({"input_file_id": "file-nothing"}, "input_file_id"),
    ],
)
def test_a_bad_batch_request_is_refused_with_the_parameter_named(sim, change, param) -> None:
    c = client(sim)
    args = {
        "input_file_id": upload(c, [line("x", BODIES[0])]),
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        **change,
    }
    with pytest.raises(openai.BadRequestError) as refused:
        c.batches.create(**args)
    assert refused.value.param == param
    assert sim.batches() == []


def test_bad_uploads_and_unknown_ids_are_refused(sim) -> None:
    c = client(sim)
    with pytest.raises(openai.BadRequestError):
        c.files.create(file=("x.jsonl", io.BytesIO(b"{}")), purpose="nonsense")  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError):
        c.batches.retrieve("batch_nothing")
    with pytest.raises(openai.NotFoundError):
        c.files.content("file-nothing")
    txt = c.files.create(
        file=("x.jsonl", io.BytesIO(line("x", BODIES[0]).encode())), purpose="user_data"
    )
    with pytest.raises(openai.BadRequestError, match="purpose"):
        c.batches.create(
            input_file_id=txt.id, endpoint="/v1/chat/completions", completion_window="24h"
        )


async def test_the_async_client_runs_a_batch_too(sim) -> None:
    c = openai.AsyncOpenAI(base_url=sim.openai_url, api_key="sim-key", max_retries=0)
    data = line("only", BODIES[0]).encode()
    uploaded = await c.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
    batch = await c.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    while batch.status not in ENDED:
        await asyncio.sleep(0.02)
        batch = await c.batches.retrieve(batch.id)
    assert batch.status == "completed" and batch.output_file_id
    (row,) = [
        json.loads(x) for x in (await c.files.content(batch.output_file_id)).text.splitlines()
    ]
    assert row["response"]["body"]["choices"][0]["message"]["content"] == "one"
