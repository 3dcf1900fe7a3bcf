"""Pending actions: an agent proposes, a human decides.

An agent allowed to write is dangerous in a way an agent that answers is not: the failure mode
is not malice but confidence. So a write is never done by the model. It *proposes*
(`propose`), nothing runs; a human *decides* (`approve`, possibly amending the draft, or
`reject`).

The cycle's promises:

- **one execution, never two**: `pending → executing` is an atomic claim in the store, so two
  simultaneous approvals (two tabs, two processes, two hosts on Redis) execute once; the
  losers get `ACTION_NOT_PENDING` (409) naming the current status;
- **only the tools named in `tools` can ever execute**: an unknown name is refused at
  `propose` (`ACTION_UNKNOWN`, 400), and an action found in a shared store whose name this
  instance does not know is marked `failed` at approval, never run;
- **`dedupe_key`**: a model insisting five times stacks one proposal — while an action with
  the same name and key is pending (or executing), proposing again returns it;
- **`amend`**: a dict merged (shallowly) over the payload, recorded with who amended; the
  model's draft is kept in the `executing` history entry (`draft`);
- a tool that **raises or returns an error** (a dict with a non-null `"error"` or `ok: false`,
  an object whose `ok` is `False`) marks the action `failed`, never `executed`; the error is a
  short scrubbed line (`"TypeName: message"`, at most 200 characters), never a traceback;
- a dead `on_pending` channel (raising, sync or async, or hanging past
  `on_pending_timeout_s`) is logged and never fails the proposal: the action stays listed.

States: ``pending → executing → executed | failed`` or ``pending → rejected``. An approval
cancelled while its tool runs leaves the action `executing`: whether the tool acted is then
unknown, and saying `failed` would be as much a lie as saying `executed`.

Storage is one row per action with exactly the columns of the workbench's DuckDB `actions`
table (`COLUMNS`); what has no column of its own lives in the history entries, each
``{"at_ms", "status", "by"}`` plus ``note`` (rejected), ``draft`` (executing, amended),
``result`` (executed/failed) and ``error`` (failed). Every store shares `to_row`, `from_row`
and the pure transitions (`claimed_row`, `finished_row`, `rejected_row`); a store's only job
is to apply them atomically (compare the status, then set).
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from workbench.errors import ConfigError, WorkbenchError, scrub
from workbench.events import ActionEvent, Sink, emit, now_ms

log = logging.getLogger("workbench.tools.pending")

Status = Literal["pending", "executing", "executed", "failed", "rejected"]
STATUSES: tuple[str, ...] = get_args(Status)
FINAL: tuple[str, ...] = ("executed", "failed")
# A pending or executing action blocks a second proposal with the same name and dedupe key.
DEDUPE_LIVE: tuple[str, ...] = ("pending", "executing")

# The `actions` table: each column and its SQL type, in table order. This is the one
# declaration of the table's shape: the DuckDB action store creates the table from it, and the
# workbench's DuckDB schema lists the table from it.
COLUMN_TYPES: dict[str, str] = {
    "action_id": "VARCHAR", "run_id": "VARCHAR", "action": "VARCHAR", "payload": "JSON",
    "status": "VARCHAR", "proposed_by": "VARCHAR", "decided_by": "VARCHAR", "amended": "JSON",
    "dedupe_key": "VARCHAR", "history": "JSON", "created_at_ms": "BIGINT",
    "updated_at_ms": "BIGINT",
}  # fmt: skip
PRIMARY_KEY: tuple[str, ...] = ("action_id",)
COLUMNS: tuple[str, ...] = tuple(COLUMN_TYPES)
JSON_COLUMNS: frozenset[str] = frozenset(c for c, t in COLUMN_TYPES.items() if t == "JSON")
# What a transition may change; the rest is written once, at the proposal.
MUTABLE: tuple[str, ...] = (
    "payload",
    "status",
    "decided_by",
    "amended",
    "history",
    "updated_at_ms",
)

ERROR_MAX_CHARS = 200
RESULT_MAX_CHARS = 2000

ToolFn = Callable[[dict[str, Any]], Awaitable[Any]]
Clock = Callable[[], int]


@dataclass(frozen=True)
class Action:
    """One proposed action, as the store holds it now. `payload` is what the tool receives
    (the draft merged with `amended` once approved); `history` is every move, oldest first."""

    id: str
    action: str
    payload: dict[str, Any]
    status: Status
    proposed_by: str
    created_at_ms: int
    updated_at_ms: int
    dedupe_key: str | None = None
    decided_by: str | None = None
    amended: dict[str, Any] | None = None
    amended_by: str | None = None
    note: str | None = None
    result: Any = None
    error: str | None = None
    run_id: str | None = None
    history: tuple[dict[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (history as a list)."""
        out = asdict(self)
        out["history"] = [dict(h) for h in self.history]
        return out


@runtime_checkable
class ActionStore(Protocol):
    """Where actions live. Async; the atomic parts (dedupe insert, claim, reject, finish) are
    the store's job: each compares the status and sets the new row in one indivisible step.
    `at_ms` (keyword) stamps the move; a store uses its own clock when it is None."""

    async def insert(self, action: Action) -> Action:
        """Store `action`; if it has a `dedupe_key` and a pending or executing action with the
        same name and key exists, store nothing and return that one (atomically)."""
        ...

    async def get(self, action_id: str) -> Action | None: ...

    async def list(
        self, status: str | None = None, run_id: str | None = None
    ) -> builtins.list[Action]:
        """Newest first (created_at_ms, then id, descending)."""
        ...

    async def claim(
        self,
        action_id: str,
        by: str,
        amend: dict[str, Any] | None,
        *,
        at_ms: int | None = None,
    ) -> Action | None:
        """Atomically pending → executing (payload merged with `amend`, recorded with `by`);
        None when the action is missing or not pending."""
        ...

    async def finish(
        self,
        action_id: str,
        status: Literal["executed", "failed"],
        result: Any = None,
        error: str | None = None,
        *,
        at_ms: int | None = None,
    ) -> Action:
        """Atomically executing → executed | failed; `ACTION_NOT_EXECUTING` (409) otherwise."""
        ...

    async def reject(
        self, action_id: str, by: str, note: str | None, *, at_ms: int | None = None
    ) -> Action | None:
        """Atomically pending → rejected; None when missing or not pending."""
        ...


# --------------------------------------------------------------------------- rows
def dumps(value: Any) -> str | None:
    """Compact JSON text; None stays None (SQL NULL)."""
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def loads(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode()
    return json.loads(value) if isinstance(value, str) else value


def to_row(action: Action) -> dict[str, Any]:
    """The `actions` row of `action` (JSON columns as text)."""
    return {
        "action_id": action.id,
        "run_id": action.run_id,
        "action": action.action,
        "payload": dumps(action.payload),
        "status": action.status,
        "proposed_by": action.proposed_by,
        "decided_by": action.decided_by,
        "amended": dumps(action.amended),
        "dedupe_key": action.dedupe_key,
        "history": dumps(list(action.history)),
        "created_at_ms": int(action.created_at_ms),
        "updated_at_ms": int(action.updated_at_ms),
    }


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def from_row(row: Mapping[str, Any]) -> Action:
    """The `Action` an `actions` row describes (values may be text, as Redis returns them)."""
    history = tuple(loads(row.get("history")) or ())
    status = _text(row["status"]) or "pending"
    amended = loads(row.get("amended"))
    last = history[-1] if history else {}
    note = next((h["note"] for h in reversed(history) if h.get("note") is not None), None)
    amended_by = None
    if amended is not None:
        amended_by = next((h.get("by") for h in history if h.get("status") == "executing"), None)
    return Action(
        id=_text(row["action_id"]) or "",
        action=_text(row["action"]) or "",
        payload=loads(row.get("payload")) or {},
        status=status,  # type: ignore[arg-type]
        proposed_by=_text(row.get("proposed_by")) or "",
        created_at_ms=int(row["created_at_ms"]),
        updated_at_ms=int(row["updated_at_ms"]),
        dedupe_key=_text(row.get("dedupe_key")),
        decided_by=_text(row.get("decided_by")),
        amended=amended,
        amended_by=amended_by,
        note=note,
        result=last.get("result") if status in FINAL else None,
        error=last.get("error") if status == "failed" else None,
        run_id=_text(row.get("run_id")),
        history=history,
    )


def entry(at_ms: int, status: str, by: str | None, **extra: Any) -> dict[str, Any]:
    """One history entry: ``{at_ms, status, by}`` plus the extras that are not None."""
    out: dict[str, Any] = {"at_ms": int(at_ms), "status": status, "by": by}
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def _history(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(loads(row.get("history")) or [])


def claimed_row(
    row: Mapping[str, Any], by: str, amend: dict[str, Any] | None, at_ms: int
) -> dict[str, Any]:
    """`row` (pending) moved to executing by `by`, its payload merged with `amend`."""
    draft = loads(row.get("payload")) or {}
    payload = {**draft, **amend} if amend is not None else draft
    history = _history(row)
    history.append(entry(at_ms, "executing", by, draft=draft if amend is not None else None))
    return {
        **row,
        "payload": dumps(payload),
        "status": "executing",
        "decided_by": by,
        "amended": dumps(amend),
        "history": dumps(history),
        "updated_at_ms": int(at_ms),
    }


def finished_row(
    row: Mapping[str, Any], status: str, result: Any, error: str | None, at_ms: int
) -> dict[str, Any]:
    """`row` (executing) moved to executed or failed, with the tool's result or error."""
    if status not in FINAL:
        raise ValueError(f"finish status must be executed or failed, not {status!r}")
    history = _history(row)
    by = _text(row.get("decided_by"))
    history.append(entry(at_ms, status, by, result=result, error=error))
    return {**row, "status": status, "history": dumps(history), "updated_at_ms": int(at_ms)}


def rejected_row(row: Mapping[str, Any], by: str, note: str | None, at_ms: int) -> dict[str, Any]:
    """`row` (pending) moved to rejected by `by`, with the note."""
    history = _history(row)
    history.append(entry(at_ms, "rejected", by, note=note))
    return {
        **row,
        "status": "rejected",
        "decided_by": by,
        "history": dumps(history),
        "updated_at_ms": int(at_ms),
    }


def not_executing(action_id: str, status: str | None) -> WorkbenchError:
    return WorkbenchError(
        f"action {action_id} is {status or 'missing'}, not executing: it cannot be finished",
        code="ACTION_NOT_EXECUTING",
        status=409,
        details={"action_id": action_id, "status": status},
    )


def duplicate_id(action_id: str) -> WorkbenchError:
    return WorkbenchError(
        f"an action with id {action_id} already exists",
        code="ACTION_DUPLICATE_ID",
        status=409,
        details={"action_id": action_id},
    )


def newest_first(actions: Iterable[Action]) -> builtins.list[Action]:
    return sorted(actions, key=lambda a: (a.created_at_ms, a.id), reverse=True)


# --------------------------------------------------------------------------- memory store
class MemoryActionStore:
    """Actions in this process's memory: for tests and development, never shared, never
    persistent. Atomic under asyncio because no method awaits between its check and its set
    (not thread-safe: use it from one event loop)."""

    def __init__(self, *, clock_ms: Clock | None = None) -> None:
        self._rows: dict[str, dict[str, Any]] = {}
        self._clock = clock_ms or now_ms

    def _at(self, at_ms: int | None) -> int:
        return int(self._clock() if at_ms is None else at_ms)

    async def insert(self, action: Action) -> Action:
        if action.dedupe_key is not None:
            for row in self._rows.values():
                if (
                    row["action"] == action.action
                    and row["dedupe_key"] == action.dedupe_key
                    and row["status"] in DEDUPE_LIVE
                ):
                    return from_row(row)
        if action.id in self._rows:
            raise duplicate_id(action.id)
        row = to_row(action)
        self._rows[action.id] = row
        return from_row(row)

    async def get(self, action_id: str) -> Action | None:
        row = self._rows.get(action_id)
        return None if row is None else from_row(row)

    async def list(
        self, status: str | None = None, run_id: str | None = None
    ) -> builtins.list[Action]:
        rows = [
            r
            for r in self._rows.values()
            if (status is None or r["status"] == status)
            and (run_id is None or r["run_id"] == run_id)
        ]
        return newest_first(from_row(r) for r in rows)

    async def claim(
        self,
        action_id: str,
        by: str,
        amend: dict[str, Any] | None,
        *,
        at_ms: int | None = None,
    ) -> Action | None:
        row = self._rows.get(action_id)
        if row is None or row["status"] != "pending":
            return None
        new = claimed_row(row, by, amend, self._at(at_ms))
        self._rows[action_id] = new
        return from_row(new)

    async def finish(
        self,
        action_id: str,
        status: Literal["executed", "failed"],
        result: Any = None,
        error: str | None = None,
        *,
        at_ms: int | None = None,
    ) -> Action:
        row = self._rows.get(action_id)
        if row is None or row["status"] != "executing":
            raise not_executing(action_id, None if row is None else row["status"])
        new = finished_row(row, status, result, error, self._at(at_ms))
        self._rows[action_id] = new
        return from_row(new)

    async def reject(
        self, action_id: str, by: str, note: str | None, *, at_ms: int | None = None
    ) -> Action | None:
        row = self._rows.get(action_id)
        if row is None or row["status"] != "pending":
            return None
        new = rejected_row(row, by, note, self._at(at_ms))
        self._rows[action_id] = new
        return from_row(new)


# --------------------------------------------------------------------------- helpers
def one_line(text: str, limit: int = ERROR_MAX_CHARS) -> str:
    """Scrubbed (no key-shaped secret), on one line, at most `limit` characters."""
    flat = " ".join(scrub(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_error(error: Any) -> str:
    """A short code/text for what a tool raised or returned as its error."""
    if isinstance(error, BaseException):
        message = str(error)
        return one_line(f"{type(error).__name__}: {message}" if message else type(error).__name__)
    if isinstance(error, Mapping):
        code = error.get("code") or error.get("type")
        said = error.get("message") or error.get("detail")
        if code and said:
            return one_line(f"{code}: {said}")
        if code or said:
            return one_line(str(code or said))
        return one_line(json.dumps(error, ensure_ascii=False, default=str))
    return one_line(str(error)) or "error"


def returned_error(result: Any) -> str | None:
    """The error a tool *returned* (not raised), or None when `result` is a success: a mapping
    with an ``"error"`` that is neither null nor false, or ``"ok": False``, or an object whose ``ok`` is ``False``."""
    if isinstance(result, Mapping):
        err = result.get("error")
        if err is not None and err is not False:
            return describe_error(err)
        if result.get("ok") is False:
            return describe_error(result.get("message") or "ok=false")
        return None
    if isinstance(result, BaseException):
        return describe_error(result)
    try:
        ok = getattr(result, "ok", None)
    except Exception:  # a property that raises is not a verdict
        return None
    if ok is False:
        err = getattr(result, "error", None)
        return describe_error(err if err is not None else "ok=false")
    return None


def bound_result(value: Any, limit: int = RESULT_MAX_CHARS) -> Any:
    """`value` as JSON-able data if it serialises within `limit` characters; otherwise (or if
    it cannot be serialised) a string cut at `limit` characters."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except (TypeError, ValueError):
        text = None
    if text is not None and len(text) <= limit:
        return json.loads(text)
    flat = text if text is not None else repr(value)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _json_dict(value: Any, what: str) -> dict[str, Any]:
    """A deep copy of `value` through JSON: it must be a dict that JSON can carry."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{what} must be a dict, not {type(value).__name__}",
            code="ACTION_INVALID",
            status=400,
        )
    try:
        return json.loads(json.dumps(dict(value), ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{what} must be JSON: {one_line(str(exc))}", code="ACTION_INVALID", status=400
        ) from exc


def new_action_id() -> str:
    return uuid.uuid4().hex


# --------------------------------------------------------------------------- the cycle
class PendingActions:
    """Propose, approve (optionally amending), reject; see the module docstring.

    `tools` maps an action name to ``async fn(payload) -> result`` (a sync function works
    too); the mapping is copied: only these names can ever execute through this instance.
    `on_pending(action)` (sync or async) is told of each new proposal; whatever it raises,
    or a wait past `on_pending_timeout_s`, is logged and swallowed. `sinks` receive an
    `ActionEvent` per move (pending, executing, executed | failed, rejected). `clock_ms`
    stamps every move (default: wall clock). `run_id` tags proposals and scopes `list`.
    """

    def __init__(
        self,
        store: ActionStore,
        tools: Mapping[str, ToolFn],
        on_pending: Callable[[Action], Any] | None = None,
        sinks: Iterable[Sink] = (),
        clock_ms: Clock | None = None,
        run_id: str | None = None,
        *,
        on_pending_timeout_s: float | None = 10.0,
    ) -> None:
        self.store = store
        self._tools: dict[str, ToolFn] = dict(tools)
        for name, fn in self._tools.items():
            if not isinstance(name, str) or not name or not callable(fn):
                raise ConfigError(
                    f"tools must map non-empty names to callables (bad entry: {name!r})",
                    code="ACTION_INVALID",
                    status=400,
                )
        self._on_pending = on_pending
        self._sinks = tuple(sinks)
        self._clock = clock_ms or now_ms
        self.run_id = run_id
        self._on_pending_timeout_s = on_pending_timeout_s

    @property
    def tools(self) -> tuple[str, ...]:
        """The names that can execute."""
        return tuple(self._tools)

    def _now(self) -> int:
        return int(self._clock())

    async def _event(self, action: Action, by: str | None) -> None:
        event = ActionEvent(action.id, action.action, action.status, by, action.updated_at_ms)
        await emit(self._sinks, event)

    async def propose(
        self,
        action: str,
        payload: dict[str, Any],
        proposed_by: str,
        dedupe_key: str | None = None,
    ) -> Action:
        """Record a proposal; nothing runs. Returns the pending action (or, with a
        `dedupe_key`, the live one already proposed under it)."""
        if not isinstance(action, str) or action not in self._tools:
            known = ", ".join(sorted(self._tools)) or "none"
            raise WorkbenchError(
                f"unknown action {action!r}: only the named tools can be proposed ({known})",
                code="ACTION_UNKNOWN",
                status=400,
                details={"action": str(action), "known": sorted(self._tools)},
            )
        clean = _json_dict(payload, "payload")
        at = self._now()
        draft = Action(
            id=new_action_id(),
            action=action,
            payload=clean,
            status="pending",
            proposed_by=str(proposed_by),
            created_at_ms=at,
            updated_at_ms=at,
            dedupe_key=None if dedupe_key is None else str(dedupe_key),
            run_id=self.run_id,
            history=(entry(at, "pending", str(proposed_by)),),
        )
        stored = await self.store.insert(draft)
        if stored.id != draft.id:  # deduplicated: the live proposal is the answer
            return stored
        await self._event(stored, stored.proposed_by)
        await self._notify(stored)
        return stored

    async def _notify(self, action: Action) -> None:
        if self._on_pending is None:
            return
        try:
            outcome = self._on_pending(action)
            if inspect.isawaitable(outcome):
                if self._on_pending_timeout_s is None:
                    await outcome
                else:
                    await asyncio.wait_for(outcome, self._on_pending_timeout_s)
        except Exception as exc:  # a dead channel never fails the proposal
            log.warning(
                "on_pending failed for action %s (%s); it stays pending: %s",
                action.id,
                action.action,
                describe_error(exc),
            )

    async def _current(self, action_id: str) -> Action:
        found = await self.store.get(action_id)
        if found is None:
            raise WorkbenchError(
                f"no action with id {action_id}",
                code="ACTION_UNKNOWN_ID",
                status=404,
                details={"action_id": action_id},
            )
        return found

    async def _not_pending(self, action_id: str) -> WorkbenchError:
        current = await self._current(action_id)  # 404 when it does not exist
        return WorkbenchError(
            f"action {action_id} is {current.status}, not pending: nothing was done",
            code="ACTION_NOT_PENDING",
            status=409,
            details={"action_id": action_id, "status": current.status},
        )

    async def approve(
        self, action_id: str, approved_by: str, amend: dict[str, Any] | None = None
    ) -> Action:
        """Claim the action (atomically), run its tool on the (amended) payload, record
        executed or failed. `ACTION_NOT_PENDING` (409) if it was not pending."""
        clean_amend = None if amend is None else _json_dict(amend, "amend")
        claimed = await self.store.claim(
            action_id, str(approved_by), clean_amend, at_ms=self._now()
        )
        if claimed is None:
            raise await self._not_pending(action_id)
        await self._event(claimed, claimed.decided_by)
        tool = self._tools.get(claimed.action)
        result: Any = None
        if tool is None:  # proposed elsewhere, through a store this instance shares
            error: str | None = f"ACTION_UNKNOWN: no tool named {claimed.action!r} here"
        else:
            try:
                outcome = tool(dict(claimed.payload))
                result = await outcome if inspect.isawaitable(outcome) else outcome
            except Exception as exc:
                error = describe_error(exc)
            else:
                error = returned_error(result)
        final = await self.store.finish(
            action_id,
            "failed" if error is not None else "executed",
            result=bound_result(result),
            error=error,
            at_ms=self._now(),
        )
        await self._event(final, final.decided_by)
        return final

    async def reject(self, action_id: str, rejected_by: str, note: str | None = None) -> Action:
        """Refuse a pending action; `ACTION_NOT_PENDING` (409) if it was not pending."""
        done = await self.store.reject(
            action_id, str(rejected_by), None if note is None else str(note), at_ms=self._now()
        )
        if done is None:
            raise await self._not_pending(action_id)
        await self._event(done, done.decided_by)
        return done

    async def list(self, status: str | None = None) -> builtins.list[Action]:
        """Newest first; scoped to this instance's `run_id` when it has one."""
        if status is not None and status not in STATUSES:
            raise ConfigError(
                f"unknown status {status!r} (one of {', '.join(STATUSES)})",
                code="ACTION_INVALID",
                status=400,
            )
        return await self.store.list(status=status, run_id=self.run_id)

    async def get(self, action_id: str) -> Action:
        """The action; `ACTION_UNKNOWN_ID` (404) when there is none."""
        return await self._current(action_id)
