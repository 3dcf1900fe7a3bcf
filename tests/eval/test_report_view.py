"""`workbench view`: the report served from the DuckDB file — the same page and chunks the
writer writes, read-only, one bounded read per chunk, and the refusals as one line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from workbench.cli import main
from workbench.eval.report.chunks import SINGLE_FILE_MAX
from workbench.eval.report.page import write_report
from workbench.eval.report.server import ViewedRun, create_app
from workbench.eval.store.synthetic import synthesize_run

ITEMS = SINGLE_FILE_MAX + 500


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "view.duckdb"
    synthesize_run(path, ITEMS)
    return path


def _chunk(text: str) -> dict:
    assert text.startswith("workbenchData(") and text.endswith(");\n")
    return json.loads(text[len("workbenchData(") : -3])


async def test_the_server_serves_what_the_writer_writes(db, tmp_path):
    page = write_report(db, "synthetic", tmp_path)
    viewed = ViewedRun.open(db)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(viewed)), base_url="http://view"
        ) as client:
            index = await client.get("/")
            rows = await client.get("/data/rows-00000.js")
            stories = await client.get("/data/stories-00005.js")
            missing = [
                (await client.get(path)).status_code
                for path in (
                    "/data/rows-00001.js",  # past the last chunk
                    "/data/stories-00006.js",
                    "/data/rows-1.js",  # not a chunk's name
                    "/data/../workbench.duckdb",
                    "/data/stories--0001.js",
                )
            ]
    finally:
        viewed.close()
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert rows.headers["content-type"].startswith("text/javascript")
    written = page.parent / "data"
    assert _chunk(rows.text) == _chunk((written / "rows-00000.js").read_text(encoding="utf-8"))
    assert _chunk(stories.text) == _chunk(
        (written / "stories-00005.js").read_text(encoding="utf-8")
    )
    assert _chunk(stories.text)["start"] == 5_000
    assert missing == [404] * 5
    # The page differs only in when it was written.
    strip = lambda text: text[: text.index("<footer>")]  # noqa: E731
    assert strip(index.text) == strip(page.read_text(encoding="utf-8"))


def test_an_unknown_run_a_missing_file_and_a_foreign_file_are_one_line_each(db, tmp_path, capsys):
    foreign = tmp_path / "foreign.duckdb"
    foreign.write_bytes(b"not a database at all" * 100)
    assert main(["view", "no-such-run", "--db", str(db)]) == 2
    assert main(["view", "--db", str(tmp_path / "missing.duckdb")]) == 2
    assert main(["view", "--db", str(foreign)]) == 2
    assert main(["view", "--db", str(db), "--port", "70000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[1].strip() for line in err] == [
        "RUN_UNKNOWN",
        "STORE_NOT_FOUND",
        "STORE_UNREADABLE",
        "VIEW_INVALID",
    ]


def test_the_command_serves_the_page_and_a_chunk_on_loopback(db):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "view", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("report of run synthetic at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split(",", 1)[0]
        deadline = time.monotonic() + 10
        while True:
            try:
                index = httpx.get(url, timeout=5)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        chunk = httpx.get(url + "data/stories-00000.js", timeout=10)
        assert index.status_code == 200 and "workbench run synthetic" in index.text
        assert _chunk(chunk.text)["count"] == 1_000
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode in (0, -15)
