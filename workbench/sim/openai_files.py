"""OpenAI's Files API on the simulator's /v1 surface: where batch input goes in and batch
output comes out, as the `openai` SDK calls it.

    POST   /v1/files                  multipart: purpose, file      -> a file object
    GET    /v1/files[?purpose&limit&after&order], /v1/files/{id}, /v1/files/{id}/content
    DELETE /v1/files/{id}
"""

from __future__ import annotations

from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from workbench.sim.batch_jobs import BatchBook, StoredFile, json_response, new_id

PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")


def error(status: int, message: str, param: str | None = None, code: str | None = None) -> Response:
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


def page(items: list[dict[str, Any]], request: Request) -> Response:
    """A cursor page: `after` an id, at most `limit` (1..100, default 20) items."""
    raw_limit = request.query_params.get("limit", "20")
    try:
        limit = int(raw_limit)
    except ValueError:
        return error(400, f"Invalid 'limit': {raw_limit!r} is not an integer.", "limit")
    if not 1 <= limit <= 100:
        return error(400, f"Invalid 'limit': {limit} must be between 1 and 100.", "limit")
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


class OpenAIFiles:
    """The handlers, over the simulator's `BatchBook` (which holds both vendors' files)."""

    def __init__(self, book: BatchBook) -> None:
        self.book = book

    async def files(self, request: Request) -> Response:
        if request.method == "GET":
            purpose = request.query_params.get("purpose")
            found = [
                f for f in self.book.list_files("openai") if not purpose or f.purpose == purpose
            ]
            ascending = request.query_params.get("order") == "asc"
            found.sort(key=lambda f: f.created, reverse=not ascending)
            return page([file_object(f) for f in found], request)
        content_type = request.headers.get("content-type", "")
        if not content_type.startswith("multipart/form-data"):
            return error(400, "Uploads must be multipart/form-data with 'purpose' and 'file'.")
        fields = _multipart(content_type, await request.body())
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", "replace").strip()
        if not purpose:
            return error(400, "Missing required parameter: 'purpose'.", "purpose")
        if purpose not in PURPOSES:
            return error(
                400,
                f"Invalid value for 'purpose': {purpose!r}. Expected one of {', '.join(PURPOSES)}.",
                "purpose",
            )
        if "file" not in fields:
            return error(400, "Missing required parameter: 'file'.", "file")
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
            return error(404, f"Unknown path /v1/files/{rest}.")
        return await self.one_file(request, ident)

    def _file(self, name: str) -> StoredFile | Response:
        found = self.book.file(name, "openai")
        if found is None:
            return error(404, f"No such File object: {name}", "id")
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
