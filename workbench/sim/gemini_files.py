"""Gemini's Files API on the simulator's native surface: where a batch's input file goes in and
its responses file comes out, as `google-genai` calls it.

    POST   /upload/V/files                           resumable upload (start, upload, finalize)
    GET    /V/files[?pageSize&pageToken], /V/files/{id}
    GET    /V/files/{id}:download?alt=media, /download/V/files/{id}:download?alt=media
    DELETE /V/files/{id}

V is v1 (google-genai's default), v1beta or v1alpha.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from workbench.sim.batch_jobs import BatchBook, StoredFile, iso, json_response, new_id


def error(status: int, message: str) -> Response:
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 409: "FAILED_PRECONDITION"}
    return json_response(
        status,
        {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}},
    )


def field(d: dict[str, Any], camel: str, snake: str) -> Any:
    return d[camel] if camel in d else d.get(snake)


def api_root(request: Request) -> str:
    """The root a URL in a reply starts with: the server's, and the API version asked."""
    version = request.path_params.get("version", "v1beta")
    return f"{str(request.base_url).rstrip('/')}/{version}"


def file_resource(f: StoredFile, base: str) -> dict[str, Any]:
    digest = base64.b64encode(hashlib.sha256(f.data).hexdigest().encode()).decode()
    out: dict[str, Any] = {
        "name": f.name,
        "displayName": f.filename,
        "mimeType": f.mime,
        "sizeBytes": str(len(f.data)),
        "createTime": iso(f.created),
        "updateTime": iso(f.created),
        "expirationTime": iso(f.created + 48 * 3600),
        "sha256Hash": digest,
        "uri": f"{base}/{f.name}",
        "state": "ACTIVE",
        "source": "GENERATED" if f.generated else "UPLOADED",
    }
    if f.generated:
        root, _, version = base.rpartition("/")
        out["downloadUri"] = f"{root}/download/{version}/{f.name}:download?alt=media"
    return out


def page_of(items: list[Any], request: Request) -> tuple[list[Any], str | None] | Response:
    """One page (`pageSize`, default 50; `pageToken` the offset the previous page handed out)."""
    try:
        size = int(request.query_params.get("pageSize") or 50)
        start = int(request.query_params.get("pageToken") or 0)
    except ValueError:
        return error(400, "pageSize and pageToken must be integers.")
    if size < 1 or start < 0:
        return error(400, "pageSize must be positive and pageToken not negative.")
    page = items[start : start + size]
    return page, str(start + size) if start + size < len(items) else None


class GeminiFiles:
    """The handlers, over the simulator's `BatchBook` (which holds both vendors' files)."""

    def __init__(self, book: BatchBook) -> None:
        self.book = book

    async def upload(self, request: Request) -> Response:
        """Google's resumable protocol: `start` hands out an upload URL; `upload` appends at
        an offset; `finalize` makes the file."""
        command = request.headers.get("x-goog-upload-command", "").replace(" ", "").split(",")
        upload_id = request.query_params.get("upload_id")
        if "start" in command:
            try:
                body = json.loads(await request.body() or b"{}")
            except ValueError:
                return error(400, "The upload start body must be JSON.")
            meta = body.get("file") if isinstance(body, dict) else None
            meta = meta if isinstance(meta, dict) else {}
            name = str(meta.get("name") or "") or f"files/{new_id('')}"
            if not name.startswith("files/"):
                name = f"files/{name}"
            mime = (
                request.headers.get("x-goog-upload-header-content-type")
                or field(meta, "mimeType", "mime_type")
                or "application/octet-stream"
            )
            display = str(field(meta, "displayName", "display_name") or "")
            upload_id = new_id("")
            self.book.begin_upload(upload_id, {"name": name, "mime": mime, "display": display})
            root, _, version = api_root(request).rpartition("/")
            url = f"{root}/upload/{version}/files?upload_id={upload_id}&upload_protocol=resumable"
            return Response(
                b"",
                headers={"x-goog-upload-url": url, "x-goog-upload-status": "active"},
                media_type="application/json",
            )
        if not upload_id or "upload" not in command:
            return error(400, "Unsupported upload: use X-Goog-Upload-Protocol: resumable.")
        try:
            offset = int(request.headers.get("x-goog-upload-offset", "0"))
        except ValueError:
            return error(400, "X-Goog-Upload-Offset must be an integer.")
        got = self.book.add_upload_chunk(upload_id, offset, await request.body())
        if isinstance(got, str):
            return error(400, got)
        if "finalize" not in command:
            return Response(b"", headers={"x-goog-upload-status": "active"})
        meta, data = self.book.finish_upload(upload_id)
        stored = self.book.add_file(
            StoredFile(
                name=meta["name"],
                vendor="gemini",
                data=data,
                created=self.book.clock(),
                filename=meta["display"],
                mime=meta["mime"],
            )
        )
        return json_response(
            200,
            {"file": file_resource(stored, api_root(request))},
            headers={"x-goog-upload-status": "final"},
        )

    async def list_files(self, request: Request) -> Response:
        if request.method != "GET":
            return error(404, "Upload files at /upload/{version}/files.")
        files = sorted(self.book.list_files("gemini"), key=lambda f: f.created, reverse=True)
        paged = page_of(files, request)
        if isinstance(paged, Response):
            return paged
        page, token = paged
        body: dict[str, Any] = {"files": [file_resource(f, api_root(request)) for f in page]}
        if token:
            body["nextPageToken"] = token
        return json_response(200, body)

    async def one_file(self, request: Request, rest: str) -> Response:
        name, _, method = rest.partition(":")
        stored = self.book.file(f"files/{name}", "gemini")
        if stored is None:
            return error(404, f"File files/{name} was not found.")
        if method == "download" or request.url.path.startswith("/download/"):
            if method != "download":
                return error(404, f"Unknown method on files/{name}.")
            return Response(stored.data, media_type=stored.mime)
        if method:
            return error(404, f"Unknown method {method!r} on files/{name}.")
        if request.method == "DELETE":
            self.book.delete_file(stored.name, "gemini")
            return json_response(200, {})
        return json_response(200, file_resource(stored, api_root(request)))
