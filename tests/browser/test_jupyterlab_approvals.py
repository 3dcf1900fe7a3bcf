"""A person's path through notebooks/04_approvals.ipynb, in a real browser.

JupyterLab is served headless on loopback (a free port, a random token, `--allow-root` since
CI runs as root) from a temporary copy of `notebooks/` and `datasets/`; Playwright drives
Debian's chromium (never a browser Playwright downloads) to open the notebook, run all its
cells from the Run menu, click the first "Approve" button of the approval queue and wait for
that action's status label to say `executed`. A screenshot is saved as evidence
(`reports/browser-04_approvals.png`), the kernel is shut down through the Jupyter REST API
(a DuckDB file has one writer), and the notebook's `approvals.duckdb` is read back: exactly one
action executed, and its history holds exactly one `executing` entry.

What the notebook must expose (the contract this test reads):
- the Approve button of each pending action carries the CSS class `wb-approve` (ipywidgets
  `Button.add_class("wb-approve")`), its text is "Approve";
- that action's status is a widget with the class `wb-status` whose text becomes `executed`;
  when each action is a row (a Box with the class `wb-action`), the status read is the one in
  the clicked button's row, otherwise the first `wb-status` on the page;
- the store is the run's `Store.open("approvals.duckdb").actions` (the file's one writer), next
  to the notebook (its working directory), in a fresh file (the notebook deletes a leftover
  one first).

Skipped when chromium or playwright is missing, unless CI is set: CI must install both.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import CHROMIUM_ARGS

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
DATASETS = REPO / "datasets"
NOTEBOOK = "04_approvals.ipynb"
DB_NAME = "approvals.duckdb"
SCREENSHOT = REPO / "reports" / "browser-04_approvals.png"

SERVER_START_S = 60.0
KERNEL_IDLE_MS = 60_000
WIDGET_MS = 90_000  # all cells, from Run All to the approval queue on screen
EXECUTED_MS = 30_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"token {self.token}"}, timeout=30
        )

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


@pytest.fixture
def jupyter_lab(tmp_path: Path) -> Iterator[Lab]:
    """`jupyter lab` on a free loopback port over a temporary copy of notebooks/ and datasets/,
    with its own config, settings, workspaces and runtime folders; stopped at the end."""
    root = tmp_path / "root"
    shutil.copytree(NOTEBOOKS, root / "notebooks")
    shutil.copytree(DATASETS, root / "datasets")
    notebook = root / "notebooks" / NOTEBOOK
    assert notebook.is_file(), f"notebooks/{NOTEBOOK} is missing"
    (root / "notebooks" / DB_NAME).unlink(missing_ok=True)

    # Nothing pops over the notebook: no news toast, no update check, no "Select Kernel"
    # dialog (the notebook's own kernel, python3, starts as it opens).
    settings = tmp_path / "lab-settings"
    for plugin, values in {
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "notebook-extension/tracker": {"autoStartDefaultKernel": True},
    }.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    for name in ("config", "runtime", "workspaces"):
        (tmp_path / name).mkdir()

    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.disable_check_xsrf=True",
        "--ServerApp.open_browser=False",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
    ]
    log = tmp_path / "jupyter-lab.log"
    lab = Lab(f"http://127.0.0.1:{port}", token, root, log)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + SERVER_START_S
        with lab.api() as api:
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"jupyter lab exited ({proc.returncode}):\n{lab.log_tail()}")
                try:
                    if api.get("/api/status").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"jupyter lab did not answer in {SERVER_START_S}s:\n{lab.log_tail()}"
                    )
                time.sleep(0.2)
        yield lab
    finally:
        proc.terminate()  # SIGTERM: the server shuts its kernels down and exits
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _wait_kernel_idle(lab: Lab) -> None:
    """Until the notebook's session has a started kernel that is idle."""
    deadline = time.monotonic() + KERNEL_IDLE_MS / 1000
    with lab.api() as api:
        while True:
            sessions = api.get("/api/sessions").json()
            if any(
                s["path"].endswith(NOTEBOOK)
                and (s.get("kernel") or {}).get("execution_state") == "idle"
                for s in sessions
            ):
                return
            assert time.monotonic() < deadline, f"no idle kernel for {NOTEBOOK}: {sessions}"
            time.sleep(0.2)


def _shutdown_kernels(lab: Lab) -> None:
    """Close every session (which shuts its kernel down) and wait until no kernel is left,
    so that the notebook's DuckDB connection is closed before the file is read."""
    with lab.api() as api:
        for session in api.get("/api/sessions").json():
            api.delete(f"/api/sessions/{session['id']}").raise_for_status()
        for kernel in api.get("/api/kernels").json():
            api.delete(f"/api/kernels/{kernel['id']}").raise_for_status()
        deadline = time.monotonic() + 20
        while api.get("/api/kernels").json():
            assert time.monotonic() < deadline, "the kernel did not shut down"
            time.sleep(0.2)


def _read_actions(db: Path) -> list[dict[str, object]]:
    import duckdb

    deadline = time.monotonic() + 15
    while True:
        try:
            con = duckdb.connect(str(db), read_only=True)
            break
        except duckdb.IOException:  # the lock of a kernel that is still exiting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        cur = con.execute("SELECT action_id, action, status, history FROM actions")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def test_approve_in_jupyterlab_executes_once(chromium: str, jupyter_lab: Lab) -> None:
    from playwright.sync_api import expect, sync_playwright

    lab = jupyter_lab
    started = time.monotonic()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{lab.url}/lab/tree/notebooks/{NOTEBOOK}?token={lab.token}")

            # The notebook is open and its kernel started: the server lists its session, the
            # toolbar's indicator says idle.
            expect(page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible(
                timeout=KERNEL_IDLE_MS
            )
            _wait_kernel_idle(lab)
            indicator = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator")
            expect(indicator).to_have_attribute("data-status", "idle", timeout=KERNEL_IDLE_MS)

            # Run → Run All Cells, as a person would.
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

            approve = page.locator("button.wb-approve", has_text="Approve").first
            expect(approve).to_be_visible(timeout=WIDGET_MS)
            expect(approve).to_be_enabled()
            row = approve.locator(
                "xpath=ancestor::*[contains(concat(' ', normalize-space(@class), ' '),"
                " ' wb-action ')][1]"
            )
            status = (
                row.locator(".wb-status") if row.count() else page.locator(".wb-status")
            ).first
            expect(status).to_have_text(re.compile("pending", re.I))

            approve.click()
            expect(status).to_have_text(re.compile("executed", re.I), timeout=EXECUTED_MS)
            # Every cell done before the kernel goes: nothing still running writes afterwards.
            expect(indicator).to_have_attribute("data-status", "idle", timeout=KERNEL_IDLE_MS)

            status.scroll_into_view_if_needed()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()

    _shutdown_kernels(lab)
    db = lab.root / "notebooks" / DB_NAME
    assert db.is_file(), f"the notebook wrote no notebooks/{DB_NAME}"
    actions = _read_actions(db)
    executed = [a for a in actions if a["status"] == "executed"]
    assert len(executed) == 1, [(a["action"], a["status"]) for a in actions]
    history = json.loads(str(executed[0]["history"]))
    steps = [h["status"] for h in history]
    assert steps.count("executing") == 1, steps
    assert steps == ["pending", "executing", "executed"], steps
    # Nothing else moved: the other proposals are still waiting for a human.
    assert all(a["status"] == "pending" for a in actions if a is not executed[0]), actions
    print(
        f"browser test: {time.monotonic() - started:.1f}s with the browser, "
        f"{len(actions)} action(s), executed {executed[0]['action']}"
    )
