"""`workbench view`: the report served from the DuckDB file — the same page and chunks the
writer writes, read-only, one bounded read per chunk, and the refusals as one line each; only
at the launch's secret address, to this machine's browser, never to another site's page."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from workbench.cli import main
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.report import page as report_page
from workbench.eval.report import server as report_server
from workbench.eval.report.chunks import SINGLE_FILE_MAX
from workbench.eval.report.page import write_report
from workbench.eval.report.server import ViewAddress, ViewedRun, create_app
from workbench.eval.store.synthetic import synthesize_run

ITEMS = SINGLE_FILE_MAX + 500
ADDRESS = ViewAddress("127.0.0.1", 8790, "the-launch-token")
HOME = f"/{ADDRESS.token}/"


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
        async with _client(viewed) as client:
            index = await client.get(HOME)
            rows = await client.get(HOME + "data/rows-00000.js")
            stories = await client.get(HOME + "data/stories-00005.js")
            missing = [
                (await client.get(HOME + path)).status_code
                for path in (
                    "data/rows-00001.js",  # past the last chunk
                    "data/stories-00006.js",
                    "data/rows-1.js",  # not a chunk's name
                    "data/../workbench.duckdb",
                    "data/stories--0001.js",
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


def _client(viewed: ViewedRun, base_url: str = "http://127.0.0.1:8790") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(viewed, ADDRESS)), base_url=base_url
    )


async def test_only_the_launchs_address_answers_and_never_to_another_sites_page(db):
    """A website the user visits may add <script src> of a chunk (a chunk is a script), or
    rebind its own name to 127.0.0.1: without the token, from another Host, or asked by
    another site, nothing is served, and nothing served may be embedded by another origin."""
    chunk = "data/stories-00000.js"
    viewed = ViewedRun.open(db)
    try:
        async with _client(viewed) as client:
            served = await client.get(HOME + chunk)
            bare = await client.get(HOME.rstrip("/"))
            guessed = [
                await client.get(path)
                for path in ("/", "/" + chunk, "/index.html", "/wrong-token/" + chunk)
            ]
            same_page = await client.get(HOME + chunk, headers={"Sec-Fetch-Site": "same-origin"})
            typed = await client.get(HOME, headers={"Sec-Fetch-Site": "none"})
            other_sites = [
                await client.get(HOME + chunk, headers={"Sec-Fetch-Site": site, **dest})
                for site in ("cross-site", "same-site")  # same-site: another port of localhost
                for dest in ({"Sec-Fetch-Dest": "script", "Sec-Fetch-Mode": "no-cors"}, {})
            ]
            # A link followed from another site's page (a notebook's) opens the page.
            followed = await client.get(
                HOME,
                headers={
                    "Sec-Fetch-Site": "cross-site",
                    "Sec-Fetch-Mode": "navigate",
                    "Sec-Fetch-Dest": "document",
                },
            )
            names = [
                (await client.get(HOME, headers={"Host": f"{name}:8790"})).status_code
                for name in ("localhost", "127.0.0.1", "[::1]")
            ]
        async with _client(viewed, "http://attacker.example:8790") as rebound:
            rebinding = await rebound.get(HOME + chunk)
        async with _client(viewed, "http://127.0.0.1:9999") as other_port:
            wrong_port = await other_port.get(HOME + chunk)
    finally:
        viewed.close()
    assert served.status_code == same_page.status_code == typed.status_code == 200
    assert followed.status_code == 200
    assert bare.status_code in (307, 308) and bare.headers["location"].endswith(HOME)
    assert [r.status_code for r in guessed] == [404] * 4
    assert [r.status_code for r in other_sites] == [403] * 4
    assert rebinding.status_code == wrong_port.status_code == 403
    assert "workbenchData" not in rebinding.text + other_sites[0].text
    assert names == [200, 200, 200]
    for response in (served, *guessed, *other_sites, rebinding):
        assert response.headers["cross-origin-resource-policy"] == "same-origin"
        assert response.headers["referrer-policy"] == "no-referrer"
    assert ADDRESS.url == "http://127.0.0.1:8790/the-launch-token/"
    with socket.socket() as sock:  # a token per launch
        sock.bind(("127.0.0.1", 0))
        fresh = [ViewAddress.of(sock, "127.0.0.1") for _ in range(2)]
    assert fresh[0].token != fresh[1].token and len(fresh[0].token) >= 32


async def test_a_chunk_duckdb_cannot_read_in_its_memory_is_a_503_and_the_server_goes_on(db):
    viewed = ViewedRun.open(db)
    try:
        async with _client(viewed) as client:
            # Tighter than any chunk needs, the room a retry is given included.
            viewed.wb.con.execute("SET memory_limit = '1MB'")
            viewed.wb.room = "1MB"
            starved = await client.get(HOME + "data/stories-00001.js")
            viewed.wb.con.execute(f"SET memory_limit = '{report_page.MEMORY_LIMIT}'")
            viewed.wb.room = RunFrames.room
            fed = await client.get(HOME + "data/stories-00001.js")
    finally:
        viewed.close()
    assert starved.status_code == 503
    assert starved.text.startswith("REPORT_OUT_OF_MEMORY: DuckDB ran out of memory reading")
    assert "\n" not in starved.text.strip()
    assert fed.status_code == 200 and _chunk(fed.text)["start"] == 1_000


def test_a_report_duckdb_cannot_write_in_its_memory_is_one_coded_line(
    db, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(report_page, "MEMORY_LIMIT", "1MB")
    monkeypatch.setattr(RunFrames, "room", "1MB")
    out = tmp_path / "reports"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: REPORT_OUT_OF_MEMORY: DuckDB ran out of memory reading")
    assert "capped at 1MB, then 1MB" in line
    assert not out.exists() or not any(out.iterdir())  # nothing half-written
    monkeypatch.setattr(report_server, "MEMORY_LIMIT", "1MB")
    assert main(["view", "--db", str(db), "--port", "0"]) == 1  # refused before listening
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: REPORT_OUT_OF_MEMORY: ")


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
        token = url.split("/")[3]
        # The page's data URLs are relative: its own URL ends with "/", under the token.
        assert url.endswith(f"/{token}/") and len(token) >= 32
        deadline = time.monotonic() + 10
        while True:
            try:
                index = httpx.get(url, timeout=5)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        chunk = httpx.get(url + "data/stories-00000.js", timeout=10)
        root = httpx.get(url.rsplit(token, 1)[0], timeout=10)
        assert index.status_code == 200 and "workbench run synthetic" in index.text
        assert root.status_code == 404
        assert _chunk(chunk.text)["count"] == 1_000
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode in (0, -15)


def test_a_store_of_another_schema_version_is_read_through_an_upgraded_copy_or_refused(
    tmp_path, capsys
):
    """An older file is reported and viewed from an upgraded copy (the file itself untouched:
    a report only reads); a file newer than this workbench is one line, before anything."""
    import duckdb

    from workbench.eval.store import schema

    older = tmp_path / "older.duckdb"
    synthesize_run(older, 40)
    top = schema.latest_version()
    con = duckdb.connect(str(older))  # undo the newest migration: a file as it stood before it
    con.execute("DELETE FROM schema_version WHERE version = ?", [top])
    con.execute("ALTER TABLE outputs DROP COLUMN unanswered")
    con.execute("ALTER TABLE outputs DROP COLUMN retry_at_ms")
    con.execute("DROP TABLE pacing")
    con.close()
    assert main(["report", "synthetic", "--db", str(older), "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "synthetic.html").read_text(encoding="utf-8")
    assert "item-39" in page
    viewed = ViewedRun.open(older, "synthetic")
    try:
        assert "item-39" in viewed.page
    finally:
        viewed.wb.close()
    con = duckdb.connect(str(older), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (top - 1,)
    con.close()

    newer = tmp_path / "newer.duckdb"
    synthesize_run(newer, 40)
    con = duckdb.connect(str(newer))
    con.execute("INSERT INTO schema_version VALUES (?, now()::TIMESTAMP)", [top + 1])
    con.close()
    capsys.readouterr()
    assert main(["report", "--db", str(newer), "--out", str(tmp_path / "n")]) == 2
    assert main(["view", "--db", str(newer)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[1].strip() for line in err] == ["STORE_TOO_NEW", "STORE_TOO_NEW"]
    assert not any((tmp_path / "n").iterdir())  # the folder checked writable, nothing in it
