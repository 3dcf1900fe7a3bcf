"""The batch endpoints' edges: keys, junk uploads, which vendor a /v1 path belongs to, and
the batch log's helpers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from workbench.sim import SimServer

FLEET = """
seed = 3
require_key = true
[batch]
delay_s = 0.2
[batch.failures]
p = [{ kind = "503", rate = 0.5 }]
[[persona]]
id = "p"
latency_ms = 0
latency_jitter_ms = 0
"""
OPENAI_KEY = {"authorization": "Bearer sim-key"}
GOOGLE_KEY = {"x-goog-api-key": "sim-key"}


@pytest.fixture(scope="module")
def server() -> Iterator[SimServer]:
    with SimServer(FLEET) as sim:
        yield sim


@pytest.fixture
def sim(server: SimServer) -> SimServer:
    server.reset()
    return server


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/files", 401),
        ("GET", "/v1/batches", 401),
        ("POST", "/v1/batches/batch_x/cancel", 401),
        ("GET", "/v1beta/batches", 403),
        ("GET", "/v1beta/files", 403),
        ("POST", "/upload/v1beta/files", 403),
        ("POST", "/v1beta/models/p:batchGenerateContent", 403),
    ],
)
def test_a_keyless_batch_request_is_refused_when_the_fleet_wants_keys(
    sim: SimServer, method: str, path: str, status: int
) -> None:
    assert httpx.request(method, sim.base_url + path).status_code == status


def test_a_v1_path_is_googles_when_it_carries_googles_key(sim: SimServer) -> None:
    openai = httpx.get(sim.base_url + "/v1/files", headers=OPENAI_KEY).json()
    google = httpx.get(sim.base_url + "/v1/files", headers=GOOGLE_KEY).json()
    assert openai["object"] == "list" and "files" not in openai
    assert google == {"files": []}
    assert httpx.get(sim.base_url + "/v2/files", headers=OPENAI_KEY).status_code == 404


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"content-type": "application/json"}, b"{}"),
        ({"content-type": "multipart/form-data; boundary=zz"}, b"junk"),
        ({"content-type": "multipart/form-data"}, b"--x\r\n\r\n"),
    ],
)
def test_a_junk_upload_is_a_400_never_a_crash(sim: SimServer, headers, body) -> None:
    got = httpx.post(sim.base_url + "/v1/files", headers=OPENAI_KEY | headers, content=body)
    assert got.status_code == 400 and got.json()["error"]["type"] == "invalid_request_error"


def test_a_resumable_upload_checks_its_offsets(sim: SimServer) -> None:
    start = httpx.post(
        sim.base_url + "/upload/v1beta/files",
        headers=GOOGLE_KEY
        | {"x-goog-upload-protocol": "resumable", "x-goog-upload-command": "start"},
        json={"file": {"display_name": "d"}},
    )
    url = start.headers["x-goog-upload-url"]
    chunk = GOOGLE_KEY | {"x-goog-upload-command": "upload", "x-goog-upload-offset": "0"}
    assert httpx.post(url, headers=chunk, content=b"ab").headers["x-goog-upload-status"] == "active"
    wrong = chunk | {"x-goog-upload-command": "upload, finalize", "x-goog-upload-offset": "5"}
    assert httpx.post(url, headers=wrong, content=b"c").status_code == 400
    right = wrong | {"x-goog-upload-offset": "2"}
    done = httpx.post(url, headers=right, content=b"c")
    assert done.headers["x-goog-upload-status"] == "final"
    name = done.json()["file"]["name"]
    assert done.json()["file"]["sizeBytes"] == "3"
    download = f"{sim.base_url}/download/v1beta/{name}:download?alt=media"
    assert httpx.get(download, headers=GOOGLE_KEY).content == b"abc"
    assert httpx.post(url, headers=right, content=b"c").status_code == 400  # session ended


def test_the_batch_log_and_fleet_say_what_was_submitted(sim: SimServer) -> None:
    line = {"request": {"contents": [{"parts": [{"text": "hi"}]}]}, "metadata": {"key": "k"}}
    body = {"batch": {"input_config": {"requests": {"requests": [line, line]}}}}
    url = sim.base_url + "/v1beta/models/p:batchGenerateContent"
    op = httpx.post(url, headers=GOOGLE_KEY, json=body).json()
    assert op["done"] is False and op["metadata"]["state"] == "BATCH_STATE_PENDING"
    (logged,) = sim.batches()
    assert logged["id"] == op["name"].removeprefix("batches/") and logged["keys"] == ["k", "k"]
    fleet = httpx.get(sim.base_url + "/sim/fleet").json()
    assert fleet["batch"]["delay_s"] == 0.2
    assert fleet["batch"]["failures"]["p"][0] == {"kind": "503", "at": [], "rate": 0.5}
    sim.reset()
    assert sim.batches() == [] and json.loads(httpx.get(sim.base_url + "/sim/batches").text) == []


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", "empty_file"),
        (b"\n  \n", "empty_file"),
        (b"\xff\xfe\x00garbage", "invalid_json_line"),
        (b"[1, 2]", "invalid_json_line"),
        (
            b'{"custom_id": "a", "method": "GET", "url": "/v1/chat/completions", "body": {}}',
            "invalid_method",
        ),
        (
            b'{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions"}',
            "missing_required_parameter",
        ),
        (
            b'{"custom_id": 7, "method": "POST", "url": "/v1/chat/completions", "body": {}}',
            "missing_required_parameter",
        ),
    ],
)
def test_a_malformed_input_file_fails_its_batch_and_never_the_server(
    sim: SimServer, data: bytes, code: str
) -> None:
    files = {"file": ("in.jsonl", data), "purpose": (None, b"batch")}
    uploaded = httpx.post(sim.base_url + "/v1/files", headers=OPENAI_KEY, files=files).json()
    created = httpx.post(
        sim.base_url + "/v1/batches",
        headers=OPENAI_KEY,
        json={
            "input_file_id": uploaded["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        },
    ).json()
    assert created["status"] == "validating" and created["errors"] is None
    url = f"{sim.base_url}/v1/batches/{created['id']}"
    while (got := httpx.get(url, headers=OPENAI_KEY).json())["status"] == "validating":
        time.sleep(0.01)
    assert got["status"] == "failed"
    assert [e["code"] for e in got["errors"]["data"]] == [code]
