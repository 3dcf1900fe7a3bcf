"""How fast a report opens in a browser, before and after the virtual table: headless
Chromium (Debian's, through Playwright) opens each page from disk, `file://`, offline.

For each size (synthetic runs, `synthesize_run`, one DuckDB file per size):

  after   the report as written now (`write_report`: one file up to SINGLE_FILE_MAX rows, else
          the folder of data chunks), written by a child process;
  before  the single page of every row and story inline, written by the code at
          `git merge-base HEAD main` (checked out with `git worktree add` into a temporary
          folder, run with PYTHONPATH there) — measured up to --before-max items: at 1,000,000
          items that writer needs more memory than this machine has (1.28 GB at 100,000).

Per page, `--rounds` fresh browsers (medians):
  first rows  navigation start to the first table row in the DOM and the next frame drawn;
  all rows    navigation start to every row loaded, or to the first rows if later (the old
              page: the same as its first rows);
  filter      grade = fail chosen, to the next frame drawn (every row tested);
  sort        the latency header clicked, to the next frame drawn (every shown row sorted);
  search      the last item's id typed, to one row shown (the box's 150 ms pause included);
  story       that row clicked, to its raw reply drawn (its stories file read from disk);
  JS heap and DOM nodes once every row is loaded (Chromium's Performance.getMetrics).

    .venv/bin/python benchmarks/report_open.py [--sizes 10000,100000,1000000] [--rounds 3]

Measured 2026-12-03 on 2 cores (medians of 3; before at 100,000: 1; after measured again once
the stories files were cut by their bytes, with --before-max 0):

| items | page | bytes | first rows | all rows | filter | sort | search | story | JS heap | DOM nodes |
|---|---|---|---|---|---|---|---|---|---|---|
| 10,000 | before | 11.8 MB | 3.28 s | 3.28 s | 1031 ms | 738 ms | | | 14 MB | 250,537 |
| 10,000 | after | 9.7 MB | 0.21 s | 0.21 s | 47 ms | 43 ms | 180 ms | 103 ms | 3 MB | 1,671 |
| 100,000 | before | 118.2 MB | 42.32 s | 42.32 s | 8673 ms | 10220 ms | | | 127 MB | 2,496,579 |
| 100,000 | after | 93.3 MB | 0.30 s | 0.49 s | 51 ms | 65 ms | 198 ms | 79 ms | 10 MB | 3,418 |
| 1,000,000 | before | not written: out of memory | | | | | | | | |
| 1,000,000 | after | 922.9 MB | 0.26 s | 2.56 s | 23 ms | 220 ms | 346 ms | 77 ms | 82 MB | 6,455 |

First rows: 16× sooner at 10,000 items, 141× at 100,000; the old page at 1,000,000 cannot be
written on this machine (its writer held every row and story: 1.28 GB at 100,000 items).

Writes benchmarks/results/report_open.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _sim_process import machine, write_json

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.browser.conftest import CHROMIUM_ARGS  # noqa: E402
from workbench.eval.store.synthetic import synthesize_run  # noqa: E402

RUN = "synthetic"

# Marks taken in the page itself, so polling from Python adds nothing: the first row in the
# DOM (then the frame after it), and the "loaded" line saying every row is here.
MARKS = """
window.__marks = {};
const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
const watch = new MutationObserver(() => {
  const m = window.__marks;
  if (m.dom === undefined && document.querySelector("table#items tbody tr")) {
    m.dom = performance.now();
    frame().then(() => { m.first = performance.now(); });
  }
  const line = document.getElementById("loaded");
  if (m.all === undefined && line && line.dataset.complete === "true") m.all = performance.now();
});
watch.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
"""

TIMED = """async (what) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const t0 = performance.now();
  if (what === "filter") {
    const select = document.querySelector("select[data-filter=grade]");
    select.value = "fail";
    select.dispatchEvent(new Event("change"));
  } else {
    document.querySelector("th[data-column=latency] button").click();
  }
  await frame();
  return performance.now() - t0;
}"""

# The last item searched for (the count shows one row: the search box waits 150 ms after the
# last key before it searches, and that pause is counted), then its story opened (to its raw
# reply drawn: a stories chunk read from disk). None where the page has no such controls.
FOUND = """async (item) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const until = async (ok) => { const t = performance.now();
    while (!ok()) { if (performance.now() - t > 60000) return false; await frame(); } return true; };
  const search = document.getElementById("search"), count = document.getElementById("count");
  const grade = document.querySelector("select[data-filter=grade]");
  if (!search || !count || !grade) return null;
  grade.value = "*";
  grade.dispatchEvent(new Event("change"));
  await frame();
  const t0 = performance.now();
  search.value = item;
  search.dispatchEvent(new Event("input"));
  if (!(await until(() => count.textContent.startsWith("1 of ")))) return null;
  const t1 = performance.now();
  const row = document.querySelector("table#items tbody tr");
  const story = document.querySelector("dialog#story");
  if (!row || !story) return [t1 - t0, null];
  row.click();
  const told = () => story.open && [...story.querySelectorAll("h3, h4")]
    .some((h) => h.textContent.startsWith("Raw reply"));
  if (!(await until(told))) return [t1 - t0, null];
  await frame();
  return [t1 - t0, performance.now() - t1];
}"""


def _write(python_path: Path, db: Path, out: Path) -> tuple[Path, float]:
    """A report written by the code under `python_path`, in its own process."""
    code = (
        "import sys; from workbench.eval.report.page import write_report; "
        f"print(write_report({str(db)!r}, {RUN!r}, {str(out)!r}))"
    )
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=python_path,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip().splitlines()[-1]), time.perf_counter() - t0


def _bytes(page: Path) -> int:
    if page.name != "index.html":
        return page.stat().st_size
    return sum(f.stat().st_size for f in page.parent.rglob("*") if f.is_file())


def _open_once(chromium: str, page: Path, last: str, timeout_s: float) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.set_default_timeout(timeout_s * 1000)
            tab.add_init_script(MARKS)
            tab.goto(page.as_uri(), wait_until="commit")
            tab.wait_for_function("() => window.__marks && window.__marks.first !== undefined")
            new_page = tab.evaluate("() => !!document.getElementById('loaded')")
            if new_page:
                tab.wait_for_function("() => window.__marks.all !== undefined")
            marks = tab.evaluate("() => window.__marks")
            cdp = tab.context.new_cdp_session(tab)
            cdp.send("Performance.enable")
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            got = {
                "first_rows_s": marks["first"] / 1000,
                "all_rows_s": max(marks["all"] if new_page else 0, marks["first"]) / 1000,
                "js_heap_mb": metrics["JSHeapUsedSize"] / 1e6,
                "dom_nodes": metrics["Nodes"],
            }
            got["filter_s"] = tab.evaluate(TIMED, "filter") / 1000
            got["sort_s"] = tab.evaluate(TIMED, "sort") / 1000
            search_ms, story_ms = tab.evaluate(FOUND, last) or (None, None)
            got["search_s"] = math.nan if search_ms is None else search_ms / 1000
            got["story_s"] = math.nan if story_ms is None else story_ms / 1000
            return got
        finally:
            browser.close()


def _measure(chromium: str, page: Path, last: str, rounds: int, timeout_s: float) -> dict[str, Any]:
    runs = [_open_once(chromium, page, last, timeout_s) for _ in range(rounds)]
    return {
        "bytes": _bytes(page),
        "rounds": runs,
        **{k: statistics.median(r[k] for r in runs) for k in runs[0]},
    }


def _before_tree(root: Path) -> Path:
    base = subprocess.run(
        ["git", "merge-base", "HEAD", "main"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    tree = root / "before-view"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), base],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--before-max", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds, per page step")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("Debian's chromium is not installed (apt-get install chromium)")
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"machine": machine(), "rounds": args.rounds, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="report-open-") as tmp:
        root = Path(tmp)
        before = _before_tree(root) if any(n <= args.before_max for n in sizes) else None
        try:
            for n in sizes:
                db = root / f"synthetic-{n}.duckdb"
                synthesize_run(db, n, run_id=RUN)
                row: dict[str, Any] = {}
                last = f"item-{n - 1}"  # the synthetic run's last item
                page, took = _write(REPO, db, root / f"after-{n}")
                row["after"] = {
                    "write_s": took,
                    **_measure(chromium, page, last, args.rounds, args.timeout),
                }
                if before is not None and n <= args.before_max:
                    page, took = _write(before, db, root / f"before-{n}")
                    rounds = max(1, args.rounds if n <= 20_000 else 1)
                    row["before"] = {
                        "write_s": took,
                        **_measure(chromium, page, last, rounds, args.timeout),
                    }
                db.unlink()
                results["sizes"][str(n)] = row
                print(f"{n} items: {row}", file=sys.stderr, flush=True)
        finally:
            if before is not None:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(before)], cwd=REPO, check=False
                )
    write_json("report_open.json", results)
    print(
        "| items | page | bytes | first rows | all rows | filter | sort | search | story "
        "| JS heap | DOM nodes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, row in results["sizes"].items():
        for which in ("before", "after"):
            r = row.get(which)
            if r is None:
                print(
                    f"| {int(n):,} | {which} | — (not measured: past --before-max) | | | | | | | | |"
                )
                continue
            print(
                f"| {int(n):,} | {which} | {r['bytes'] / 1e6:.1f} MB | {r['first_rows_s']:.2f} s "
                f"| {r['all_rows_s']:.2f} s | {r['filter_s'] * 1000:.0f} ms "
                f"| {r['sort_s'] * 1000:.0f} ms | {r['search_s'] * 1000:.0f} ms "
                f"| {r['story_s'] * 1000:.0f} ms | {r['js_heap_mb']:.0f} MB | {r['dom_nodes']:,.0f} |"
            )
        if "before" in row:
            ratio = row["before"]["first_rows_s"] / row["after"]["first_rows_s"]
            print(f"|  | first rows, before ÷ after | {ratio:.1f}× | | | | | | | | |")


if __name__ == "__main__":
    main()
