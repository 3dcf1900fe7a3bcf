"""`workbench compare`: pairs, McNemar's exact test, the paired bootstrap, the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workbench.cli import main
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.gate import compare_runs, describe, mcnemar_exact, paired_stats
from workbench.eval.store.database import Store


def _out(run: str, item: str, passed: bool, *, repeat: int = 0, config: str = "c") -> dict:
    return {
        "run_id": run,
        "item_id": item,
        "repeat": repeat,
        "config": config,
        "key": "p:m",
        "passed": passed,
        "score": float(passed),
        "tokens_in": 1,
        "tokens_out": 1,
        "cached": False,
        "latency_ms": 1.0,
    }


def _store(
    path: Path, a: list[bool], b: list[bool], extra_b: list[dict] | None = None
) -> tuple[str, str]:
    with Store.open(path) as s:
        runs = []
        for outcomes in (a, b):
            run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
            for i, passed in enumerate(outcomes):
                s.add_output(_out(run, f"i{i:03d}", passed))
            runs.append(run)
        for row in extra_b or []:
            s.add_output(_out(runs[1], row.pop("item"), **row))
    return runs[0], runs[1]


def test_mcnemar_exact_is_the_two_sided_binomial_tail():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)
    assert mcnemar_exact(5, 5) == 1.0  # capped: an even split is no evidence
    assert 0 < mcnemar_exact(0, 1000) < 1e-300  # exact: no overflow, no nan, no early 0


def test_a_real_drop_fails_the_gate_and_names_the_flipped_items(tmp_path):
    a = [True] * 80 + [False] * 20
    b = [False] * 10 + [True] * 70 + [False] * 20  # ten of A's passes now fail
    ra, rb = _store(tmp_path / "s.duckdb", a, b)
    with RunFrames.open(tmp_path / "s.duckdb", snapshot=True) as wb:
        c = compare_runs(wb, ra, rb, margin=0.05)
        lenient = compare_runs(wb, ra, rb, margin=0.2)
    assert (c.pairs, c.a_only, c.b_only) == (100, 10, 0)
    assert c.diff == pytest.approx(-0.10)
    assert c.diff_lo < -0.10 < c.diff_hi < 0
    assert c.p_value == pytest.approx(2 / 1024)
    assert c.worse
    assert [f.item_id for f in c.flips] == [f"i{i:03d}" for i in range(10)]
    assert all(f.passed_a and not f.passed_b for f in c.flips)
    assert not lenient.worse  # a drop smaller than the margin allowed passes


def test_flips_both_ways_are_noise_not_a_regression(tmp_path):
    a = [True, True, True, False, False, True] * 10
    b = [False, True, True, True, False, True] * 10  # as many flips each way
    ra, rb = _store(tmp_path / "s.duckdb", a, b)
    with RunFrames.open(tmp_path / "s.duckdb", snapshot=True) as wb:
        c = compare_runs(wb, ra, rb)
    assert c.a_only == c.b_only == 10 and c.diff == 0
    assert c.p_value == 1.0 and not c.worse


def test_pairs_are_item_repeat_and_configuration_and_the_rest_is_counted_unpaired(tmp_path):
    extra = [
        {"item": "only-in-b", "passed": False},
        {"item": "i000", "passed": False, "repeat": 1},  # a repeat A never ran
        {"item": "i000", "passed": False, "config": "other"},  # a configuration A never had
    ]
    ra, rb = _store(tmp_path / "s.duckdb", [True] * 5, [True] * 5, extra)
    with RunFrames.open(tmp_path / "s.duckdb", snapshot=True) as wb:
        c = compare_runs(wb, ra, rb)
    assert (c.pairs, c.unpaired_a, c.unpaired_b, c.a_only) == (5, 0, 3, 0)


def test_the_cli_exits_1_on_a_regression_0_otherwise_and_2_on_bad_input(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    ra, rb = _store(db, [True] * 40, [False] * 8 + [True] * 32)
    assert main(["compare", ra, rb, "--db", str(db), "--fail-if-worse-by", "0.05"]) == 1
    shown = capsys.readouterr().out
    assert "WORSE" in shown and "i000 (repeat 0, c): pass → fail" in shown
    assert main(["compare", rb, ra, "--db", str(db)]) == 0  # the other way round it improved
    assert main(["compare", ra, "nope", "--db", str(db)]) == 2
    assert "RUN_UNKNOWN" in capsys.readouterr().err
    assert main(["compare", ra, rb, "--db", str(db), "--metric", "latency"]) == 2
    assert "GATE_INVALID" in capsys.readouterr().err
    assert main(["compare", ra, rb, "--db", str(db), "--fail-if-worse-by", "2"]) == 2


def test_the_json_says_what_the_exit_code_says(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    ra, rb = _store(db, [True] * 40, [False] * 8 + [True] * 32)
    assert main(["compare", ra, rb, "--db", str(db), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["worse"] is True and data["a_only"] == 8 and len(data["flips"]) == 8


def test_a_run_is_named_by_id_by_its_name_or_latest(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        ids = []
        for name, outcomes in (
            ("last-good", [True] * 20),
            ("last-good", [True] * 20),
            (None, [False] * 20),
        ):
            run = s.start_run(name=name, dataset="d", dataset_sha="x", configs=["c"], settings={})
            for i, passed in enumerate(outcomes):
                s.add_output(_out(run, f"i{i}", passed))
            ids.append(run)
    with RunFrames.open(db, snapshot=True) as wb:
        c = compare_runs(wb, "last-good", "latest")
    assert (c.run_a, c.run_b) == (ids[1], ids[2])  # the newest of the name; the last started
    assert c.worse
    assert main(["compare", "last-good", "latest", "--db", str(db)]) == 1
    assert main(["compare", "no-such-name", "latest", "--db", str(db)]) == 2
    assert "RUN_UNKNOWN" in capsys.readouterr().err


def test_runs_with_nothing_in_common_are_bad_input(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        ra = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        s.add_output(_out(ra, "x", True))
        rb = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        s.add_output(_out(rb, "y", True))
    assert main(["compare", ra, rb, "--db", str(db)]) == 2
    assert "GATE_NO_PAIRS" in capsys.readouterr().err


def test_repeats_of_one_item_are_not_independent_evidence(tmp_path):
    """Two items broken in all five repeats are two items, not ten flips: p stays large."""
    with Store.open(tmp_path / "r.duckdb") as s:
        runs = []
        for broken in (False, True):
            run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
            for i in range(20):
                for repeat in range(5):
                    s.add_output(_out(run, f"i{i:03d}", not (broken and i < 2), repeat=repeat))
            runs.append(run)
    with RunFrames.open(tmp_path / "r.duckdb") as wb:
        c = compare_runs(wb, *runs)
    assert (c.pairs, c.items, c.a_only, c.items_worse, c.items_better) == (100, 20, 10, 2, 0)
    assert c.p_value == pytest.approx(mcnemar_exact(2, 0)) == pytest.approx(0.5)
    assert mcnemar_exact(10, 0) < 0.01  # what counting pairs as independent would have said
    assert not c.worse and c.diff == pytest.approx(-0.1)
    assert c.diff_lo <= -0.1 <= c.diff_hi and c.diff_hi == pytest.approx(0.0)


def test_a_run_compared_with_itself_is_refused(tmp_path, capsys):
    _, b = _store(tmp_path / "s.duckdb", [True, False], [True, True])
    assert main(["compare", b, "latest", "--db", str(tmp_path / "s.duckdb")]) == 2
    assert capsys.readouterr().err.startswith("error: GATE_INVALID")


def test_unanswered_outputs_make_no_run_worse_and_the_verdict_says_so(tmp_path):
    ra, rb = _store(tmp_path / "s.duckdb", [True] * 6, [True] * 6)
    with Store.open(tmp_path / "s.duckdb") as s:  # B's provider kept four items from the model
        for i in range(4):
            s.add_output(
                _out(rb, f"i{i:03d}", False)
                | {"passed": None, "score": None, "unanswered": "rate_limit", "error_code": "X"}
            )
    with RunFrames.open(tmp_path / "s.duckdb", snapshot=True) as wb:
        c = compare_runs(wb, ra, rb)
        lines = describe(c)
    assert not c.worse and (c.pairs, c.a_only, c.diff) == (2, 0, 0.0)
    assert (c.unanswered_a, c.unanswered_b) == (0, 4)
    assert any("unanswered: 0 output(s) of A, 4 of B" in line for line in lines)


def _items_resampled(items: list[tuple[int, int, int]], n_boot: int, seed: int) -> np.ndarray:
    """The bootstrap drawn the plain way: every resample picks items one by one."""
    n, a, b = (np.array(col) for col in zip(*items, strict=True))
    idx = np.random.default_rng(seed).integers(0, len(items), size=(n_boot, len(items)))
    return (b[idx].sum(axis=1) - a[idx].sum(axis=1)) / n[idx].sum(axis=1)


def test_the_bootstrap_by_kinds_of_item_is_the_bootstrap_that_resamples_items():
    """Items of the same pairs, passes of A and passes of B are drawn as counts of each kind:
    the interval is the items' own, up to the bootstrap's Monte-Carlo error, and the same
    seed gives the same interval."""
    rng = np.random.default_rng(7)
    items = []  # (pairs, passed by A, passed by B) of 400 items of three repeats
    ids, pa, pb = [], [], []
    for i in range(400):
        a = rng.random(3) < 0.7
        b = np.where(rng.random(3) < 0.15, ~a, a)
        items.append((3, int(a.sum()), int(b.sum())))
        ids += [f"i{i}"] * 3
        pa += list(a)
        pb += list(b)
    stats = paired_stats(ids, np.array(pa), np.array(pb), n_boot=20_000, seed=1)
    lo, hi = np.percentile(_items_resampled(items, 20_000, 2), [2.5, 97.5])
    assert stats.lo == pytest.approx(lo, abs=0.004) and stats.hi == pytest.approx(hi, abs=0.004)
    assert stats.lo < stats.diff < stats.hi
    again = paired_stats(ids, np.array(pa), np.array(pb), n_boot=20_000, seed=1)
    assert (again.lo, again.hi) == (stats.lo, stats.hi)


def test_the_bootstrap_of_many_items_holds_no_resample_of_every_item():
    """5,000 resamples of 100,000 items: drawn as counts per kind of item, a block at a time,
    never an array of 5,000 × 100,000 picks (4 GB)."""
    import tracemalloc

    items = 100_000
    ids = np.repeat(np.arange(items), 2).astype(str)
    pa = np.resize([True, True, False, True, False], 2 * items)
    pb = np.resize([True, False, False, True, True, True, False], 2 * items)
    tracemalloc.start()
    try:
        stats = paired_stats(ids, pa, pb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert stats.items == items and stats.lo < stats.diff < stats.hi
    assert peak < 100_000_000, f"{peak / 1e6:.0f} MB"


def test_the_exact_test_of_many_flips_is_quick_and_agrees_with_the_exact_sum():
    from fractions import Fraction
    from math import comb

    def exact(a: int, b: int) -> float:
        n, k = a + b, min(a, b)
        return float(min(Fraction(1), 2 * Fraction(sum(comb(n, i) for i in range(k + 1)), 2**n)))

    for a, b in ((1_000, 1_080), (1_500, 1_400), (1_100, 1_000)):
        assert mcnemar_exact(a, b) == pytest.approx(exact(a, b), rel=1e-9)
    assert 0 < mcnemar_exact(240_000, 250_000) < 1e-5  # a million items' flips: at once
    assert mcnemar_exact(250_000, 250_100) == pytest.approx(0.8887, abs=1e-3)
