"""The vendors' batch APIs: many chat requests submitted at once, answered within hours, at
half the price of asking them one by one.

A `BatchAPI` speaks to one provider's batch endpoint for one model: `submit` a set of
requests (each under a `custom_id`), `poll` the batch, read its `results`. Each result is
read by the provider's own adapter (`HttpProvider.read_reply`), so a batch answer is the same
`Reply` the synchronous call would have made, or the same `ProviderError`.

Which providers have one (`has_batch_api`, `batch_client`):

- the OpenAI adapter against api.openai.com or api.groq.com (Groq serves OpenAI's Batch API:
  a JSONL file uploaded to `/files` with `purpose=batch`, a batch made at `/batches`, its
  output and error files read back);
- the Gemini adapter against Google (`models/{model}:batchGenerateContent`: the requests
  inline for a small set, a JSONL file through the Files API for a large one);
- any other endpoint whose providers-file entry says `batch = true` (the simulator, a
  gateway that serves one of the two APIs); `batch = false` turns it off for a provider that
  would have one.

Nothing here retries or routes: a batch has no fallback. What to do with a batch that
expired or a request it refused is the caller's (the run's batch mode sends the leftovers
again once).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import httpx

from workbench.errors import ProviderError, kind_for_status
from workbench.providers.base import HttpProvider
from workbench.providers.gemini import GeminiProvider
from workbench.providers.openai_compat import OpenAICompatibleProvider
from workbench.types import CallContext, ChatRequest, Reply

log = logging.getLogger("workbench.providers.batch_api")

BatchStatus = Literal["running", "completed", "expired", "failed", "cancelled"]
# Hosts that serve OpenAI's Batch API on the same base URL as their chat completions.
OPENAI_BATCH_HOSTS = ("api.openai.com", "api.groq.com")
# Gemini takes requests inline up to 20 MB; past this, a file is uploaded instead.
GEMINI_INLINE_BYTES = 10_000_000
_TIMEOUT_S = 120.0
# What a batch costs, as a share of the same requests asked one by one: OpenAI, Groq and
# Gemini each bill batches at half their price table.
BATCH_PRICE = 0.5


@dataclass(frozen=True, slots=True)
class BatchState:
    """A batch as its vendor last described it: `status` in our words, `raw_status` in the
    vendor's, `message` why it failed, and what `results` needs to read it (`detail`)."""

    batch_id: str
    status: BatchStatus
    raw_status: str
    message: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def over(self) -> bool:
        return self.status != "running"


@dataclass(slots=True)
class BatchResults:
    """What a finished batch answered, by custom id: a `Reply` or a `ProviderError` each;
    `expired` the ids it never reached before its window closed; `cancelled` the ids it never
    ran because the batch was cancelled; `unmatched` what the output lines that name none of
    the requests named instead (None for a line that names nothing, or is not JSON)."""

    replies: dict[str, Reply | ProviderError] = field(default_factory=dict)
    expired: set[str] = field(default_factory=set)
    cancelled: set[str] = field(default_factory=set)
    unmatched: list[str | None] = field(default_factory=list)


class BatchAPI(Protocol):
    provider: HttpProvider
    model: str
    # How long the vendor may take to finish a batch (its completion window), in seconds.
    window_s: float

    async def submit(self, requests: Mapping[str, ChatRequest], *, label: str = "") -> str:
        """Send every request (by custom id) as one batch; its id once the vendor made it."""
        ...

    async def find(self, label: str) -> str | None:
        """The id of a recent batch submitted under `label`, or None: a submit whose reply was
        lost (a timeout) may still have made its batch, billed whether we know of it or not."""
        ...

    async def poll(self, batch_id: str) -> BatchState: ...

    async def results(
        self,
        state: BatchState,
        requests: Mapping[str, ChatRequest],
        *,
        submitted: Sequence[str] = (),
    ) -> BatchResults:
        """Read a batch that is over; `requests` (by custom id) are what it was asked, which
        the reading of each reply needs (the tools offered decide which prose calls count).
        `submitted` is every custom id in the order the batch was sent: a vendor that answers
        by position (Gemini's inline responses without their key) is read by it, not by the
        order of `requests`, which may hold only some of them."""
        ...

    async def aclose(self) -> None: ...


def has_batch_api(provider: object) -> bool:
    """Whether `provider` serves a batch API we speak (see the module docstring)."""
    if not isinstance(provider, OpenAICompatibleProvider | GeminiProvider):
        return False
    if provider.batch is not None:
        return provider.batch
    try:
        host = urlsplit(provider.base_url(CallContext())).hostname or ""
    except Exception:  # a URL chosen per call, or none yet: not a known vendor's
        return False
    if isinstance(provider, GeminiProvider):
        return host.endswith("googleapis.com")
    return host in OPENAI_BATCH_HOSTS


def batch_client(provider: object, model: str, ctx: CallContext | None = None) -> BatchAPI | None:
    """The batch client for `provider`'s `model`, or None when it has no batch API. A provider
    sending through a cassette is refused: a batch's multipart uploads and polls are not
    exchanges a cassette records (`CASSETTE_UNSUPPORTED`)."""
    if not has_batch_api(provider):
        return None
    if getattr(provider, "cassette", None) is not None:
        from workbench.errors import CassetteError

        raise CassetteError(
            f"provider {getattr(provider, 'id', '?')!r} sends through a cassette, and a batch "
            "API's uploads and polls are not recorded: leave out the cassette or the batch",
            code="CASSETTE_UNSUPPORTED",
        )
    if isinstance(provider, GeminiProvider):
        return GeminiBatch(provider, model, ctx)
    assert isinstance(provider, OpenAICompatibleProvider)
    return OpenAIBatch(provider, model, ctx)


class _Client:
    """What both vendors' batch clients share: the provider's URL and credential, read per
    request as a call reads them, and an HTTP client of their own (uploads are multipart)."""

    def __init__(self, provider: HttpProvider, model: str, ctx: CallContext | None) -> None:
        self.provider = provider
        self.model = provider.model_spec(model).id
        self._ctx = ctx or CallContext(purpose="eval")
        self._http: httpx.AsyncClient | None = None

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None or self._http.is_closed:
            self._http = httpx.AsyncClient(timeout=_TIMEOUT_S)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    def _base(self) -> str:
        return self.provider.base_url(self._ctx).rstrip("/")

    async def _send(
        self, method: str, url: str, *, headers: Mapping[str, str] | None = None, **kw: Any
    ) -> httpx.Response:
        sent, key = self.provider.request_headers(self._ctx)
        try:
            resp = await self.http.request(method, url, headers={**sent, **(headers or {})}, **kw)
        except httpx.HTTPError as exc:
            raise self._error(f"batch API unreachable ({type(exc).__name__})", key) from None
        if resp.status_code >= 400:
            raise self._error(
                f"batch API answered HTTP {resp.status_code}",
                key,
                status=resp.status_code,
                body=resp.text,
            )
        return resp

    def _json(self, resp: httpx.Response) -> dict[str, Any]:
        """The JSON object a batch endpoint promises, or PROVIDER_MALFORMED."""
        try:
            got = resp.json()
        except (ValueError, UnicodeDecodeError):
            got = None
        if not isinstance(got, dict):
            raise self._malformed(resp)
        return got

    def _field(self, resp: httpx.Response, name: str) -> str:
        value = self._json(resp).get(name)
        if not isinstance(value, str) or not value:
            raise self._malformed(resp)
        return value

    def _malformed(self, resp: httpx.Response) -> ProviderError:
        return ProviderError(
            "the batch API answered a body that is not the JSON it promises",
            kind="outage",
            status_code=resp.status_code,
            provider=self.provider.id,
            model=self.model,
            body=resp.text,
            code="PROVIDER_MALFORMED",
        )

    def _error(
        self, message: str, key: str | None, *, status: int = 0, body: str = ""
    ) -> ProviderError:
        return ProviderError(
            message,
            kind=kind_for_status(status) if status else "network",
            status_code=status,
            provider=self.provider.id,
            model=self.model,
            body=body,
            secrets=[key],
        )

    def _read(
        self, found: BatchResults, custom_id: Any, requests: Mapping[str, ChatRequest], body: Any
    ) -> None:
        """One successful answer read by the adapter, or counted as unmatched."""
        request = requests.get(custom_id) if isinstance(custom_id, str) else None
        if request is None:
            found.unmatched.append(custom_id if isinstance(custom_id, str) else None)
            return
        try:
            found.replies[custom_id] = self.provider.read_reply(request, self.model, body)
        except ProviderError as exc:
            found.replies[custom_id] = exc

    def _refused(
        self,
        found: BatchResults,
        custom_id: Any,
        requests: Mapping[str, ChatRequest],
        status: int,
        body: Any,
    ) -> None:
        """One request the batch refused, as the error the synchronous call would have raised."""
        if not isinstance(custom_id, str) or custom_id not in requests:
            found.unmatched.append(custom_id if isinstance(custom_id, str) else None)
            return
        text = body if isinstance(body, str) else json.dumps(body)
        found.replies[custom_id] = ProviderError(
            f"the batch refused the request (HTTP {status})"
            if status
            else "the batch refused the request",
            kind=kind_for_status(status) if status >= 400 else "outage",
            status_code=status,
            provider=self.provider.id,
            model=self.model,
            body=text,
            code=None if status >= 400 else "PROVIDER_OUTAGE",
        )


def _table(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _jsonl(text: str) -> list[Any]:
    """A JSONL file's records; a line that is not JSON is one unmatched record (None)."""
    out: list[Any] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            out.append(None)
    return out


# ------------------------------------------------------------------ OpenAI (and Groq)
_OPENAI_STATUS: dict[str, BatchStatus] = {
    "completed": "completed",
    "expired": "expired",
    "failed": "failed",
    "cancelled": "cancelled",
}


# What OpenAI's error file says of a request the batch did not reach in its window, or did
# not run because the batch was cancelled.
_OPENAI_EXPIRED = "batch_expired"
_OPENAI_CANCELLED = "batch_cancelled"
# How many pages of a vendor's list of batches `find` reads (newest first: a batch made
# seconds ago is on the first).
_FIND_PAGES = 3


class OpenAIBatch(_Client):
    """OpenAI's Batch API: upload the lines, make the batch, read its output and error files."""

    endpoint = "/v1/chat/completions"
    window_s = 24 * 3600.0  # the only completion window OpenAI and Groq offer: "24h"

    async def submit(self, requests: Mapping[str, ChatRequest], *, label: str = "") -> str:
        lines = [
            json.dumps(
                {
                    "custom_id": custom_id,
                    "method": "POST",
                    "url": self.endpoint,
                    "body": self.provider.request_body(request, self.model),
                },
                ensure_ascii=False,
            )
            for custom_id, request in requests.items()
        ]
        data = ("\n".join(lines) + "\n").encode()
        base = self._base()
        uploaded = await self._send(
            "POST",
            f"{base}/files",
            files={"file": ("batch.jsonl", data, "application/jsonl")},
            data={"purpose": "batch"},
        )
        file_id = self._field(uploaded, "id")
        made = await self._send(
            "POST",
            f"{base}/batches",
            json={
                "input_file_id": file_id,
                "endpoint": self.endpoint,
                "completion_window": "24h",
                "metadata": {"workbench": label[:500]} if label else None,
            },
        )
        return self._field(made, "id")

    async def find(self, label: str) -> str | None:
        if not label:  # an unlabelled batch cannot be told from anyone else's
            return None
        after: str | None = None
        for _ in range(_FIND_PAGES):
            params: dict[str, Any] = {"limit": 100} | ({"after": after} if after else {})
            got = self._json(await self._send("GET", f"{self._base()}/batches", params=params))
            data = got.get("data")
            listed: list[Any] = data if isinstance(data, list) else []
            for batch in listed:
                said = _table(_table(batch).get("metadata")).get("workbench")
                if said == label[:500] and isinstance(batch.get("id"), str):
                    return str(batch["id"])
            last = got.get("last_id")
            if not got.get("has_more") or not isinstance(last, str):
                return None
            after = last
        return None

    async def poll(self, batch_id: str) -> BatchState:
        got = self._json(await self._send("GET", f"{self._base()}/batches/{batch_id}"))
        raw = str(got.get("status") or "")
        errors = (got.get("errors") or {}).get("data") or []
        message = "; ".join(str(e.get("message") or e.get("code") or "") for e in errors)
        return BatchState(batch_id, _OPENAI_STATUS.get(raw, "running"), raw, message[:300], got)

    async def results(
        self,
        state: BatchState,
        requests: Mapping[str, ChatRequest],
        *,
        submitted: Sequence[str] = (),
    ) -> BatchResults:
        found = BatchResults()  # every line names its custom id: `submitted` is not needed
        for which in ("output_file_id", "error_file_id"):
            file_id = state.detail.get(which)
            if not file_id:
                continue
            text = (await self._send("GET", f"{self._base()}/files/{file_id}/content")).text
            for record in _jsonl(text):
                self._line(found, record, requests)
        return found

    def _line(self, found: BatchResults, record: Any, requests: Mapping[str, ChatRequest]) -> None:
        if not isinstance(record, dict):
            found.unmatched.append(None)
            return
        custom_id = record.get("custom_id")
        response = record.get("response") or {}
        error = record.get("error")
        status = int(response.get("status_code") or 0) if isinstance(response, dict) else 0
        if error:
            said = str(error.get("code") or "") if isinstance(error, dict) else ""
            if isinstance(custom_id, str) and custom_id in requests:
                if said == _OPENAI_EXPIRED:
                    found.expired.add(custom_id)
                    return
                if said == _OPENAI_CANCELLED:
                    found.cancelled.add(custom_id)
                    return
            self._refused(found, custom_id, requests, status, error)
        elif status and status >= 400:
            self._refused(found, custom_id, requests, status, response.get("body"))
        else:
            self._read(found, custom_id, requests, response.get("body"))


# ------------------------------------------------------------------ Gemini
_GEMINI_STATUS: dict[str, BatchStatus] = {
    "SUCCEEDED": "completed",
    "FAILED": "failed",
    "CANCELLED": "cancelled",
    "EXPIRED": "expired",
}


# google.rpc codes (a line's Status may carry one instead of an HTTP status) → HTTP status.
_RPC_STATUS = {3: 400, 5: 404, 7: 403, 8: 429, 9: 400, 13: 500, 14: 503, 16: 401}


def _gemini_status(raw: str) -> BatchStatus:
    """BATCH_STATE_* (REST) or JOB_STATE_* (the SDK's names): the word after the last `_`."""
    return _GEMINI_STATUS.get(raw.rsplit("_", 1)[-1].upper(), "running")


class GeminiBatch(_Client):
    """Gemini's batch mode: `batchGenerateContent` with the requests inline, or a JSONL file
    uploaded through the Files API for a large set; the batch is a long-running operation."""

    # Google aims at 24 hours and expires a batch still pending after 48.
    window_s = 48 * 3600.0

    async def submit(self, requests: Mapping[str, ChatRequest], *, label: str = "") -> str:
        entries = [
            (custom_id, self.provider.request_body(request, self.model))
            for custom_id, request in requests.items()
        ]
        size = sum(len(json.dumps(body)) for _, body in entries)
        if size <= GEMINI_INLINE_BYTES:
            inline = [{"request": body, "metadata": {"key": cid}} for cid, body in entries]
            source: dict[str, Any] = {"requests": {"requests": inline}}
        else:
            lines = "".join(
                json.dumps({"key": cid, "request": body}, ensure_ascii=False) + "\n"
                for cid, body in entries
            )
            source = {"fileName": await self._upload(lines.encode(), label or "batch")}
        model = self.model.removeprefix("models/")
        made = await self._send(
            "POST",
            f"{self._base()}/v1beta/models/{model}:batchGenerateContent",
            json={"batch": {"displayName": label or "workbench", "inputConfig": source}},
        )
        return self._field(made, "name")

    async def find(self, label: str) -> str | None:
        if not label:  # an unlabelled batch cannot be told from anyone else's
            return None
        token: str | None = None
        for _ in range(_FIND_PAGES):
            params: dict[str, Any] = {"pageSize": 100} | ({"pageToken": token} if token else {})
            url = f"{self._base()}/v1beta/batches"
            got = self._json(await self._send("GET", url, params=params))
            operations = got.get("operations")
            listed: list[Any] = operations if isinstance(operations, list) else []
            for operation in listed:
                meta = _table(_table(operation).get("metadata"))
                name = _table(operation).get("name") or meta.get("name")
                if meta.get("displayName") == label and isinstance(name, str):
                    return name
            token = got.get("nextPageToken") if isinstance(got.get("nextPageToken"), str) else None
            if not token:
                return None
        return None

    async def _upload(self, data: bytes, name: str) -> str:
        """The Files API's resumable upload, in one piece: start, then upload and finalize."""
        base = self._base()
        started = await self._send(
            "POST",
            f"{base}/upload/v1beta/files",
            headers={
                "X-Goog-Upload-Protocol": "resumable",
                "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Header-Content-Length": str(len(data)),
                "X-Goog-Upload-Header-Content-Type": "application/jsonl",
            },
            json={"file": {"display_name": name}},
        )
        url = started.headers.get("x-goog-upload-url")
        if not url:
            raise self._error("the Files API gave no upload URL", None, status=502)
        done = await self._send(
            "POST",
            url,
            headers={"X-Goog-Upload-Offset": "0", "X-Goog-Upload-Command": "upload, finalize"},
            content=data,
        )
        stored = _table(self._json(done).get("file")).get("name")
        if not isinstance(stored, str) or not stored:
            raise self._malformed(done)
        return stored

    async def poll(self, batch_id: str) -> BatchState:
        got = self._json(await self._send("GET", f"{self._base()}/v1beta/{batch_id}"))
        meta = _table(got.get("metadata")) or got
        raw = str(meta.get("state") or got.get("state") or "")
        status = _gemini_status(raw)
        error = got.get("error") or {}
        if status == "running" and got.get("done"):
            status = "failed" if error else "completed"
        return BatchState(batch_id, status, raw, str(error.get("message") or "")[:300], got)

    async def results(
        self,
        state: BatchState,
        requests: Mapping[str, ChatRequest],
        *,
        submitted: Sequence[str] = (),
    ) -> BatchResults:
        found = BatchResults()
        got = state.detail
        meta: Mapping[str, Any] = _table(got.get("metadata"))
        output = got.get("response") or meta.get("output") or got.get("output") or {}
        inline = output.get("inlinedResponses")
        if isinstance(inline, dict):
            inline = inline.get("inlinedResponses")
        # Inline responses come in the order the batch was sent; the key names each when the
        # vendor returns it. Without `submitted`, the order of `requests` is all there is.
        order = list(submitted) or list(requests)
        if isinstance(inline, list):
            for n, record in enumerate(inline):
                fallback = order[n] if n < len(order) else None
                self._record(found, record, requests, fallback)
        name = output.get("responsesFile")
        if name:
            url = f"{self._base()}/download/v1beta/{name}:download"
            text = (await self._send("GET", url, params={"alt": "media"})).text
            for record in _jsonl(text):
                self._record(found, record, requests, None)
        return found

    def _record(
        self,
        found: BatchResults,
        record: Any,
        requests: Mapping[str, ChatRequest],
        fallback: str | None,
    ) -> None:
        if not isinstance(record, dict):
            found.unmatched.append(None)
            return
        meta = _table(record.get("metadata"))
        custom_id = record.get("key") or meta.get("key") or fallback
        error = record.get("error")
        if error:
            said = _table(error)
            code, name = said.get("code"), str(said.get("status") or "")
            status = int(code) if isinstance(code, int) else 0
            if name == "DEADLINE_EXCEEDED" and isinstance(custom_id, str) and custom_id in requests:
                found.expired.add(custom_id)  # the batch expired before it ran
            elif name == "CANCELLED" and isinstance(custom_id, str) and custom_id in requests:
                found.cancelled.add(custom_id)  # never ran: the batch was cancelled
            else:  # a refusal carries its HTTP status; a bare google.rpc code its HTTP twin
                self._refused(found, custom_id, requests, _RPC_STATUS.get(status, status), error)
        else:
            self._read(found, custom_id, requests, record.get("response"))


def submit_label(run_id: str, config: str, round_: int, part: int = 0) -> str:
    """What a batch is called at its vendor: the run, the configuration and the round (and
    which part of a round cut in several), so `find` tells each apart."""
    return f"{run_id}:{config}:{round_}" + (f".{part}" if part else "")


def batches_for(
    requests: Sequence[tuple[str, ChatRequest]], size: int
) -> list[dict[str, ChatRequest]]:
    """Requests cut into batches of at most `size` (a vendor caps a batch: 50,000 at OpenAI)."""
    out: list[dict[str, ChatRequest]] = []
    size = max(1, size)
    for start in range(0, len(requests), size):
        out.append(dict(requests[start : start + size]))
    return out


__all__ = [
    "BATCH_PRICE",
    "OPENAI_BATCH_HOSTS",
    "BatchAPI",
    "BatchResults",
    "BatchState",
    "BatchStatus",
    "GeminiBatch",
    "OpenAIBatch",
    "batch_client",
    "batches_for",
    "has_batch_api",
    "submit_label",
]
