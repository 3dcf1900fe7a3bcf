"""RunFrames DataFrames on a small hand-written run, with exact expected numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.capability.decide import make_record
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.store.database import Store
from workbench.events import AttemptEvent, QuotaEvent, RouteEvent, VerdictEvent

T0 = 1_767_225_600_000


def att(
    key, outcome, latency, *, cached=False, status=200, kind=None, code=None, route="", pos=0, t=0
):
    return AttemptEvent(
        key=key,
        lane=None,
        outcome=outcome,
        start_ms=T0 + t,
        latency_ms=latency,
        status=status,
        error_kind=kind,
        error_code=code,
        position=pos,
        route_id=route,
        cached=cached,
    )


def out(run_id, item, config, key, passed, score, *, tin=10, tout=5, cached=False, latency=1.0):
    return {
        "run_id": run_id,
        "item_id": item,
        "repeat": 0,
        "config": config,
        "key": key,
        "passed": passed,
        "score": score,
        "tokens_in": tin,
        "tokens_out": tout,
        "cached": cached,
        "latency_ms": latency,
    }


@pytest.fixture
def wb(tmp_path: Path):
    path = tmp_path / "wb.duckdb"
    with Store.open(path) as s:
        run = s.start_run(name="r", dataset="d", dataset_sha="x", configs=["c1", "c2"], settings={})
        w = s.sink(run, "i1", 0, "c1")
        for i, lat in enumerate((10.0, 20.0, 30.0, 40.0)):
            w(att("p:m1", "ok", lat, t=i))
        w(att("p:m1", "ok", 1.0, cached=True))  # a cache hit: not a provider latency
        w(att("q:m2", "ok", 100.0))
        w(att("q:m2", "error", 5.0, status=429, kind="rate_limit", code="PROVIDER_RATE_LIMIT"))
        w(att("q:m2", "error", 6.0, status=429, kind="rate_limit", code="PROVIDER_RATE_LIMIT"))
        w(att("q:m2", "error", 7.0, status=500, kind="outage", code="PROVIDER_OUTAGE"))
        w(att("q:m2", "skipped_cooling", 0.0, status=None))
        # routes: first choice; one fallback (q:m2 failed, p:m1 answered); one with nobody
        w(RouteEvent(("p:m1",), "p:m1", at_ms=1, route_id="r1"))
        w(
            att(
                "q:m2",
                "error",
                3.0,
                status=500,
                kind="outage",
                code="PROVIDER_OUTAGE",
                route="r2",
                t=100,
            )
        )
        w(att("p:m1", "ok", 50.0, route="r2", pos=1, t=101))
        w(
            RouteEvent(
                ("q:m2", "p:m1"),
                "p:m1",
                {"q:m2": "error"},
                at_ms=2,
                route_id="r2",
                fallback_depth=1,
            )
        )
        w(
            RouteEvent(
                ("q:m2",),
                None,
                {"q:m2": "cooldown"},
                at_ms=3,
                route_id="r3",
                error_code="AI_UNAVAILABLE",
            )
        )
        for verdict in ("native", "native"):
            w(VerdictEvent("p", "m1", "s", "tools", verdict, True, "tool_calls"))
        w(VerdictEvent("q", "m2", "s", "tools", "none", True, "unsupported"))
        w(VerdictEvent("q", "m2", "s", "tools", "unobserved", False, "plain answer"))
        w(VerdictEvent("q", "m2", "s", "vision", "native", True, "saw it"))
        w(QuotaEvent("q:m2", "q", "m2", "s", "minute", 60.0, 10.0, None, "headers", T0 + 2000))
        w(QuotaEvent("q:m2", "q", "m2", "s", "minute", 60.0, 20.0, None, "headers", T0 + 1000))
        s.add_output(out(run, "i1", "c1", "p:m1", True, 1.0))
        s.add_output(out(run, "i2", "c1", "p:m1", True, 1.0))
        s.add_output(out(run, "i3", "c1", "p:m1", False, 0.0))
        s.add_output(out(run, "i4", "c1", "p:m1", True, 0.5, cached=True))
        s.add_output(out(run, "i1", "c2", "q:m2", False, 0.0))
        s.add_output(out(run, "i2", "c2", "q:m2", True, 1.0))
        s.finish_run(run, "finished")
    w = RunFrames.open(path)
    w.run_id = run  # type: ignore[attr-defined]
    yield w
    w.close()


def test_runs_and_latest_run(wb):
    runs = wb.runs()
    assert list(runs["run_id"]) == [wb.run_id]
    assert runs["status"].tolist() == ["finished"]
    assert wb.latest_run() == wb.run_id
    assert not wb.snapshot


def test_latency_percentiles_exclude_cache_hits_and_failures(wb):
    df = wb.latency(by="key")
    assert list(df.columns) == ["key", "n", "p50_ms", "p95_ms", "p99_ms"]
    m1 = df.set_index("key").loc["p:m1"]
    # ok, not cached: 10, 20, 30, 40, 50 → linear interpolation
    assert m1["n"] == 5
    assert m1["p50_ms"] == pytest.approx(30.0)
    assert m1["p95_ms"] == pytest.approx(48.0)
    assert m1["p99_ms"] == pytest.approx(49.6)
    m2 = df.set_index("key").loc["q:m2"]
    assert (m2["n"], m2["p50_ms"]) == (1, 100.0)
    by_two = wb.latency(by=["provider", "model"], run_id=wb.run_id)
    assert by_two[["provider", "model", "n"]].values.tolist() == [["p", "m1", 5], ["q", "m2", 1]]
    with pytest.raises(ConfigError) as err:
        wb.latency(by="nope; DROP TABLE attempts")
    assert err.value.code == "COLUMN_UNKNOWN"


def test_error_taxonomy(wb):
    df = wb.errors()
    assert list(df.columns) == ["provider", "model", "error_kind", "error_code", "status", "count"]
    assert df.values.tolist() == [
        ["q", "m2", "outage", "PROVIDER_OUTAGE", 500, 2],
        ["q", "m2", "rate_limit", "PROVIDER_RATE_LIMIT", 429, 2],
    ]


def test_verdict_matrix_counts_each_verdict_with_zeros(wb):
    df = wb.verdict_matrix()
    assert list(df.columns) == [
        "provider",
        "model",
        "native",
        "text",
        "none",
        "unobserved",
        "total",
    ]
    assert df.values.tolist() == [["p", "m1", 2, 0, 0, 0, 2], ["q", "m2", 0, 0, 1, 1, 2]]
    vision = wb.verdict_matrix(capability="vision")
    assert vision.values.tolist() == [["q", "m2", 1, 0, 0, 0, 1]]


def test_verdicts_and_capabilities_show_the_prose_format_of_text_verdicts(tmp_path: Path):
    path = tmp_path / "fam.duckdb"
    with Store.open(path) as s:
        run = s.start_run(name="r", dataset="d", dataset_sha="x", configs=["c"], settings={})
        w = s.sink(run, "i1", 0, "c")
        w(
            VerdictEvent(
                "p", "mistral-small", "s", "tools", "text", True, "prose", "live", 2, "mistral"
            )
        )
        w(VerdictEvent("p", "native", "s", "tools", "native", True, "tool_calls", "live", 1))
        s.put_capability(
            make_record("p", "mistral-small", "s", "tools", "text", "live", "prose", T0, "mistral")
        )
        s.put_capability(make_record("p", "native", "s", "tools", "native", "live", "calls", T0))
    with RunFrames.open(path) as wb:
        verdicts = wb.verdicts(run).fillna({"protocol_family": "-"})
        assert verdicts[["model", "verdict", "protocol_family"]].values.tolist() == [
            ["native", "native", "-"],
            ["mistral-small", "text", "mistral"],
        ]
        assert wb.verdicts("another-run").empty
        records = wb.capabilities().fillna({"protocol_family": "-"})
        assert records[["model", "verdict", "protocol_family"]].values.tolist() == [
            ["mistral-small", "text", "mistral"],
            ["native", "native", "-"],
        ]


def test_fallbacks_with_their_chain(wb):
    df = wb.fallbacks()
    assert df["route_id"].tolist() == ["r2", "r3"]
    r2, r3 = df.iloc[0], df.iloc[1]
    assert r2["chain"] == ["q:m2=error", "p:m1=ok"]
    assert (r2["chosen"], r2["fallback_depth"], r2["candidates"]) == ("p:m1", 1, ["q:m2", "p:m1"])
    assert pd.isna(r3["chosen"]) and r3["error_code"] == "AI_UNAVAILABLE"
    assert r3["skipped"] == {"q:m2": "cooldown"} and r3["chain"] == []


def test_quota_timeline_in_time_order(wb):
    df = wb.quota_timeline()
    assert df["remaining"].tolist() == [20.0, 10.0]
    assert df["observed_at"].iloc[0] == pd.Timestamp(T0 + 1000, unit="ms")


def test_usage_and_cost_skip_cached_tokens(wb):
    df = wb.usage()
    assert list(df.columns) == ["config", "key", "n", "cached", "tokens_in", "tokens_out"]
    assert df.values.tolist() == [["c1", "p:m1", 4, 1, 30, 15], ["c2", "q:m2", 2, 0, 20, 10]]
    priced = wb.usage(prices={"p:m1": (1.0, 2.0), "m2": (3.0, 4.0)}).set_index("config")
    assert priced.loc["c1", "cost_in_usd"] == pytest.approx(30e-6)
    assert priced.loc["c1", "cost_out_usd"] == pytest.approx(30e-6)
    assert priced.loc["c2", "cost_usd"] == pytest.approx(60e-6 + 40e-6)
    assert np.isnan(wb.usage(prices={}).loc[0, "cost_usd"])


def test_grades(wb):
    df = wb.grades()
    assert list(df.columns) == [
        *("config", "key", "n", "answered", "unanswered", "failed", "graded", "passed"),
        *("pass_rate", "mean_score"),
    ]
    assert df.values.tolist() == [
        ["c1", "p:m1", 4, 4, 0, 0, 4, 3, 0.75, 0.625],
        ["c2", "q:m2", 2, 2, 0, 0, 2, 1, 0.5, 0.5],
    ]
    assert wb.grades(by="config")["n"].tolist() == [4, 2]


def test_an_unanswered_output_is_beside_the_pass_rate_never_in_it(tmp_path: Path):
    path = tmp_path / "u.duckdb"
    with Store.open(path) as s:
        run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        s.add_output(out(run, "i1", "c", "p:m", True, 1.0))
        s.add_output(out(run, "i2", "c", "p:m", False, 0.0))
        held = {"passed": None, "score": None, "unanswered": "daily_quota", "retry_at_ms": T0}
        s.add_output(out(run, "i3", "c", None, True, 1.0) | held | {"error_code": "AI_UNAVAILABLE"})
    with RunFrames.open(path) as wb:
        assert wb.outputs(run)["unanswered"].fillna("").tolist() == ["", "", "daily_quota"]
        by_config = wb.grades(run, by="config")
        assert by_config[["n", "answered", "unanswered", "passed"]].values.tolist() == [
            [3, 2, 1, 1]
        ]
        assert by_config["pass_rate"].tolist() == [0.5]
        held_df = wb.unanswered(run)
        assert held_df[["config", "reason", "n"]].values.tolist() == [["c", "daily_quota", 1]]
        assert wb.pacing(run).empty


def test_empty_store_gives_empty_frames_with_columns(tmp_path: Path):
    Store.open(tmp_path / "e.duckdb").close()
    with RunFrames.open(tmp_path / "e.duckdb") as wb:
        assert wb.latest_run() is None
        assert list(wb.verdict_matrix().columns)[-1] == "total"
        assert list(wb.latency().columns) == ["model", "n", "p50_ms", "p95_ms", "p99_ms"]
        assert "chain" in wb.fallbacks().columns
        assert "cost_usd" in wb.usage(prices={"m": (1, 1)}).columns
        assert "pass_diff_lo" in wb.compare("a", "b").columns
        assert "protocol_family" in wb.verdicts().columns
        assert "protocol_family" in wb.capabilities().columns
        for frame in (
            wb.runs(),
            wb.attempts(),
            wb.outputs(),
            wb.verdict_matrix(),
            wb.fallbacks(),
            wb.latency(),
            wb.errors(),
            wb.quota_timeline(),
            wb.usage(),
            wb.grades(),
            wb.compare("a", "b"),
            wb.verdicts(),
            wb.capabilities(),
        ):
            assert frame.empty and len(frame.columns) > 0


# ------------------------------------------------------------------ compare
@pytest.fixture
def two_runs(tmp_path: Path):
    # Known truth: A passes exactly 50 % of the items, B exactly 70 %, in shuffled orders;
    # latencies are 100 ms and 150 ms plus symmetric noise (medians exactly 100 and 150).
    rng = np.random.default_rng(1)
    n = 400
    pass_a = rng.permutation(np.arange(n) < 200)
    pass_b = rng.permutation(np.arange(n) < 280)
    noise = np.linspace(-20, 20, n)
    lat_a, lat_b = 100 + rng.permutation(noise), 150 + rng.permutation(noise)
    path = tmp_path / "cmp.duckdb"
    with Store.open(path) as s:
        runs = []
        for passed, lat in ((pass_a, lat_a), (pass_b, lat_b)):
            run = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
            for i in range(n):
                s.add_output(out(run, f"i{i}", "c", "p:m", bool(passed[i]), 1.0, latency=lat[i]))
            runs.append(run)
        s.add_output(out(runs[1], "only-in-b", "c", "p:m", True, 1.0))  # unpaired: left out
        s.add_output(out(runs[1], "i0", "c-only-b", "p:m", True, 1.0))  # config not in A
    wb = RunFrames.open(path)
    yield wb, runs, (pass_a, pass_b, lat_a, lat_b)
    wb.close()


def test_compare_paired_bootstrap_contains_the_true_difference(two_runs):
    wb, (a, b), (pass_a, pass_b, _, _) = two_runs
    df = wb.compare(a, b)
    assert df["config"].tolist() == ["c"]
    row = df.iloc[0]
    assert row["n_items"] == 400 and row["n_latency"] == 400
    assert row["pass_rate_a"] == pytest.approx(pass_a.mean())
    assert row["pass_diff"] == pytest.approx(pass_b.mean() - pass_a.mean())
    assert row["pass_diff"] == pytest.approx(0.2)
    assert row["pass_diff_lo"] < 0.2 < row["pass_diff_hi"]
    assert row["pass_diff_lo"] > 0  # and the CI is narrow enough to see it
    assert row["latency_diff"] == pytest.approx(50.0)
    assert row["latency_diff_lo"] < 50 < row["latency_diff_hi"]
    assert row["latency_diff_hi"] - row["latency_diff_lo"] < 10


def test_compare_is_deterministic_for_a_seed(two_runs):
    wb, (a, b), _ = two_runs
    first = wb.compare(a, b, n_boot=500, seed=3)
    pd.testing.assert_frame_equal(first, wb.compare(a, b, n_boot=500, seed=3))
    other = wb.compare(a, b, n_boot=500, seed=4)
    assert other["pass_diff_lo"].iloc[0] != first["pass_diff_lo"].iloc[0] or (
        other["latency_diff_lo"].iloc[0] != first["latency_diff_lo"].iloc[0]
    )
    split = wb.compare(a, b, by=["config", "key"], n_boot=100)
    assert split[["config", "key"]].values.tolist() == [["c", "p:m"]]


def test_compare_draws_its_resamples_in_blocks_with_the_figures_of_one_draw(two_runs, monkeypatch):
    # The bootstrap whole in memory (resamples × items: 57 GB at a million items), as compare
    # drew it before, against compare drawing one resample at a time: the same draws.
    from workbench.eval.analysis import frames

    wb, (a, b), _ = two_runs
    monkeypatch.setattr(frames, "_BOOT_BLOCK", 7)
    row = wb.compare(a, b, n_boot=300, seed=3).iloc[0]
    side_a, side_b = (
        wb.outputs(run, where="config = 'c' AND item_id LIKE 'i%'").sort_values("item_id")
        for run in (a, b)
    )
    assert list(side_a["item_id"]) == list(side_b["item_id"])
    pa, pb = side_a["passed"].to_numpy(float), side_b["passed"].to_numpy(float)
    la, lb = side_a["latency_ms"].to_numpy(float), side_b["latency_ms"].to_numpy(float)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, len(pa), size=(300, len(pa)))
    pass_ci = np.percentile((pb[idx] - pa[idx]).mean(axis=1), [2.5, 97.5])
    jdx = rng.integers(0, len(la), size=(300, len(la)))
    lat_ci = np.percentile(np.median(lb[jdx], axis=1) - np.median(la[jdx], axis=1), [2.5, 97.5])
    assert [row["pass_diff_lo"], row["pass_diff_hi"]] == pass_ci.tolist()
    assert [row["latency_diff_lo"], row["latency_diff_hi"]] == lat_ci.tolist()


def _every_kind(s: Store, run: str, *, b_fails_i5: bool = False) -> None:
    """One output of each kind: passed, failed by the model, ungraded, unanswered, and a
    failed route (an older row's `passed = false` with its error code)."""
    s.add_output(out(run, "i1", "c", "p:m", True, 1.0))
    s.add_output(out(run, "i2", "c", "p:m", False, 0.0))
    s.add_output(out(run, "i3", "c", "p:m", None, None))
    held = {"passed": None, "score": None, "unanswered": "rate_limit", "retry_at_ms": T0}
    s.add_output(out(run, "i4", "c", None, None, None) | held | {"error_code": "AI_UNAVAILABLE"})
    failed = {"error_code": "AI_BAD_REQUEST", "error_message": "400"}
    s.add_output(out(run, "i5", "c", None, False, 0.0) | failed)
    if b_fails_i5:  # B also fails i6, which A answered
        s.add_output(out(run, "i6", "c", None, None, None) | failed)
    else:
        s.add_output(out(run, "i6", "c", "p:m", True, 1.0))


def test_the_summary_the_tables_the_report_and_the_gate_count_outcomes_alike(tmp_path: Path):
    from workbench.eval.analysis import gate
    from workbench.eval.report.page import render
    from workbench.eval.run.summary import RunSummary

    path = tmp_path / "kinds.duckdb"
    with Store.open(path) as s:
        a = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        _every_kind(s, a)
        b = s.start_run(name=None, dataset="d", dataset_sha="x", configs=["c"], settings={})
        _every_kind(s, b, b_fails_i5=True)
        summary = RunSummary(a, "finished")
        for o in s.outputs_for(a):
            summary.add(o.config, o.error_code, o.passed, key=o.key, unanswered=o.unanswered)
    # answered = no error code (graded or not); pass rate = passed / graded answers.
    assert (summary.answered, sum(summary.unanswered.values()), summary.failed) == (4, 1, 1)
    assert (summary.passed, summary.graded) == (2, 3)
    with RunFrames.open(path) as wb:
        row = wb.grades(a, by="config").iloc[0]
        counts = ("answered", "unanswered", "failed", "graded", "passed")
        assert [int(row[c]) for c in counts] == [4, 1, 1, 3, 2]
        assert row["pass_rate"] == pytest.approx(summary.pass_rate)
        page = render(wb, a)
        assert "<b>4</b>answered<" in page and "<b>1</b>failed (not held)<" in page
        assert "<b>67%</b>pass rate (of the graded answers)<" in page
        # compare() too: items graded in both runs (i1, i2), at the same rates.
        compared = wb.compare(a, b, by="config").iloc[0]
        assert (compared["n_items"], compared["pass_rate_a"]) == (2, 0.5)
        # The gate pairs graded answers only: i1, i2 (i6 failed in B), at A's own rate ...
        c = gate.compare_runs(wb, a, b)
        assert c.pairs == 2 and (c.failed_a, c.failed_b) == (1, 2)
        # ... and B, which failed an output A answered, is worse whatever its pass rate.
        assert c.diff == 0 and c.worse
        said = gate.describe(c)
        assert said[0].endswith("WORSE (margin 0.0%, alpha 0.05)")
        assert (
            "  failed: 1 output(s) of A, 2 of B, left out of the pairs (B failed more: WORSE)"
            in said
        )
        assert not gate.compare_runs(wb, b, a).worse
