"""What a report shows of a run, read from its DuckDB file: the run's facts, one row per item ×
repeat × configuration for the table, and each item's story — every turn's chain of attempts
in order with why the walk moved on or stopped, the request as it left the machine, the answer
and the calls read from it, the tool steps, the verdicts, the grade. Plain JSON-ready values:
the page's script only arranges them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.report.parts import duration, finite, iso
from workbench.eval.store.rows import from_json

__all__ = ["chains", "item_rows", "outputs", "run_info", "stories"]

def _why(attempt: dict[str, Any], last: bool, route: dict[str, Any]) -> tuple[str, str]:
    """Why the walk moved on from (or stopped at) one attempt, and which of the two it did."""
    outcome = attempt["outcome"]
    because = attempt.get("reason") or attempt.get("error_message") or ""
    if outcome == "ok":
        return ("from the cache" if attempt.get("cached") else ""), "answered"
    if outcome == "partial":
        because = "a partial answer, kept in case nobody finishes"
    elif outcome == "rejected":
        because = because or "the caller's check of the answer refused it"
    elif outcome.startswith("skipped"):
        because = because or outcome.replace("_", " ")
    if not last:
        return because, "moved on"
    ended = route.get("error_code") or ("no candidate left" if not route.get("chosen") else "")
    return because, f"stopped: {ended}" if ended else "stopped"


def _attempt_rows(wb: RunFrames, run_id: str) -> dict[str, list[dict[str, Any]]]:
    rows = wb.con.execute(
        "SELECT route_id, position, seq, key, outcome, status, error_kind, error_code, error_message, "
        "reason, latency_ms, start_ms, cached, tokens, request FROM attempts WHERE run_id = ? "
        "ORDER BY seq, start_ms, position",
        [run_id],
    ).fetchall()
    by_route: dict[str, list[dict[str, Any]]] = defaultdict(list)
    names = ("route_id", "position", "seq", "key", "outcome", "status", "error_kind", "error_code",
             "error_message", "reason", "latency_ms", "start_ms", "cached", "tokens", "request")  # fmt: skip
    for row in rows:
        a = dict(zip(names, row, strict=True))
        by_route[a["route_id"]].append(a)
    for attempts in by_route.values():
        attempts.sort(key=lambda a: (a["seq"] or 0, a["start_ms"], a["position"]))
    return by_route


def outputs(wb: RunFrames, run_id: str) -> list[dict[str, Any]]:
    """The run's outputs as plain rows: NULL stays None (a DataFrame would make a column of
    NULLs NaN, which is neither a grade nor a text)."""
    cursor = wb.con.execute(
        "SELECT * FROM outputs WHERE run_id = ? ORDER BY item_id, repeat, config", [run_id]
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _interned(request: Any, texts: dict[str, int]) -> Any:
    """A request with its system prompt replaced by its number in `texts`: the text protocol's
    tool listing is the same long prompt on every attempt, and is written into the page once."""
    if isinstance(request, dict) and isinstance(request.get("system"), str):
        request["system"] = texts.setdefault(request["system"], len(texts))
    return request


def stories(
    wb: RunFrames, run_id: str, outputs: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """Every item's story, keyed like the item table's rows: its turns (one route each), with
    every attempt of the chain in order, then what came back, how it was read and graded; and
    the system prompts the stories' requests refer to by number."""
    texts: dict[str, int] = {}
    attempts = _attempt_rows(wb, run_id)
    routes: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in wb.con.execute(
        "SELECT item_id, repeat, config, route_id, candidates, chosen, fallback_depth, partial, "
        "error_code, at_ms FROM routes WHERE run_id = ? ORDER BY at_ms",
        [run_id],
    ).fetchall():
        routes[(r[0], r[1], r[2])].append(
            dict(
                zip(
                    (
                        "route_id",
                        "candidates",
                        "chosen",
                        "fallback_depth",
                        "partial",
                        "error_code",
                        "at_ms",
                    ),
                    r[3:],
                    strict=True,
                )
            )
        )
    verdicts: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for v in wb.con.execute(
        "SELECT item_id, repeat, config, provider, model, capability, verdict, protocol_family, "
        "recorded, evidence, via, at_ms FROM verdicts WHERE run_id = ? ORDER BY at_ms",
        [run_id],
    ).fetchall():
        verdicts[(v[0], v[1], v[2])].append({
            "model": f"{v[3]}:{v[4]}", "capability": v[5], "verdict": v[6], "family": v[7] or "",
            "recorded": "recorded" if v[8] else "not recorded", "evidence": v[9] or "",
            "via": v[10] or "", "at": iso(v[11]),
        })  # fmt: skip
    steps: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    # A step logs its start (ok NULL) and its end: one row per step, its result and duration.
    for s in wb.con.execute(
        "SELECT item_id, repeat, config, any_value(tool), any_value(params), "
        "bool_or(ok) FILTER (ok IS NOT NULL), count(ok), min(at_ms), max(at_ms) "
        "FROM tool_steps WHERE run_id = ? GROUP BY item_id, repeat, config, step_id "
        "ORDER BY min(at_ms)",
        [run_id],
    ).fetchall():
        result = "never finished" if not s[6] else "ok" if s[5] else "failed"
        steps[(s[0], s[1], s[2])].append({
            "tool": s[3], "arguments": s[4] or "", "result": result, "at": iso(s[7]),
            "took": duration(s[8] - s[7]) if s[6] else "",
        })  # fmt: skip
    replies: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in wb.con.execute(
        "SELECT item_id, repeat, config, reply FROM replies WHERE run_id = ? ORDER BY turn",
        [run_id],
    ).fetchall():
        replies[(r[0], r[1], r[2])].append(_reply(from_json(r[3]) or {}))
    stories: dict[str, Any] = {}
    for o in outputs:
        key3 = (o["item_id"], int(o["repeat"]), o["config"])
        turns = []
        answers = replies.get(key3, [])
        for n, route in enumerate(routes.get(key3, [])):
            chain = attempts.get(route["route_id"], [])
            shown = []
            for i, a in enumerate(chain):
                because, then = _why(a, i == len(chain) - 1, route)
                shown.append({
                    "position": a["position"], "key": a["key"], "outcome": a["outcome"],
                    "status": a["status"], "latency": duration(a["latency_ms"]) if
                    a["outcome"] in ("ok", "error", "partial", "rejected") else "",
                    "start": iso(a["start_ms"]), "error_code": a["error_code"] or "",
                    "why": because, "then": then, "cached": bool(a["cached"]),
                    "request": _interned(from_json(a["request"]), texts),
                })  # fmt: skip
            turns.append({
                "turn": n + 1, "at": iso(route["at_ms"]), "chosen": route["chosen"] or "",
                "fallback_depth": route["fallback_depth"], "error_code": route["error_code"] or "",
                "candidates": len(from_json(route["candidates"]) or []), "attempts": shown,
                # The answer of this turn (a turn whose route failed has none).
                "reply": answers[n] if n < len(answers) and route["chosen"] else None,
            })  # fmt: skip
        calls = from_json(o["tool_calls"]) or []
        grade = from_json(o["grade"]) or {}
        stories[_row_key(o)] = {
            "turns": turns,
            "raw": o["raw"] or "",
            "cleaned": o["cleaned"] or "",
            "protocol": o["protocol"] or "",
            "tool_calls": [_call(c) for c in calls if isinstance(c, dict)],
            "tool_steps": steps.get(key3, []),
            "verdicts": verdicts.get(key3, []),
            "grade": {
                "result": _grade_word(o["passed"]),
                "score": "" if o["score"] is None else f"{o['score']:.2f}",
                "checks": [
                    [k, "pass" if ok else "fail"] for k, ok in (grade.get("checks") or {}).items()
                ],
                "reason": grade.get("reason") or "",
            },
            "error": f"{o['error_code']}: {o['error_message'] or ''}" if o["error_code"] else "",
        }
    return stories, list(texts)


def _call(c: dict[str, Any]) -> dict[str, str]:
    """A tool call as the story shows it: its arguments as JSON (or as written, when they
    could not be read), how it came (native or in the text) and the text's family."""
    invalid = bool(c.get("invalid"))
    return {
        "name": str(c.get("name") or ""),
        "arguments": str(c.get("raw_arguments") or "") if invalid
        else json.dumps(c.get("arguments"), ensure_ascii=False),
        "protocol": str(c.get("source") or ""),
        "family": str(c.get("family") or ""),
        "invalid": str(c.get("invalid_reason") or "") if invalid else "",
    }  # fmt: skip


def _reply(r: dict[str, Any]) -> dict[str, Any]:
    """One turn's answer (a `replies` row): what the model wrote, the calls read from it."""
    usage = r.get("usage") or {}
    tokens = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    return {
        "text": r["content"] if isinstance(r.get("content"), str) else r.get("text") or "",
        "protocol": r.get("protocol") or "",
        "finish": r.get("finish_reason") or "",
        "tokens": " in, ".join(str(t) for t in tokens) + " out" if None not in tokens else "",
        "calls": [_call(c) for c in r.get("tool_calls") or () if isinstance(c, dict)],
        "cached": bool(r.get("cached")),
    }


def _row_key(o: dict[str, Any]) -> str:
    return f"{o['item_id']}|{int(o['repeat'])}|{o['config']}"


def _grade_word(passed: bool | None) -> str:
    return "ungraded" if passed is None else "pass" if passed else "fail"


def item_rows(wb: RunFrames, run_id: str, outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per item × repeat × configuration, each column a filterable word or number."""
    meta = {
        r[0]: (r[1] or "", from_json(r[2]) or [])
        for r in wb.con.execute(
            "SELECT item_id, category, tags FROM items WHERE run_id = ?", [run_id]
        ).fetchall()
    }
    depth = {
        (r[0], r[1], r[2]): (r[3], r[4])
        for r in wb.con.execute(
            "SELECT item_id, repeat, config, max(fallback_depth) FILTER (chosen IS NOT NULL), "
            "count(*) FROM routes "
            "WHERE run_id = ? GROUP BY ALL",
            [run_id],
        ).fetchall()
    }
    rows = []
    for o in outputs:
        category, tags = meta.get(o["item_id"], ("", []))
        deepest, turns = depth.get((o["item_id"], int(o["repeat"]), o["config"]), (None, 0))
        rows.append({
            "key": _row_key(o), "item": o["item_id"], "repeat": int(o["repeat"]),
            "config": o["config"], "model": o["key"] or "", "grade": _grade_word(o["passed"]),
            "category": category, "tags": ", ".join(tags), "error": o["error_code"] or "",
            "depth": "" if deepest is None else int(deepest), "turns": int(turns),
            "cached": "yes" if o["cached"] else "no", "latency": duration(o["latency_ms"]),
            "latency_ms": round(finite(o["latency_ms"]), 3),  # to the µs: sorts, and stays short
        })  # fmt: skip
    return rows


def chains(wb: RunFrames, run_id: str) -> list[dict[str, Any]]:
    """Each configuration's candidate chain, said once (not on every route)."""
    rows = wb.con.execute(
        "SELECT config, candidates, count(*) FROM routes WHERE run_id = ? GROUP BY ALL "
        "ORDER BY config, count(*) DESC",
        [run_id],
    ).fetchall()
    return [{"config": c, "candidates": from_json(cands) or [], "routes": n} for c, cands, n in rows]


def run_info(wb: RunFrames, run_id: str) -> dict[str, Any]:
    rows = wb.con.execute(
        "SELECT name, dataset, status, started_at, finished_at, version, settings FROM runs "
        "WHERE run_id = ?",
        [run_id],
    ).fetchall()
    if not rows:
        raise ConfigError(f"no run {run_id!r} in {wb.path}", code="RUN_UNKNOWN")
    name, dataset, status, started, finished, version, settings = rows[0]
    took = (finished - started).total_seconds() * 1000 if started and finished else None
    return {
        "id": run_id, "name": name or "", "dataset": dataset or "", "status": status or "",
        "started": iso(started.replace(tzinfo=UTC).timestamp() * 1000) if started else "",
        "finished": iso(finished.replace(tzinfo=UTC).timestamp() * 1000) if finished else "",
        "took": duration(took), "version": version or "", "settings": from_json(settings) or {},
    }  # fmt: skip
