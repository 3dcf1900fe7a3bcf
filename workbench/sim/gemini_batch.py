"""Gemini's batch mode on the simulator's native surface, as `google-genai` calls it (input and
responses files go through `gemini_files.py`).

    POST   /V/models/{model}:batchGenerateContent   {"batch": {display_name, input_config:
           {"requests": {"requests": [{request, metadata}]}} | {"file_name": "files/…"}}}
    GET    /V/batches[?pageSize&pageToken], /V/batches/{id}
    POST   /V/batches/{id}:cancel
    DELETE /V/batches/{id}

V is v1beta (the API's documented version), v1 (google-genai's default) or v1alpha; on v1,
the paths OpenAI's Files and Batch APIs also use are Google's when the request carries
Google's key (`x-goog-api-key` or `?key=`) or upload headers (`batch_routes.py`).

A batch is an Operation (`name` batches/…, `metadata` the GenerateContentBatch with its
`state` BATCH_STATE_*, `batchStats` and, once ended, `output`; `done`; `response` or
`error`), which is what the SDK reads into a BatchJob. Inline requests come back as
`inlinedResponses` (each with its request's `metadata`); a file's as a `responsesFile` of
{"key", "response"} or {"key", "error"} lines. Lines a cancel or an expiry stopped come back
as errors, so every key is accounted for.
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
    iso,
    json_response,
    new_id,
)
from workbench.sim.gemini_files import error, field, page_of

TYPE_BATCH = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
TYPE_OUTPUT = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
STATES = {
    "validating": "BATCH_STATE_PENDING",
    "in_progress": "BATCH_STATE_RUNNING",
    "finalizing": "BATCH_STATE_RUNNING",
    "completed": "BATCH_STATE_SUCCEEDED",
    "failed": "BATCH_STATE_FAILED",
    "expired": "BATCH_STATE_EXPIRED",
    "cancelling": "BATCH_STATE_CANCELLED",
    "cancelled": "BATCH_STATE_CANCELLED",
}
#: google.rpc.Status of a line a cancel or an expiry stopped, and of the operation itself
NOT_RUN = {
    "expired": {
        "code": 4,
        "message": "The batch expired before this request ran.",
        "status": "DEADLINE_EXCEEDED",
    },
    "cancelled": {
        "code": 1,
        "message": "The batch was cancelled before this request ran.",
        "status": "CANCELLED",
    },
}
NOT_RUN["cancelling"] = NOT_RUN["cancelled"]


def _line_error(outcome_body: Any) -> dict[str, Any]:
    """The google.rpc.Status of a refused line (the synchronous error body's `error`)."""
    err = outcome_body.get("error") if isinstance(outcome_body, dict) else None
    if not isinstance(err, dict):
        return {"code": 13, "message": "internal error", "status": "INTERNAL"}
    return {k: err[k] for k in ("code", "message", "status") if k in err}


def _line_results(job: BatchJob, now: float) -> list[tuple[str, dict[str, Any]]]:
    """Each line's key and its result ({"response": …} or {"error": …}), in line order."""
    state = job.state(now)
    done = set(job.done(now))
    results: list[tuple[str, dict[str, Any]]] = []
    for i, outcome in enumerate(job.outcomes):
        if i in done:
            result = (
                {"response": outcome.body} if outcome.ok else {"error": _line_error(outcome.body)}
            )
        else:
            result = {"error": dict(NOT_RUN.get(state, NOT_RUN["cancelled"]))}
        results.append((outcome.key, result))
    return results


class GeminiBatches:
    """The handlers, over the simulator's `BatchBook`."""

    def __init__(self, book: BatchBook) -> None:
        self.book = book

    async def create(self, request: Request, model: str) -> Response:
        """`models/{model}:batchGenerateContent`, reached through the server's models route."""
        if self.book.fleet.get(model) is None:
            return error(
                404,
                f"models/{model} is not found for API version "
                f"{request.path_params.get('version', 'v1beta')}, or is not supported "
                "for batchGenerateContent.",
            )
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            body = None
        batch = body.get("batch") if isinstance(body, dict) else None
        if not isinstance(batch, dict):
            return error(400, "* BatchGenerateContentRequest.batch: batch is required.")
        config = field(batch, "inputConfig", "input_config")
        if not isinstance(config, dict):
            return error(400, "* GenerateContentBatch.input_config: input_config is required.")
        requests = config.get("requests")
        file_name = field(config, "fileName", "file_name")
        if (requests is None) == (file_name is None):
            return error(400, "input_config needs exactly one of requests or file_name.")
        info: dict[str, Any] = {
            "display_name": str(field(batch, "displayName", "display_name") or ""),
            "source": "file" if file_name is not None else "inline",
        }
        problems: list[dict[str, Any]] = []
        if requests is not None:
            items = requests.get("requests") if isinstance(requests, dict) else None
            if not isinstance(items, list) or not items:
                return error(400, "input_config.requests.requests must be a non-empty list.")
            lines: list[LineRequest] = []
            metadata: list[Any] = []
            for i, item in enumerate(items):
                if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
                    return error(400, f"input_config.requests.requests[{i}].request is required.")
                meta = item.get("metadata")
                key = meta.get("key") if isinstance(meta, dict) else None
                lines.append(
                    LineRequest(str(key if key is not None else i), model, item["request"])
                )
                metadata.append(meta)
            info["metadata"] = metadata
        else:
            source = self.book.file(str(file_name), "gemini")
            if source is None:
                return error(404, f"File {file_name} was not found.")
            info["file_name"] = source.name
            lines, problems = self._read_file(source.data, model)
        job = self.book.submit(new_id(""), "gemini", model, lines, problems, info)
        return json_response(200, self.operation(job))

    def _read_file(self, data: bytes, model: str) -> tuple[list[LineRequest], list[dict[str, Any]]]:
        lines: list[LineRequest] = []
        problems: list[dict[str, Any]] = []
        numbered = [
            (n, raw)
            for n, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1)
            if raw.strip()
        ]
        if not numbered:
            problems.append({"line": 1, "message": "The input file holds no requests."})
        for n, raw in numbered:
            try:
                item = json.loads(raw)
            except ValueError:
                problems.append({"line": n, "message": f"Line {n} is not valid JSON."})
                continue
            if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
                problems.append({"line": n, "message": f"Line {n} has no 'request' object."})
                continue
            key = item.get("key")
            lines.append(LineRequest(str(key if key is not None else n), model, item["request"]))
        return lines, problems

    def _job(self, job_id: str) -> BatchJob | Response:
        job = self.book.job(job_id, "gemini")
        if job is None:
            return error(404, f"Batch batches/{job_id} was not found.")
        return job

    async def list_batches(self, request: Request) -> Response:
        if request.method != "GET":
            return error(404, "Create a batch with models/{model}:batchGenerateContent.")
        paged = page_of(self.book.list_jobs("gemini"), request)
        if isinstance(paged, Response):
            return paged
        page, token = paged
        body: dict[str, Any] = {"operations": [self.operation(j) for j in page]}
        if token:
            body["nextPageToken"] = token
        return json_response(200, body)

    async def one_batch(self, request: Request, rest: str) -> Response:
        job_id, _, method = rest.partition(":")
        job = self._job(job_id)
        if isinstance(job, Response):
            return job
        if request.method == "GET" and not method:
            return json_response(200, self.operation(job))
        if request.method == "DELETE" and not method:
            self.book.delete_job(job.id, "gemini")
            return json_response(200, {})
        if request.method == "POST" and method == "cancel":
            if not self.book.cancel(job, grace=0.0):
                state = STATES[job.state(self.book.clock())]
                return error(400, f"The batch has ended ({state}); it cannot be cancelled.")
            return json_response(200, {})
        return error(404, f"Unknown method {request.method} {method!r} on batches/{job_id}.")

    # -- the resource

    def _write_responses(self, job: BatchJob, now: float) -> dict[str, StoredFile]:
        if job.info.get("source") != "file" or not job.outcomes:
            return {}
        rows = [json.dumps({"key": key, **result}) for key, result in _line_results(job, now)]
        return {
            "output": StoredFile(
                name=f"files/batch-{job.id}",
                vendor="gemini",
                data=("\n".join(rows) + "\n").encode(),
                created=now,
                filename=f"batch-{job.id}",
                mime="application/jsonl",
                generated=True,
            )
        }

    def operation(self, job: BatchJob) -> dict[str, Any]:
        """The batch as an Operation, at this moment of its clock."""
        now = self.book.clock()
        state = job.state(now)
        ended = job.ended_at(now)
        files = self.book.settle(job, now, self._write_responses)
        counts = job.counts(now) if not job.problems else {"total": 0, "completed": 0, "failed": 0}
        pending = counts["total"] - counts["completed"] - counts["failed"]
        metadata: dict[str, Any] = {
            "@type": TYPE_BATCH,
            "model": f"models/{job.model}",
            "displayName": job.info.get("display_name", ""),
            "createTime": iso(job.created),
            "updateTime": iso(ended if ended is not None else now),
            "batchStats": {
                "requestCount": str(counts["total"]),
                "successfulRequestCount": str(counts["completed"]),
                "failedRequestCount": str(counts["failed"]),
                "pendingRequestCount": str(pending),
            },
            "state": STATES[state],
            "name": f"batches/{job.id}",
        }
        if job.info.get("file_name"):
            metadata["inputConfig"] = {"fileName": job.info["file_name"]}
        op: dict[str, Any] = {"name": f"batches/{job.id}", "metadata": metadata}
        if ended is None and state != "cancelling":
            op["done"] = False
            return op
        metadata["endTime"] = iso(ended if ended is not None else now)
        op["done"] = True
        output: dict[str, Any] | None = None
        if files.get("output"):
            output = {"responsesFile": files["output"]}
        elif job.outcomes:
            inlined = []
            for (_, result), meta in zip(
                _line_results(job, now), job.info.get("metadata", []), strict=False
            ):
                entry = dict(result)
                if meta is not None:
                    entry["metadata"] = meta
                inlined.append(entry)
            output = {"inlinedResponses": {"inlinedResponses": inlined}}
        if output is not None:
            metadata["output"] = output
        if state == "failed":
            lines = "; ".join(p["message"] for p in job.problems)
            op["error"] = {"code": 3, "message": f"The batch input is invalid: {lines}"}
        elif state in NOT_RUN:
            op["error"] = {k: v for k, v in NOT_RUN[state].items() if k != "status"}
        elif output is not None:
            op["response"] = {"@type": TYPE_OUTPUT, **output}
        return op
