"""Has a pinned model id rotted? Each provider's pinned ids against the vendor's own model list.

Vendors retire models from under a configuration that pins them: the id keeps being sent and
fails, one 404 per request, until someone notices. `check_catalog` asks each provider's
`GET {base_url}/models` (Google's native API: `GET {base_url}/v1beta/models`) with the key the
provider would send, and sorts every pinned id into present, missing or unchecked.

A list that cannot be read (no key, a refusal, a timeout, a body that is not a list of models)
proves nothing about the ids it would have named: they are *unchecked*, never *missing*, and
the report says that unchecked is not a pass. A leading `models/` is ignored on both sides,
because Google lists only prefixed ids while its chat accepts both forms.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx

from workbench.errors import ConfigError, scrub
from workbench.providers.base import HttpProvider
from workbench.providers.gemini import GeminiProvider
from workbench.providers.http import failure_kind, is_send_failure, new_client
from workbench.types import CallContext

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_TIMEOUT_S = 20.0
VENDOR_MESSAGE_CHARS = 240
# A `created` this large is already milliseconds (in seconds it would be the year 33658).
_MS_THRESHOLD = 1e12
# Google pages its list (50 a page unless asked); a thousand a page, and a bound on the pages.
_GEMINI_PAGE_SIZE = 1000
_GEMINI_MAX_PAGES = 20
_CREDENTIAL = re.compile(r"auth|key|token|secret", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """One model as a vendor's list describes it; None wherever the vendor says nothing."""

    id: str
    output_modalities: tuple[str, ...] | None = None
    free: bool | None = None
    tools: bool | None = None
    context_length: int | None = None
    expires_on: str | None = None
    created: datetime | None = None  # UTC

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "output_modalities": (
                list(self.output_modalities) if self.output_modalities is not None else None
            ),
            "free": self.free,
            "tools": self.tools,
            "context_length": self.context_length,
            "expires_on": self.expires_on,
            "created": _iso(self.created),
        }


@dataclass(frozen=True, slots=True)
class CatalogRead:
    """One model-list request: the records, or why there are none (`reason`, one line)."""

    status: int | None
    records: tuple[ModelRecord, ...] | None
    vendor_message: str | None = None
    reason: str | None = None
    # False when the vendor said more pages follow than were read: an id not seen may be on
    # one of them, so it is unchecked, never gone.
    complete: bool = True


@dataclass(frozen=True, slots=True)
class CatalogCheck:
    """One provider's pinned ids sorted against its live list (`live` is None when unread)."""

    provider: str
    live: tuple[ModelRecord, ...] | None
    present: tuple[str, ...]
    missing: tuple[str, ...]
    unchecked: tuple[str, ...]
    status: int | None = None
    vendor_message: str | None = None
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "live": [r.as_dict() for r in self.live] if self.live is not None else None,
            "present": list(self.present),
            "missing": list(self.missing),
            "unchecked": list(self.unchecked),
            "status": self.status,
            "vendor_message": self.vendor_message,
            "reason": self.reason,
        }


# ---------------------------------------------------------------------------- records


def _number(value: Any, *, strings: bool = False) -> float | None:
    """A finite number; with `strings`, a numeric string too (OpenRouter's prices are)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif strings and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(v for v in value if isinstance(v, str))


def _free(pricing: Any) -> bool | None:
    # Free only when every published price is zero: one non-zero component is a bill.
    if not isinstance(pricing, Mapping):
        return None
    prices = [n for n in (_number(v, strings=True) for v in pricing.values()) if n is not None]
    if not prices:
        return None
    return all(n == 0 for n in prices)


def _tools(raw: Mapping[str, Any]) -> bool | None:
    params = raw.get("supported_parameters")  # OpenRouter
    if isinstance(params, list):
        return "tools" in params
    features = raw.get("supported_features")  # Groq
    if isinstance(features, list):
        return "tools" in features or "tool_use" in features
    return None


def _created(raw: Mapping[str, Any]) -> datetime | None:
    created = raw.get("created")
    if isinstance(created, int | float) and not isinstance(created, bool):
        ms = created if abs(created) >= _MS_THRESHOLD else created * 1000
        try:
            return datetime.fromtimestamp(ms / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    created_at = raw.get("created_at")  # Anthropic: an ISO date
    if isinstance(created_at, str) and created_at.strip():
        try:
            when = datetime.fromisoformat(created_at.strip())
        except ValueError:
            return None
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return None


def model_record(raw: Mapping[str, Any]) -> ModelRecord | None:
    """A `ModelRecord` from one entry of an OpenAI-shaped list, or None without a string id."""
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id.strip():
        return None
    architecture = raw.get("architecture")
    modalities = (
        _strings(architecture.get("output_modalities"))
        if isinstance(architecture, Mapping)
        else None
    )
    if modalities is None:
        modalities = _strings(raw.get("output_modalities"))
    context = _number(raw.get("context_length"))
    expires = raw.get("expiration_date")
    return ModelRecord(
        id=model_id,
        output_modalities=modalities,
        free=_free(raw.get("pricing")),
        tools=_tools(raw),
        context_length=int(context) if context is not None else None,
        expires_on=expires if isinstance(expires, str) else None,
        created=_created(raw),
    )


def _gemini_record(raw: Mapping[str, Any]) -> ModelRecord | None:
    # Google's native list names a model `models/…` and says nothing of price or tools.
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    limit = _number(raw.get("inputTokenLimit"))
    return ModelRecord(id=name, context_length=int(limit) if limit is not None else None)


def records_from(body: Any) -> tuple[ModelRecord, ...] | None:
    """The records of an OpenAI-shaped list (`{"data": [...]}`, or a bare array as Together
    sends), or None when it names no model."""
    entries = body.get("data") if isinstance(body, Mapping) else body
    if not isinstance(entries, list):
        return None
    found = [model_record(e) for e in entries if isinstance(e, Mapping)]
    records = tuple(r for r in found if r is not None)
    return records or None


def vendor_message(body: Any, secrets: Iterable[str | None] = ()) -> str | None:
    """What the vendor said about a refusal (`error.message`, `error`, `message`, `detail`),
    on one line, at most 240 characters, any echoed credential scrubbed before the cut (a cut
    through a key would leave a piece no scrubbing recognises)."""
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    candidates = (
        error.get("message") if isinstance(error, Mapping) else None,
        error,
        body.get("message"),
        body.get("detail"),
    )
    for text in candidates:
        if isinstance(text, str) and text.strip():
            return " ".join(scrub(text, secrets).split())[:VENDOR_MESSAGE_CHARS]
    return None


# ---------------------------------------------------------------------------- reading


def _bare(model: str) -> str:
    return model.removeprefix("models/")


async def read_catalog(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    gemini: bool = False,
) -> CatalogRead:
    """GET one model list; every failure becomes a `CatalogRead` without records, its reason
    free of the credential that was sent."""
    # Whatever header carried the credential (a custom `api-key` too), it is never repeated.
    secrets = [v for k, v in headers.items() if _CREDENTIAL.search(k)]
    secrets += [v.split(" ", 1)[1] for v in secrets if " " in v]
    try:
        async with asyncio.timeout(timeout_s):
            return await _read(client, url, headers, timeout_s, gemini, secrets)
    except TimeoutError:
        return CatalogRead(None, None, reason=f"timed out after {timeout_s:g} s")
    except Exception as exc:
        if not is_send_failure(exc):
            raise
        if failure_kind(exc) == "timeout":
            return CatalogRead(None, None, reason=f"timed out after {timeout_s:g} s")
        detail = " ".join(scrub(str(exc) or type(exc).__name__, secrets).split())
        return CatalogRead(None, None, reason=f"could not connect: {detail[:200]}")


async def _read(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    timeout_s: float,
    gemini: bool,
    secrets: Sequence[str],
) -> CatalogRead:
    params: dict[str, str | int] = {"pageSize": _GEMINI_PAGE_SIZE} if gemini else {}
    records: list[ModelRecord] = []
    for _page in range(_GEMINI_MAX_PAGES):
        resp = await client.get(url, headers=dict(headers), params=params, timeout=timeout_s)
        try:
            body: Any = resp.json()
        except ValueError:
            body = None
            readable = False
        else:
            readable = True
        if not resp.is_success:
            said = vendor_message(body, secrets)
            reason = f"HTTP {resp.status_code}" + (f": {said}" if said else "")
            return CatalogRead(resp.status_code, None, said, reason)
        if not readable:
            return CatalogRead(resp.status_code, None, reason="the body is not JSON")
        if not gemini:
            found = records_from(body)
            if found is None:
                return CatalogRead(resp.status_code, None, reason="the body names no model")
            more = isinstance(body, Mapping) and body.get("has_more") is True  # Anthropic-style
            return CatalogRead(resp.status_code, found, complete=not more)
        entries = body.get("models") if isinstance(body, Mapping) else None
        if isinstance(entries, list):
            page = (_gemini_record(e) for e in entries if isinstance(e, Mapping))
            records += [r for r in page if r is not None]
        token = body.get("nextPageToken") if isinstance(body, Mapping) else None
        if not isinstance(token, str) or not token:
            break
        params = {"pageSize": _GEMINI_PAGE_SIZE, "pageToken": token}
    else:  # the last page read still named a next one
        if records:
            return CatalogRead(resp.status_code, tuple(records), complete=False)
    if not records:
        return CatalogRead(resp.status_code, None, reason="the body names no model")
    return CatalogRead(resp.status_code, tuple(records))


def _pinned(provider: HttpProvider) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.id for m in provider.models))


async def _check(
    provider: HttpProvider, client: httpx.AsyncClient, timeout_s: float
) -> CatalogCheck:
    pinned = _pinned(provider)
    ctx = CallContext()
    key = provider.key(ctx)  # read now, as a call would: a rotated key is the one checked
    if not key and provider.keyed:
        return CatalogCheck(provider.id, None, (), (), pinned, reason="no key")
    gemini = isinstance(provider, GeminiProvider)
    base = provider.base_url(ctx)
    url = f"{base}/v1beta/models" if gemini else f"{base}/models"
    headers = {**provider.headers, **provider._auth_headers(key)}  # the credential wins
    got = await read_catalog(
        provider._client or client, url, headers, timeout_s=timeout_s, gemini=gemini
    )
    if got.records is None:
        return CatalogCheck(
            provider.id, None, (), (), pinned, got.status, got.vendor_message, got.reason
        )
    listed = {_bare(r.id) for r in got.records}
    present = tuple(m for m in pinned if _bare(m) in listed)
    unseen = tuple(m for m in pinned if _bare(m) not in listed)
    if not got.complete:
        return CatalogCheck(
            provider.id,
            got.records,
            present,
            (),
            unseen,
            got.status,
            reason="the list has more pages than were read",
        )
    return CatalogCheck(provider.id, got.records, present, unseen, (), got.status)


async def check_catalog(
    providers: Iterable[HttpProvider],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    client: httpx.AsyncClient | None = None,
) -> list[CatalogCheck]:
    """Every provider's pinned ids against its live model list, all providers at once.

    `client` is used as given (a test's respx mock, a proxy); a provider built with its own
    client keeps it; otherwise one short-lived client is made and closed here."""
    providers = list(providers)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ConfigError(
            f"a catalogue timeout must be a positive number of seconds, not {timeout_s!r}",
            code="MODEL_CATALOG_INVALID",
        )
    for provider in providers:
        if not isinstance(provider, HttpProvider):
            raise ConfigError(
                f"{provider!r} is not an HTTP provider: it has no model list to read",
                code="MODEL_CATALOG_INVALID",
            )
    own = client is None
    shared = new_client("httpx", pool=8) if client is None else client
    try:
        return list(await asyncio.gather(*(_check(p, shared, float(timeout_s)) for p in providers)))
    finally:
        if own:
            await shared.aclose()


# ---------------------------------------------------------------------------- verdicts


def has_rot(checks: Iterable[CatalogCheck]) -> bool:
    """Whether any pinned id is gone from a list that was read."""
    return any(c.missing for c in checks)


def dead_providers(checks: Iterable[CatalogCheck]) -> list[str]:
    """Providers whose list was read and names none of their pinned ids: every call fails."""
    return [c.provider for c in checks if c.live is not None and not c.present and c.missing]


def catalog_report(checks: Sequence[CatalogCheck]) -> list[str]:
    """The lines `workbench catalog` prints: ok, GONE, or unchecked with why."""
    lines: list[str] = []
    for c in checks:
        if c.live is None:
            lines.append(
                f"? {c.provider}: catalogue unreadable (no key, or the request failed: "
                f"{c.reason or 'unknown'}) — {len(c.unchecked)} id(s) UNCHECKED"
            )
            lines += [f"    ? {m}" for m in c.unchecked]
            continue
        lines += [f"  ok   {c.provider}/{m}" for m in c.present]
        lines += [f"  GONE {c.provider}/{m}" for m in c.missing]
        lines += [f"  ?    {c.provider}/{m} ({c.reason})" for m in c.unchecked]
    dead = dead_providers(checks)
    if dead:
        lines.append(f"EVERY model is gone at: {', '.join(dead)}")
    unchecked = sum(len(c.unchecked) for c in checks)
    if unchecked:
        lines.append(f"{unchecked} id(s) could not be checked. That is not a pass for them.")
    return lines


def catalog_summary(checks: Sequence[CatalogCheck]) -> dict[str, Any]:
    """The whole check as plain data (what `workbench catalog --json` prints)."""
    return {
        "has_rot": has_rot(checks),
        "dead_providers": dead_providers(checks),
        "unchecked": sum(len(c.unchecked) for c in checks),
        "providers": [c.as_dict() for c in checks],
    }


def catalog_facts(checks: Iterable[CatalogCheck]) -> pd.DataFrame:
    """One row per live model of each provider, pinned or not: what each vendor says it
    offers (price, tools, context, expiry, age), to read beside the observed verdicts."""
    import pandas as pd

    rows = [
        {
            "provider": c.provider,
            "id": r.id,
            "pinned": _bare(r.id) in {_bare(m) for m in (*c.present, *c.missing)},
            "output_modalities": (
                list(r.output_modalities) if r.output_modalities is not None else None
            ),
            "free": r.free,
            "tools": r.tools,
            "context_length": r.context_length,
            "expires_on": r.expires_on,
            "created": r.created,
        }
        for c in checks
        for r in c.live or ()
    ]
    columns = [
        "provider",
        "id",
        "pinned",
        "output_modalities",
        "free",
        "tools",
        "context_length",
        "expires_on",
        "created",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype(
        {"pinned": "bool", "free": "boolean", "tools": "boolean", "context_length": "Int64"}
    ).assign(created=pd.to_datetime(frame["created"], utc=True))


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
