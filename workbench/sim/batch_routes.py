"""Which batch API a request on the files and batches paths is for: OpenAI's or Google's.

Both vendors put files and batches under `/v1` (google-genai calls Gemini's API at v1 by
default), so the path alone cannot say. A request carrying Google's key (`x-goog-api-key`,
`?key=`) or Google's upload headers is Google's; any other request on `/v1` is OpenAI's, and
`/v1beta`, `/v1alpha`, `/upload/…` and `/download/…` are only ever Google's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.sim.batch_jobs import BatchBook
from workbench.sim.gemini_batch import GeminiBatches
from workbench.sim.gemini_files import GeminiFiles
from workbench.sim.openai_batch import OpenAIBatches
from workbench.sim.openai_files import OpenAIFiles

#: refuses a keyless request when the fleet wants keys (the server's own check)
KeyCheck = Callable[[Request, str], Response | None]
Handler = Callable[[Request], Awaitable[Response]]

GOOGLE_VERSIONS = ("v1", "v1beta", "v1alpha")


def is_google(request: Request) -> bool:
    version = request.path_params.get("version", "v1")
    if version != "v1" or not request.url.path.startswith("/v1/"):
        return True
    headers = request.headers
    return bool(
        headers.get("x-goog-api-key")
        or request.query_params.get("key")
        or headers.get("x-goog-upload-protocol")
        or headers.get("x-goog-upload-command")
    )


def batch_routes(book: BatchBook, gemini: GeminiBatches, key_check: KeyCheck) -> list[Route]:
    """The files and batches routes of both vendors over `book` (`gemini` also serves the
    models route's `:batchGenerateContent`, so the server holds it)."""
    openai, openai_files, gemini_files = OpenAIBatches(book), OpenAIFiles(book), GeminiFiles(book)

    def route(path: str, methods: list[str], mine: Handler, theirs: Handler) -> Route:
        async def endpoint(request: Request) -> Response:
            version = request.path_params.get("version", "v1")
            if version not in GOOGLE_VERSIONS:
                return Response(status_code=404)
            google = is_google(request)
            handler = theirs if google else mine
            return key_check(request, "gemini" if google else "openai") or await handler(request)

        return Route(path, endpoint, methods=methods)

    def rest(handler: Callable[[Request, str], Awaitable[Response]]) -> Handler:
        async def call(request: Request) -> Response:
            return await handler(request, request.path_params["rest"])

        return call

    async def none(request: Request) -> Response:
        return Response(status_code=404)

    return [
        route("/{version}/files", ["GET", "POST"], openai_files.files, gemini_files.list_files),
        route(
            "/{version}/files/{rest:path}",
            ["GET", "DELETE"],
            rest(openai_files.file_path),
            rest(gemini_files.one_file),
        ),
        route("/{version}/batches", ["GET", "POST"], openai.batches, gemini.list_batches),
        route(
            "/{version}/batches/{rest:path}",
            ["GET", "POST", "DELETE"],
            rest(openai.batch_path),
            rest(gemini.one_batch),
        ),
        route("/upload/{version}/files", ["POST"], none, gemini_files.upload),
        route("/download/{version}/files/{rest:path}", ["GET"], none, rest(gemini_files.one_file)),
    ]
