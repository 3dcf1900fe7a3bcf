"""Gemini's batch mode on the simulator, driven by the official `google-genai` SDK over real
HTTP to a simulator process: inline requests or an uploaded file in, a batch through its
states, inlined responses or a responses file out."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

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
id = "gemini-2"
rate_limit_style = "gemini"
rpm = 2
latency_ms = 0
latency_jitter_ms = 0
"""
FLEET = (
    '\nseed = 7\n[batch]\ndelay_s = 1.0\n[batch.failures]\nflaky = [{ kind = "500", at = [2] }]\n'
)
EXPIRING = "\nseed = 7\n[batch]\ndelay_s = 1.0\nexpire_after_s = 0.6\n"

ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}
ORDER = ["JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Current weather for a city",
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"city": types.Schema(type=types.Type.STRING)},
                required=["city"],
            ),
        )
    ]
)


@pytest.fixture(scope="module")
def proc() -> Iterator[SimProcess]:
    with SimProcess(fleet_toml=FLEET + PERSONAS) as sim:
        yield sim


@pytest.fixture
def sim(proc: SimProcess) -> SimProcess:
    proc.reset()
    return proc


def client(sim: SimProcess) -> genai.Client:
    return genai.Client(api_key="sim-key", http_options=types.HttpOptions(base_url=sim.base_url))


def wait(c: genai.Client, name: str, seen: list[str] | None = None) -> types.BatchJob:
    deadline = time.monotonic() + 20
    while True:
        job = c.batches.get(name=name)
        state = job.state.value if job.state else ""
        if seen is not None and (not seen or seen[-1] != state):
            seen.append(state)
        if state in ENDED:
            return job
        assert time.monotonic() < deadline, f"batch still {state}"
        time.sleep(0.02)


def ask(text: str, key: str, **config: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
    if config:
        request["config"] = config
    return {**request, "metadata": {"key": key}}


REQUESTS = [
    ask("Reply with exactly: one", "a"),
    ask("What is the weather in Paris? Use a tool if you have one.", "b", tools=[WEATHER]),
    ask("What is the capital of Italy?", "c", system_instruction="Be brief."),
]


def test_inline_requests_are_answered_as_generate_content_answers_them(sim) -> None:
    c = client(sim)
    created = c.batches.create(model="steady", src=REQUESTS, config={"display_name": "three"})
    assert created.name and created.name.startswith("batches/")
    assert created.state == types.JobState.JOB_STATE_PENDING and created.display_name == "three"
    seen: list[str] = []
    done = wait(c, created.name, seen)
    assert seen == [s for s in ORDER if s in seen] and seen[-1] == "JOB_STATE_SUCCEEDED"
    assert done.model == "models/steady" and done.end_time and done.create_time
    assert done.dest is not None and done.dest.inlined_responses is not None
    answers = done.dest.inlined_responses
    assert [r.metadata for r in answers] == [{"key": "a"}, {"key": "b"}, {"key": "c"}]
    assert all(r.error is None and r.response is not None for r in answers)

    # The same requests, asked synchronously of a freshly reset simulator, get the same answers.
    sim.reset()
    for item, batch_answer in zip(REQUESTS, answers, strict=True):
        config = types.GenerateContentConfig(
            **item.get("config", {}), automatic_function_calling=NO_AFC
        )
        sync = c.models.generate_content(model="steady", contents=item["contents"], config=config)
        assert batch_answer.response is not None and sync.candidates
        got = batch_answer.response.candidates
        assert got is not None
        assert got[0].content == sync.candidates[0].content
        assert got[0].finish_reason == sync.candidates[0].finish_reason
        assert batch_answer.response.usage_metadata == sync.usage_metadata
    assert answers[1].response is not None and answers[1].response.function_calls


def test_a_file_of_requests_gives_a_responses_file(sim) -> None:
    c = client(sim)
    lines = [
        {"key": "x", "request": {"contents": [{"parts": [{"text": "Reply with exactly: ex"}]}]}},
        {"key": "y", "request": {"contents": [{"parts": [{"text": "Reply with exactly: why"}]}]}},
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    uploaded = c.files.upload(
        file=io.BytesIO(data), config={"mime_type": "application/jsonl", "display_name": "in"}
    )
    assert uploaded.name and uploaded.name.startswith("files/")
    assert uploaded.size_bytes == len(data) and uploaded.state == types.FileState.ACTIVE
    assert c.files.get(name=uploaded.name).display_name == "in"
    done = wait(c, c.batches.create(model="models/steady", src=uploaded.name).name or "")
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED
    assert done.dest is not None and done.dest.file_name
    rows = [json.loads(x) for x in c.files.download(file=done.dest.file_name).splitlines()]
    assert [r["key"] for r in rows] == ["x", "y"]
    texts = [r["response"]["candidates"][0]["content"]["parts"][0]["text"] for r in rows]
    assert texts == ["ex", "why"]
    assert c.files.get(name=done.dest.file_name).source == types.FileSource.GENERATED
    (logged,) = sim.batches()
    assert logged["vendor"] == "gemini" and logged["keys"] == ["x", "y"]


def test_failed_lines_carry_the_status_the_synchronous_call_gets(sim) -> None:
    c = client(sim)
    flaky = wait(c, c.batches.create(model="flaky", src=REQUESTS[:1] * 3).name or "")
    assert flaky.state == types.JobState.JOB_STATE_SUCCEEDED
    assert flaky.dest is not None and flaky.dest.inlined_responses is not None
    codes = [r.error.code if r.error else 200 for r in flaky.dest.inlined_responses]
    assert codes == [200, 500, 200]

    png = encode_png(8, 8, (20, 200, 20))
    image = {
        "contents": [
            {
                "parts": [
                    {"text": "What colour?"},
                    {"inline_data": {"mime_type": "image/png", "data": png}},
                ]
            }
        ]
    }
    blind = wait(c, c.batches.create(model="blind", src=[REQUESTS[0], image]).name or "")
    assert blind.dest is not None and blind.dest.inlined_responses is not None
    ok, refused = blind.dest.inlined_responses
    assert ok.response is not None and refused.error is not None
    with pytest.raises(errors.ClientError) as sync:
        c.models.generate_content(model="blind", contents=image["contents"])
    assert refused.error.code == sync.value.code == 400
    assert refused.error.message == sync.value.message


def test_a_batch_past_its_window_expires_with_the_lines_that_ran() -> None:
    with SimProcess(fleet_toml=EXPIRING + PERSONAS) as sim:
        c = client(sim)
        requests = [ask("Reply with exactly: one", f"e{i}") for i in range(4)]
        done = wait(c, c.batches.create(model="steady", src=requests).name or "")
        assert done.state == types.JobState.JOB_STATE_EXPIRED and done.end_time
        assert done.dest is not None and done.dest.inlined_responses is not None
        got = [(r.metadata, r.error.code if r.error else 200) for r in done.dest.inlined_responses]
        assert got == [
            ({"key": "e0"}, 200),
            ({"key": "e1"}, 200),
            ({"key": "e2"}, 4),
            ({"key": "e3"}, 4),
        ]


def test_cancel_and_delete(sim) -> None:
    c = client(sim)
    created = c.batches.create(model="steady", src=REQUESTS)
    c.batches.cancel(name=created.name or "")
    job = c.batches.get(name=created.name or "")
    assert job.state == types.JobState.JOB_STATE_CANCELLED and job.end_time
    assert job.dest is not None and job.dest.inlined_responses is not None
    assert all(r.error is not None and r.error.code == 1 for r in job.dest.inlined_responses)
    c.batches.cancel(name=created.name or "")  # again: harmless
    finished = wait(c, c.batches.create(model="steady", src=REQUESTS[:1]).name or "")
    with pytest.raises(errors.ClientError) as refused:
        c.batches.cancel(name=finished.name or "")
    assert refused.value.code == 400
    c.batches.delete(name=finished.name or "")
    with pytest.raises(errors.ClientError) as gone:
        c.batches.get(name=finished.name or "")
    assert gone.value.code == 404


def test_an_invalid_input_file_fails_the_batch(sim) -> None:
    c = client(sim)
    data = b'{"key": "ok", "request": {"contents": [{"parts": [{"text": "hi"}]}]}}\n{broken\n'
    uploaded = c.files.upload(file=io.BytesIO(data), config={"mime_type": "application/jsonl"})
    done = wait(c, c.batches.create(model="steady", src=uploaded.name or "").name or "")
    assert done.state == types.JobState.JOB_STATE_FAILED and done.dest is None
    raw = httpx.get(
        f"{sim.base_url}/v1beta/{done.name}", headers={"x-goog-api-key": "sim-key"}
    ).json()
    assert raw["done"] is True and "line 2" in raw["error"]["message"].lower()
    assert sim.batches()[0]["valid"] is False


def test_bad_batch_requests_are_refused(sim) -> None:
    c = client(sim)
    with pytest.raises(errors.ClientError) as unknown:
        c.batches.create(model="no-such-model", src=REQUESTS)
    assert unknown.value.code == 404
    with pytest.raises(errors.ClientError) as missing:
        c.batches.create(model="steady", src="files/nothing")
    assert missing.value.code == 404
    headers = {"x-goog-api-key": "sim-key"}
    url = f"{sim.base_url}/v1beta/models/steady:batchGenerateContent"
    for body in ({}, {"batch": {}}, {"batch": {"input_config": {"requests": {"requests": []}}}}):
        assert httpx.post(url, json=body, headers=headers).status_code == 400
    assert sim.batches() == []


def test_batches_and_files_list_in_pages(sim) -> None:
    c = client(sim)
    names = [c.batches.create(model="steady", src=REQUESTS[:1]).name for _ in range(3)]
    listed = [b.name for b in c.batches.list(config={"page_size": 2})]
    assert listed == names[::-1]
    uploaded = c.files.upload(file=io.BytesIO(b"{}\n"), config={"mime_type": "application/jsonl"})
    assert uploaded.name in [f.name for f in c.files.list()]
    c.files.delete(name=uploaded.name or "")
    with pytest.raises(errors.ClientError):
        c.files.get(name=uploaded.name or "")


def test_batch_lines_skip_the_rate_limits_and_the_request_log(sim) -> None:
    c = client(sim)
    requests = [ask("Reply with exactly: one", f"r{i}") for i in range(5)]
    done = wait(c, c.batches.create(model="gemini-2", src=requests).name or "")  # 2 a minute
    assert done.dest is not None and done.dest.inlined_responses is not None
    assert all(r.error is None for r in done.dest.inlined_responses)
    assert (
        c.models.generate_content(model="gemini-2", contents="Reply with exactly: one").text
        == "one"
    )
    assert len([r for r in sim.requests() if r["path"].endswith(":generateContent")]) == 1
    assert [b["keys"] for b in sim.batches()] == [[f"r{i}" for i in range(5)]]


async def test_the_async_client_runs_a_batch_from_a_file_too(sim) -> None:
    c = client(sim)
    line = {"key": "z", "request": {"contents": [{"parts": [{"text": "Reply with exactly: zed"}]}]}}
    uploaded = await c.aio.files.upload(
        file=io.BytesIO(json.dumps(line).encode()), config={"mime_type": "application/jsonl"}
    )
    job = await c.aio.batches.create(model="steady", src=uploaded.name or "")
    while not job.done:
        await asyncio.sleep(0.02)
        job = await c.aio.batches.get(name=job.name or "")
    assert job.state == types.JobState.JOB_STATE_SUCCEEDED
    assert job.dest is not None and job.dest.file_name
    (row,) = [
        json.loads(x) for x in (await c.aio.files.download(file=job.dest.file_name)).splitlines()
    ]
    assert (
        row["key"] == "z"
        and row["response"]["candidates"][0]["content"]["parts"][0]["text"] == "zed"
    )
