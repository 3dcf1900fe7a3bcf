"""OpenAI's Batch API on the simulator's /v1 surface, as the `openai` SDK calls it (the input
and output files go through `openai_files.py`).

    POST   /v1/batches                {input_file_id, endpoint, completion_window, metadata}
    GET    /v1/batches[?limit&after], /v1/batches/{id}
    POST   /v1/batches/{id}/cancel

Only `/v1/chat/completions` batches are served. An input file is validated the way OpenAI
does it (every line JSON with a unique custom_id, method POST, the batch's url, one known
model); a file that fails gives a `failed` batch whose `errors.data` names each bad line.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from workbench.sim.batch_jobs import (
    BatchBook,
    BatchJob,
    LineRequest,
    StoredFile,
    json_response,
    new_id,
)
from workbench.sim.fleet import strip_model_prefix
from workbench.sim.openai_files import error, page

ENDPOINT = "/v1/chat/completions"
WINDOW_S = 24 * 3600
NOT_RUN = {
    "expired": (
        "batch_expired",
        "This request could not be executed before the completion window expired.",
    ),
    "cancelled": ("batch_cancelled", "This request was not executed: the batch was cancelled."),
}


def read_lines(data: bytes, book: BatchBook) -> tuple[list[LineRequest], list[dict[str, Any]]]:
    """The requests of an input file and the problems that fail it (each naming its line)."""
    problems: list[dict[str, Any]] = []
    lines: list[LineRequest] = []
    seen: set[str] = set()
    models: set[str] = set()

    def bad(code: str, line: int, message: str, param: str | None = None) -> None:
        problems.append({"code": code, "line": line, "message": message, "param": param})

    text = data.decode("utf-8", "replace")
    numbered = [(n, raw) for n, raw in enumerate(text.splitlines(), 1) if raw.strip()]
    if not numbered:
        bad("empty_file", 1, "The batch input file is empty.")
    for n, raw in numbered:
        try:
            item = json.loads(raw)
        except ValueError:
            bad("invalid_json_line", n, "This line is not parseable as valid JSON.")
            continue
        if not isinstance(item, dict):
            bad("invalid_json_line", n, "This line is not a JSON object.")
            continue
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            bad(
                "missing_required_parameter",
                n,
                "Missing required parameter: 'custom_id'.",
                "custom_id",
            )
            continue
        if custom_id in seen:
            bad(
                "duplicate_custom_id",
                n,
                f"The custom_id {custom_id!r} is used more than once in this batch.",
                "custom_id",
            )
            continue
        seen.add(custom_id)
        if item.get("method") != "POST":
            bad("invalid_method", n, "The method of every request must be POST.", "method")
            continue
        if item.get("url") != ENDPOINT:
            bad(
                "invalid_url",
                n,
                f"The URL provided for this request does not match the batch endpoint {ENDPOINT}.",
                "url",
            )
            continue
        body = item.get("body")
        if not isinstance(body, dict):
            bad("missing_required_parameter", n, "Missing required parameter: 'body'.", "body")
            continue
        model = strip_model_prefix(str(body.get("model") or ""))
        if book.fleet.get(model) is None:
            bad(
                "model_not_found",
                n,
                f"The provided model '{model}' does not exist or you do not have access to it.",
                "body.model",
            )
            continue
        models.add(model)
        if len(models) > 1:
            bad(
                "mismatched_model",
                n,
                "Each batch can only include requests to a single model.",
                "body.model",
            )
            continue
        lines.append(LineRequest(custom_id, model, body))
    return lines, problems


def _line_json(job: BatchJob, index: int) -> dict[str, Any]:
    outcome = job.outcomes[index]
    return {
        "id": f"batch_req_{job.id[len('batch_') :]}_{index + 1}",
        "custom_id": outcome.key,
        "response": {
            "status_code": outcome.status,
            "request_id": f"req_{job.id[len('batch_') :]}_{index + 1}",
            "body": outcome.body,
        },
        "error": None,
    }


def _write_outputs(job: BatchJob, now: float) -> dict[str, StoredFile]:
    """The output file (lines answered 200) and the error file (the rest), when not empty."""
    state = job.state(now)
    done = set(job.done(now))
    out: list[str] = []
    err: list[str] = []
    for i, outcome in enumerate(job.outcomes):
        if i in done:
            (out if outcome.ok else err).append(json.dumps(_line_json(job, i)))
        elif state in NOT_RUN:
            code, message = NOT_RUN[state]
            err.append(
                json.dumps(
                    {
                        "id": f"batch_req_{job.id[len('batch_') :]}_{i + 1}",
                        "custom_id": outcome.key,
                        "response": None,
                        "error": {"code": code, "message": message},
                    }
                )
            )
    files: dict[str, StoredFile] = {}
    for role, rows in (("output", out), ("error", err)):
        if rows:
            files[role] = StoredFile(
                name=new_id("file-"),
                vendor="openai",
                data=("\n".join(rows) + "\n").encode(),
                created=now,
                filename=f"batch_{job.id[len('batch_') :]}_{role}.jsonl",
                purpose="batch_output",
                generated=True,
            )
    return files


def batch_object(job: BatchJob, book: BatchBook) -> dict[str, Any]:
    """The batch as OpenAI documents it, at this moment of its clock."""
    now = book.clock()
    state = job.state(now)
    files = book.settle(job, now, _write_outputs)

    def at(moment: float | None, reached: bool) -> int | None:
        return int(moment) if moment is not None and reached else None

    ran = not job.problems
    usage = {"input": 0, "output": 0}
    for i in job.done(now):
        u = job.outcomes[i].body.get("usage") if job.outcomes[i].ok else None
        if isinstance(u, dict):
            usage["input"] += int(u.get("prompt_tokens", 0))
            usage["output"] += int(u.get("completion_tokens", 0))
    expires = job.expires_at if job.expiring and job.expires_at else job.created + WINDOW_S
    return {
        "id": job.id,
        "object": "batch",
        "endpoint": job.info.get("endpoint", ENDPOINT),
        "model": job.model or None,
        # What validation found shows once it has finished, as the batch fails.
        "errors": {"object": "list", "data": list(job.problems)} if state == "failed" else None,
        "input_file_id": job.info["input_file_id"],
        "completion_window": job.info.get("completion_window", "24h"),
        "status": state,
        "output_file_id": files.get("output"),
        "error_file_id": files.get("error"),
        "created_at": int(job.created),
        "in_progress_at": at(job.started_at, ran and now >= job.started_at),
        "expires_at": int(expires),
        "finalizing_at": at(
            job.finalizing_at,
            ran and now >= job.finalizing_at and job.finalizing_at < job.stop_at(),
        ),
        "completed_at": at(job.completed_at, state == "completed"),
        "failed_at": at(job.started_at, state == "failed"),
        "expired_at": at(job.expires_at, state == "expired"),
        "cancelling_at": at(job.cancelled_at, job.cancelled_at is not None),
        "cancelled_at": at(
            job.cancelling_until if job.cancelled_at else None, state == "cancelled"
        ),
        # Lines are counted once validated: a validating or failed batch counts none.
        "request_counts": (
            job.counts(now)
            if ran and state != "validating"
            else {"total": 0, "completed": 0, "failed": 0}
        ),
        "usage": {
            "input_tokens": usage["input"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage["output"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["input"] + usage["output"],
        },
        "metadata": job.info.get("metadata"),
    }


class OpenAIBatches:
    """The handlers, over the simulator's `BatchBook`."""

    def __init__(self, book: BatchBook) -> None:
        self.book = book

    async def batch_path(self, request: Request, rest: str) -> Response:
        """/v1/batches/{id} (GET) and /v1/batches/{id}/cancel (POST)."""
        ident, _, tail = rest.partition("/")
        if tail == "cancel" and request.method == "POST":
            return await self.cancel(request, ident)
        if tail or request.method != "GET":
            return error(404, f"Unknown path {request.method} /v1/batches/{rest}.")
        return await self.one_batch(request, ident)

    async def batches(self, request: Request) -> Response:
        if request.method == "GET":
            jobs = self.book.list_jobs("openai")
            return page([batch_object(j, self.book) for j in jobs], request)
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return error(400, "The request body must be a JSON object.")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not body.get(name):
                return error(400, f"Missing required parameter: '{name}'.", name)
        if body["endpoint"] != ENDPOINT:
            return error(
                400,
                f"Invalid value for 'endpoint': the simulator serves only {ENDPOINT} batches, "
                f"not {body['endpoint']!r}.",
                "endpoint",
            )
        if body["completion_window"] != "24h":
            return error(
                400,
                f"Invalid value for 'completion_window': {body['completion_window']!r}. "
                "Supported values are: '24h'.",
                "completion_window",
            )
        metadata = body.get("metadata")
        if metadata is not None and (
            not isinstance(metadata, dict)
            or len(metadata) > 16
            or not all(isinstance(v, str) for v in metadata.values())
        ):
            return error(
                400, "'metadata' must be at most 16 string keys with string values.", "metadata"
            )
        source = self.book.file(str(body["input_file_id"]), "openai")
        if source is None:
            return error(400, f"No such File object: {body['input_file_id']}", "input_file_id")
        if source.purpose != "batch":
            return error(
                400,
                f"The file {source.name} was uploaded with purpose {source.purpose!r}, "
                "not 'batch'.",
                "input_file_id",
            )
        lines, problems = read_lines(source.data, self.book)
        job = self.book.submit(
            new_id("batch_"),
            "openai",
            lines[0].model if lines else "",
            lines,
            problems,
            {
                "endpoint": ENDPOINT,
                "input_file_id": source.name,
                "completion_window": "24h",
                "metadata": metadata,
            },
        )
        return json_response(200, batch_object(job, self.book))

    def _job(self, job_id: str) -> BatchJob | Response:
        job = self.book.job(job_id, "openai")
        if job is None:
            return error(404, f"No batch found with id '{job_id}'.", "batch_id")
        return job

    async def one_batch(self, request: Request, job_id: str) -> Response:
        job = self._job(job_id)
        if isinstance(job, Response):
            return job
        return json_response(200, batch_object(job, self.book))

    async def cancel(self, request: Request, job_id: str) -> Response:
        job = self._job(job_id)
        if isinstance(job, Response):
            return job
        if not self.book.cancel(job):
            state = job.state(self.book.clock())  # one that ended otherwise
            return error(400, f"Cannot cancel a batch with status '{state}'.")
        return json_response(200, batch_object(job, self.book))
