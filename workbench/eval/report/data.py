"""What a report shows of a run, read from its DuckDB file: the run's facts, one row per item ×
repeat × configuration for the table, and each item's story — every turn's chain of attempts
in order with why the walk moved on or stopped, the request as it left the machine, the answer
and the calls read from it, the tool steps, the verdicts, the grade. Plain JSON-ready values:
the page's script only arranges them.
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any

from workbench.eval.analysis import outcomes, run_rows
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.analysis.row_spans import Span
from workbench.eval.report.parts import duration, iso
from workbench.eval.store.rows import from_json

__all__ = ["chains", "row_key", "run_info", "stories", "story_parts", "tell"]


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
    elif outcome == "cancelled":  # a gateway's client that hung up, a cancelled task
        because = because or "the caller stopped the route"
    elif outcome.startswith("skipped"):
        because = because or outcome.replace("_", " ")
    if not last:
        return because, "moved on"
    ended = route.get("error_code") or ("no candidate left" if not route.get("chosen") else "")
    return because, f"stopped: {ended}" if ended else "stopped"


def _interned(request: Any, texts: dict[str, int]) -> Any:
    """A request with its system prompt replaced by its number in `texts`: the text protocol's
    tool listing is the same long prompt on every attempt, and is written into the page once."""
    if isinstance(request, dict) and isinstance(request.get("system"), str):
        request["system"] = texts.setdefault(request["system"], len(texts))
    return request


def stories(
    wb: RunFrames, run_id: str, outputs: list[dict[str, Any]], span: Span | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The story of each of `outputs` (those of `span`, else of the whole run), keyed like the
    item table's rows: its turns (one route each), with every attempt of the chain in order,
    then what came back, how it was read and graded; and the system prompts the stories'
    requests refer to by number."""
    texts: dict[str, int] = {}
    return tell(outputs, story_parts(wb, run_id, span), texts), list(texts)


def story_parts(wb: RunFrames, run_id: str, span: Span | None = None) -> dict[str, Any]:
    """What the stories of `span`'s outputs (else of the run's) are told from, read once:
    `tell` then tells any of those outputs' stories from it, a few at a time."""
    attempts = run_rows.attempts_by_route(wb, run_id, span)
    routes = run_rows.routes_by_output(wb, run_id, span)
    verdicts = {
        key3: [
            {
                "model": f"{v['provider']}:{v['model']}",
                "capability": v["capability"],
                "verdict": v["verdict"],
                "family": v["protocol_family"] or "",
                "recorded": "recorded" if v["recorded"] else "not recorded",
                "evidence": v["evidence"] or "",
                "via": v["via"] or "",
                "at": iso(v["at_ms"]),
            }
            for v in given
        ]
        for key3, given in run_rows.verdicts_by_output(wb, run_id, span).items()
    }
    steps = {
        key3: [
            {
                "tool": s["tool"],
                "arguments": s["params"] or "",
                "result": "never finished" if not s["ends"] else "ok" if s["ok"] else "failed",
                "at": iso(s["start_ms"]),
                "took": duration(s["end_ms"] - s["start_ms"]) if s["ends"] else "",
            }
            for s in taken
        ]
        for key3, taken in run_rows.tool_steps_by_output(wb, run_id, span).items()
    }
    replies = {
        key3: [_reply(from_json(r) or {}) for r in given]
        for key3, given in run_rows.replies_by_output(wb, run_id, span).items()
    }
    return {
        "attempts": attempts,
        "routes": routes,
        "verdicts": verdicts,
        "steps": steps,
        "replies": replies,
    }


def tell(
    outputs: list[dict[str, Any]], parts: dict[str, Any], texts: dict[str, int]
) -> dict[str, Any]:
    """The stories of `outputs` (every column of each) from `story_parts`, keyed like the
    table's rows; each request's system prompt a number into `texts` (added to as needed)."""
    attempts, routes = parts["attempts"], parts["routes"]
    verdicts, steps, replies = parts["verdicts"], parts["steps"], parts["replies"]
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
                shown.append(
                    {
                        "position": a["position"],
                        "key": a["key"],
                        "outcome": a["outcome"],
                        "status": a["status"],
                        "latency": duration(a["latency_ms"])
                        if a["outcome"] in outcomes.SENT_OUTCOMES
                        else "",
                        "start": iso(a["start_ms"]),
                        "error_code": a["error_code"] or "",
                        "why": because,
                        "then": then,
                        "cached": bool(a["cached"]),
                        "request": _interned(from_json(a["request"]), texts),
                    }
                )
            turns.append(
                {
                    "turn": n + 1,
                    "at": iso(route["at_ms"]),
                    "chosen": route["chosen"] or "",
                    "fallback_depth": route["fallback_depth"],
                    "error_code": route["error_code"] or "",
                    "candidates": len(from_json(route["candidates"]) or []),
                    "attempts": shown,
                    # The answer of this turn (a turn whose route failed has none).
                    "reply": answers[n] if n < len(answers) and route["chosen"] else None,
                }
            )
        calls = from_json(o["tool_calls"]) or []
        grade = from_json(o["grade"]) or {}
        stories[row_key(o)] = {
            "turns": turns,
            "raw": o["raw"] or "",
            "cleaned": o["cleaned"] or "",
            "protocol": o["protocol"] or "",
            "tool_calls": [_call(c) for c in calls if isinstance(c, dict)],
            "tool_steps": steps.get(key3, []),
            "verdicts": verdicts.get(key3, []),
            "grade": {
                "result": (
                    f"unanswered ({o['unanswered']})" if o.get("unanswered") else _grade_word(o)
                ),
                "score": "" if o["score"] is None else f"{o['score']:.2f}",
                "checks": [
                    [k, "pass" if ok else "fail"] for k, ok in (grade.get("checks") or {}).items()
                ],
                "reason": grade.get("reason") or "",
            },
            "error": f"{o['error_code']}: {o['error_message'] or ''}" if o["error_code"] else "",
        }
    return stories


def _call(c: dict[str, Any]) -> dict[str, str]:
    """A tool call as the story shows it: its arguments as JSON (or as written, when they
    could not be read), how it came (native or in the text) and the text's family."""
    invalid = bool(c.get("invalid"))
    return {
        "name": str(c.get("name") or ""),
        "arguments": str(c.get("raw_arguments") or "")
        if invalid
        else json.dumps(c.get("arguments"), ensure_ascii=False),
        "protocol": str(c.get("source") or ""),
        "family": str(c.get("family") or ""),
        "invalid": str(c.get("invalid_reason") or "") if invalid else "",
    }


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


def row_key(o: dict[str, Any]) -> str:
    return f"{o['item_id']}|{int(o['repeat'])}|{o['config']}"


def _grade_word(o: dict[str, Any]) -> str:
    """An output's grade as the report's filter shows it: "error" for one that failed (not
    held: no answer, so no verdict, whatever an older row's `passed` says), else the verdict."""
    if o.get("error_code"):
        return "error"
    passed = o["passed"]
    return "ungraded" if passed is None else "pass" if passed else "fail"


def chains(wb: RunFrames, run_id: str) -> list[dict[str, Any]]:
    """Each configuration's candidate chain, said once (not on every route)."""
    return [
        {"config": c, "candidates": from_json(cands) or [], "routes": n}
        for c, cands, n in run_rows.chains(wb, run_id)
    ]


def run_info(wb: RunFrames, run_id: str) -> dict[str, Any]:
    run = wb.store.run(run_id)  # RUN_UNKNOWN
    started, finished = run.started_at, run.finished_at
    took = (finished - started).total_seconds() * 1000 if started and finished else None
    return {
        "id": run_id,
        "name": run.name or "",
        "dataset": run.dataset or "",
        "status": run.status or "",
        "started": iso(started.replace(tzinfo=UTC).timestamp() * 1000) if started else "",
        "finished": iso(finished.replace(tzinfo=UTC).timestamp() * 1000) if finished else "",
        "took": duration(took),
        "version": run.version or "",
        "settings": run.settings,
    }
