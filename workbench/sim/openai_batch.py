"""OpenAI's Files and Batch APIs on the simulator's /v1 surface, as the `openai` SDK calls them.

    POST   /v1/files                  multipart: purpose, file      -> a file object
    GET    /v1/files[?purpose&limit&after&order], /v1/files/{id}, /v1/files/{id}/content
    DELETE /v1/files/{id}
    POST   /v1/batches                {input_file_id, endpoint, completion_window, metadata}
    GET    /v1/batches[?limit&after], /v1/batches/{id}
    POST   /v1/batches/{id}/cancel

Only `/v1/chat/completions` batches are served. An input file is validated the way OpenAI
does it (every line JSON with a unique custom_id, method POST, the batch's url, one known
model); a file that fails gives a `failed` batch whose `errors.data` names each bad line.
"""

from __future__ import annotations

import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from workbench.sim.batch_jobs import (
    TERMINAL,
    BatchBook,
    BatchJob,
    LineRequest,
    StoredFile,
    json_response,
    new_id,
)
from workbench.sim.fleet import strip_model_prefix

ENDPOINT = "/v1/chat/completions"
WINDOW_S = 24 * 3600
PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
NOT_RUN = {
    "expired": (
        "batch_expired",
        "This request could not be executed before the completion window expired.",
    ),
    "cancelled": ("batch_cancelled", "This request was not executed: the batch was cancelled."),
}


def _error(
    status: int, message: str, param: str | None = None, code: str | None = None
) -> Response:
    return json_response(
        status,
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": code,
            }
        },
    )


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body's fields: name -> (filename, bytes). The stdlib's MIME
    parser reads it, so the simulator needs no form library."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        fields[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return fields


def file_object(f: StoredFile) -> dict[str, Any]:
    return {
        "id": f.name,
        "object": "file",
        "bytes": len(f.data),
        "created_at": int(f.created),
        "filename": f.filename,
        "purpose": f.purpose,
        "status": "processed",
        "expires_at": None,
        "status_details": None,
    }


def _page(items: list[dict[str, Any]], request: Request) -> Response:
    """A cursor page: `after` an id, at most `limit` (1..100, default 20) items."""
    raw_limit = request.query_params.get("limit", "20")
    try:
        limit = int(raw_limit)
    except ValueError:
        return _error(400, f"Invalid 'limit': {raw_limit!r} is not an integer.", "limit")
    if not 1 <= limit <= 100:
        return _error(400, f"Invalid 'limit': {limit} must be between 1 and 100.", "limit")
    after = request.query_params.get("after")
    if after:
        ids = [item["id"] for item in items]
        if after in ids:
            items = items[ids.index(after) + 1 :]
    page = items[:limit]
    return json_response(
        200,
        {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(items) > limit,
        },
    )


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


def _write_outputs(job: BatchJob, book: BatchBook) -> dict[str, StoredFile]:
    """The output file (lines answered 200) and the error file (the rest), when not empty."""
    now = book.clock()
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
    files = book.settle(job, lambda j: _write_outputs(j, book))

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
        "errors": {"object": "list", "data": list(job.problems)} if job.problems else None,
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
        "request_counts": job.counts(now) if ran else {"total": 0, "completed": 0, "failed": 0},
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

    # -- files

    async def files(self, request: Request) -> Response:
        if request.method == "GET":
            purpose = request.query_params.get("purpose")
            found = [
                f for f in self.book.list_files("openai") if not purpose or f.purpose == purpose
            ]
            ascending = request.query_params.get("order") == "asc"
            found.sort(key=lambda f: f.created, reverse=not ascending)
            return _page([file_object(f) for f in found], request)
        content_type = request.headers.get("content-type", "")
        if not content_type.startswith("multipart/form-data"):
            return _error(400, "Uploads must be multipart/form-data with 'purpose' and 'file'.")
        fields = _multipart(content_type, await request.body())
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", "replace").strip()
        if not purpose:
            return _error(400, "Missing required parameter: 'purpose'.", "purpose")
        if purpose not in PURPOSES:
            return _error(
                400,
                f"Invalid value for 'purpose': {purpose!r}. Expected one of {', '.join(PURPOSES)}.",
                "purpose",
            )
        if "file" not in fields:
            return _error(400, "Missing required parameter: 'file'.", "file")
        filename, data = fields["file"]
        stored = self.book.add_file(
            StoredFile(
                name=new_id("file-"),
                vendor="openai",
                data=data,
                created=self.book.clock(),
                filename=filename or "upload",
                purpose=purpose,
            )
        )
        return json_response(200, file_object(stored))

    async def file_path(self, request: Request, rest: str) -> Response:
        """/v1/files/{id} (GET, DELETE) and /v1/files/{id}/content (GET)."""
        ident, _, tail = rest.partition("/")
        if tail == "content" and request.method == "GET":
            return await self.content(request, ident)
        if tail:
            return _error(404, f"Unknown path /v1/files/{rest}.")
        return await self.one_file(request, ident)

    async def batch_path(self, request: Request, rest: str) -> Response:
        """/v1/batches/{id} (GET) and /v1/batches/{id}/cancel (POST)."""
        ident, _, tail = rest.partition("/")
        if tail == "cancel" and request.method == "POST":
            return await self.cancel(request, ident)
        if tail or request.method != "GET":
            return _error(404, f"Unknown path {request.method} /v1/batches/{rest}.")
        return await self.one_batch(request, ident)

    def _file(self, name: str) -> StoredFile | Response:
        found = self.book.file(name, "openai")
        if found is None:
            return _error(404, f"No such File object: {name}", "id")
        return found

    async def one_file(self, request: Request, name: str) -> Response:
        found = self._file(name)
        if isinstance(found, Response):
            return found
        if request.method == "DELETE":
            self.book.delete_file(found.name, "openai")
            return json_response(200, {"id": found.name, "object": "file", "deleted": True})
        return json_response(200, file_object(found))

    async def content(self, request: Request, name: str) -> Response:
        found = self._file(name)
        if isinstance(found, Response):
            return found
        return Response(found.data, media_type="application/octet-stream")

    # -- batches

    async def batches(self, request: Request) -> Response:
        if request.method == "GET":
            jobs = self.book.list_jobs("openai")
            return _page([batch_object(j, self.book) for j in jobs], request)
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not body.get(name):
                return _error(400, f"Missing required parameter: '{name}'.", name)
        if body["endpoint"] != ENDPOINT:
            return _error(
                400,
                f"Invalid value for 'endpoint': the simulator serves only {ENDPOINT} batches, "
                f"not {body['endpoint']!r}.",
                "endpoint",
            )
        if body["completion_window"] != "24h":
            return _error(
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
            return _error(
                400, "'metadata' must be at most 16 string keys with string values.", "metadata"
            )
        source = self.book.file(str(body["input_file_id"]), "openai")
        if source is None:
            return _error(400, f"No such File object: {body['input_file_id']}", "input_file_id")
        if source.purpose != "batch":
            return _error(
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
            return _error(404, f"No batch found with id '{job_id}'.", "batch_id")
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
            state = job.state(self.book.clock())
            assert state in TERMINAL
            return _error(400, f"Cannot cancel a batch with status '{state}'.")
        return json_response(200, batch_object(job, self.book))
