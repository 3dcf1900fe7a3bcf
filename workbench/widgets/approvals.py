"""The approval queue: a human decides on what an agent proposed.

Display is separate from logic. `ApprovalModel` holds the state of the screen (what is
pending, what is selected, the amend being edited, the last message) and forwards every
decision to `PendingActions`, which decides: only the store's atomic claim says whether an
approval runs, so two clicks, two tabs or two people still execute an action once, and the
loser reads `ACTION_NOT_PENDING` on the status line. `ApprovalQueue` only renders the model
and forwards clicks; the model works without ipywidgets (a script, a test, another UI).

In a notebook the kernel already runs an event loop, so a click cannot `asyncio.run` a
coroutine: `schedule` creates a task on the running loop and the widget re-renders when the
task is done. Without a running loop (a plain script) it runs the coroutine to the end.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

from workbench.errors import ConfigError, WorkbenchError
from workbench.tools.pending import Action, PendingActions, describe_error, one_line

try:
    import ipywidgets as widgets
except ImportError:  # the `notebooks` extra is missing: the models still work
    widgets = None

DECIDED: tuple[str, ...] = ("executing", "executed", "failed", "rejected")
HISTORY_LIMIT = 20


def schedule(
    coro: Coroutine[Any, Any, Any], done: Callable[[asyncio.Future[Any] | None], None] | None = None
) -> asyncio.Task[Any] | None:
    """Run `coro` from synchronous code (a button callback).

    Inside a running loop (a Jupyter kernel, an async test) it becomes a task on that loop and
    `done(task)` is called when it ends; the task is returned. Without one (a script) it runs to
    the end now, `done(None)` is called, and None is returned."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        try:
            asyncio.run(coro)
        finally:
            if done is not None:
                done(None)
        return None
    task = loop.create_task(coro)
    if done is not None:
        task.add_done_callback(done)
    return task


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="ACTION_INVALID", status=400)


class ApprovalModel:
    """The state behind an approval screen; every decision goes through `pending`.

    `refresh()` loads the pending actions (newest first) and the `history` of decided ones
    (newest decision first, at most `history_limit`). `select(id)` picks the action the
    buttons act on; the selection stays on an action after it is decided, so a second
    click on Approve is answered by the store (`ACTION_NOT_PENDING`), never by approving
    whichever action happens to come next. `set_amend(text)` edits the JSON object merged
    over the payload (empty = approve as proposed). Errors land in `error` / `error_code`
    as one line, never a traceback; `message` is the status line to show.
    """

    def __init__(
        self, pending: PendingActions, decided_by: str, *, history_limit: int = HISTORY_LIMIT
    ) -> None:
        if not str(decided_by).strip():
            raise _invalid("decided_by must name who decides: it is recorded with each decision")
        self.actions = pending
        self.decided_by = str(decided_by)
        self.history_limit = int(history_limit)
        self.pending: list[Action] = []
        self.history: list[Action] = []
        self.selected_id: str | None = None
        self.amend_text = ""
        self.amend: dict[str, Any] | None = None
        self.error: str | None = None
        self.error_code: str | None = None
        self.message = ""
        self.last: Action | None = None  # the action the last decision returned
        self._amend_error: WorkbenchError | None = None
        self._lock = asyncio.Lock()  # one decision at a time: the status line tells its outcome

    # ---------------------------------------------------------------- state
    @property
    def selected(self) -> Action | None:
        """The selected action as last loaded (pending or decided), or None."""
        if self.selected_id is None:
            return None
        for action in (*self.pending, *self.history):
            if action.id == self.selected_id:
                return action
        if self.last is not None and self.last.id == self.selected_id:
            return self.last
        return None

    @property
    def status_line(self) -> str:
        """What a status label shows: the error if there is one, else the message."""
        return self.error or self.message

    def _fail(self, exc: Exception) -> None:
        self.error_code = getattr(exc, "code", None) or type(exc).__name__
        self.error = one_line(str(exc)) if isinstance(exc, WorkbenchError) else describe_error(exc)

    def _clear_error(self) -> None:
        self.error = None
        self.error_code = None

    def select(self, action_id: str | None) -> None:
        """Pick the action the buttons act on; a new selection starts with an empty amend."""
        if action_id != self.selected_id:
            self.selected_id = action_id
            self.set_amend("")
        self._clear_error()

    def set_amend(self, text: str) -> bool:
        """Edit the amend (a JSON object, merged over the payload); False and `error`
        (`ACTION_INVALID`) when it is not one. The text is kept either way, to be fixed."""
        self.amend_text = text or ""
        self._amend_error = None
        self.amend = None
        if self.amend_text.strip():
            try:
                value = json.loads(self.amend_text)
            except ValueError as exc:
                self._amend_error = _invalid(f"the amend is not valid JSON: {exc}")
            else:
                if isinstance(value, dict):
                    self.amend = value
                else:
                    kind = type(value).__name__
                    self._amend_error = _invalid(f"the amend must be a JSON object, not {kind}")
        if self._amend_error is not None:
            self._fail(self._amend_error)
            return False
        if self.error_code == "ACTION_INVALID":
            self._clear_error()
        return True

    # ---------------------------------------------------------------- loading
    async def _load(self) -> None:
        everything = await self.actions.list()
        self.pending = [a for a in everything if a.status == "pending"]
        decided = [a for a in everything if a.status in DECIDED]
        decided.sort(key=lambda a: (a.updated_at_ms, a.id), reverse=True)
        self.history = decided[: self.history_limit]
        if self.selected_id is None and self.pending:
            self.selected_id = self.pending[0].id

    async def refresh(self) -> None:
        """Reload pending actions and history; the status line says how many are pending."""
        try:
            await self._load()
        except WorkbenchError as exc:
            self._fail(exc)
            return
        self._clear_error()
        if self._amend_error is not None:
            self._fail(self._amend_error)
        count = len(self.pending)
        self.message = f"{count} pending action{'s' if count != 1 else ''}"

    async def _after(self, outcome: Action | None, exc: WorkbenchError | None) -> Action | None:
        """Reload after a decision; an error survives the reload (the reload may fail too)."""
        try:
            await self._load()
        except WorkbenchError as load_exc:
            exc = exc or load_exc
        if exc is not None:
            self._fail(exc)
        return outcome

    def _target(self) -> str | None:
        if self.selected_id is None:
            self._fail(_invalid("no action selected"))
        return self.selected_id

    # ---------------------------------------------------------------- decisions
    async def approve(self) -> Action | None:
        """Approve the selected action with the amend (recorded with `decided_by`); the
        executed/failed action, or None with `error` set (nothing was run by this click)."""
        action_id, amend, amend_error = self._target(), self.amend, self._amend_error
        if action_id is None:
            return None
        if amend_error is not None:  # a bad amend never approves the unamended draft
            self._fail(amend_error)
            return None
        async with self._lock:
            try:
                done = await self.actions.approve(action_id, self.decided_by, amend)
            except WorkbenchError as exc:
                return await self._after(None, exc)
            self._clear_error()
            self.last = done
            self.set_amend("")
            if done.status == "failed":
                self.message = f"{done.action} {done.id[:8]} failed: {done.error}"
            else:
                self.message = f"{done.action} {done.id[:8]} {done.status} by {self.decided_by}"
            return await self._after(done, None)

    async def reject(self, note: str | None = None) -> Action | None:
        """Reject the selected action (with `decided_by` and the note); None with `error` set
        when it was not pending."""
        action_id = self._target()
        if action_id is None:
            return None
        note = note.strip() if isinstance(note, str) and note.strip() else None
        async with self._lock:
            try:
                done = await self.actions.reject(action_id, self.decided_by, note)
            except WorkbenchError as exc:
                return await self._after(None, exc)
            self._clear_error()
            self.last = done
            self.set_amend("")
            self.message = f"{done.action} {done.id[:8]} rejected by {self.decided_by}"
            return await self._after(done, None)

    # ---------------------------------------------------------------- sync wrappers
    def refresh_soon(self, done: Callable[[Any], None] | None = None) -> asyncio.Task[Any] | None:
        """`refresh()` from sync code; see `schedule`."""
        return schedule(self.refresh(), done)

    def approve_soon(self, done: Callable[[Any], None] | None = None) -> asyncio.Task[Any] | None:
        """`approve()` from sync code (a button callback); see `schedule`."""
        return schedule(self.approve(), done)

    def reject_soon(
        self, note: str | None = None, done: Callable[[Any], None] | None = None
    ) -> asyncio.Task[Any] | None:
        """`reject(note)` from sync code; see `schedule`."""
        return schedule(self.reject(note), done)


# -------------------------------------------------------------------- rendering
def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def payload_html(action: Action | None) -> str:
    """The selected action: name, who proposed it, status and payload (escaped)."""
    if action is None:
        return "<p class='wb-empty'><i>No action selected.</i></p>"
    e = html.escape
    parts = [
        f"<p><b>{e(action.action)}</b> <code>{e(action.id)}</code> — {e(action.status)}, "
        f"proposed by {e(action.proposed_by)} at {_when(action.created_at_ms)} UTC</p>",
        f"<pre class='wb-payload'>{e(_json(action.payload))}</pre>",
    ]
    if action.amended is not None:
        who = e(action.amended_by or "?")
        parts.append(f"<p>amended by {who}: <code>{e(json.dumps(action.amended))}</code></p>")
    return "".join(parts)


def history_html(history: list[Action]) -> str:
    """Decided actions, newest decision first, as an HTML table (every value escaped)."""
    if not history:
        return "<p class='wb-empty'><i>No decision yet.</i></p>"
    e = html.escape
    head = "".join(
        f"<th>{h}</th>" for h in ("decided (UTC)", "action", "status", "by", "amended", "note")
    )
    rows = []
    for a in history:
        amended = "" if a.amended is None else json.dumps(a.amended, ensure_ascii=False)
        detail = a.error if a.status == "failed" else a.note
        rows.append(
            f"<tr class='wb-history-row' data-action-id='{e(a.id)}'>"
            f"<td>{_when(a.updated_at_ms)}</td><td>{e(a.action)}</td>"
            f"<td class='wb-status-{e(a.status)}'>{e(a.status)}</td>"
            f"<td>{e(a.decided_by or '')}</td><td><code>{e(amended)}</code></td>"
            f"<td>{e(detail or '')}</td></tr>"
        )
    return f"<table class='wb-history'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _label(action: Action) -> str:
    payload = json.dumps(action.payload, ensure_ascii=False, sort_keys=True)
    if len(payload) > 60:
        payload = payload[:59] + "…"
    return f"{action.action} · {action.proposed_by} · {payload}"


def require_widgets() -> None:
    if widgets is None:
        raise ConfigError(
            "ipywidgets is not installed: install the `notebooks` extra (pip install "
            "'workbench[notebooks]'); ApprovalModel works without it",
            code="WIDGETS_UNAVAILABLE",
            status=400,
        )


_VBox: Any = widgets.VBox if widgets is not None else object


class ApprovalQueue(_VBox):
    """Pending actions, their payload, an amend editor, Approve / Reject, history.

    Renders an `ApprovalModel` and forwards clicks to it; a click starts a task on the
    kernel's loop and the display updates when it is done (`await queue.wait_idle()` waits
    for it). `auto_refresh(seconds)` keeps the queue live; `auto_refresh(None)` stops it.
    """

    def __init__(
        self,
        pending_actions: PendingActions,
        decided_by: str = "notebook",
        *,
        history_limit: int = HISTORY_LIMIT,
    ) -> None:
        require_widgets()
        self.model = ApprovalModel(pending_actions, decided_by, history_limit=history_limit)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._syncing = False
        self._live: asyncio.Task[Any] | None = None

        self.choices = widgets.Select(options=[], value=None, rows=6, description="Pending")
        self.choices.layout.width = "100%"
        self.payload = widgets.HTML()
        self.amend = widgets.Textarea(
            placeholder='{"field": "new value"}: a JSON object merged over the payload; '
            "empty approves it as proposed",
            description="Amend",
        )
        self.amend.layout.width = "100%"
        self.note = widgets.Text(placeholder="why (optional, recorded with a rejection)")
        self.approve_button = widgets.Button(description="Approve", button_style="success")
        self.reject_button = widgets.Button(description="Reject", button_style="danger")
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.status = widgets.Label()
        self.history_html = widgets.HTML()
        for w, css in (
            (self.choices, "wb-choices"),
            (self.payload, "wb-payload"),
            (self.amend, "wb-amend"),
            (self.note, "wb-note"),
            (self.approve_button, "wb-approve"),
            (self.reject_button, "wb-reject"),
            (self.refresh_button, "wb-refresh"),
            (self.status, "wb-status"),
            (self.history_html, "wb-history"),
        ):
            w.add_class(css)
        buttons = widgets.HBox(
            [self.approve_button, self.reject_button, self.note, self.refresh_button]
        )
        super().__init__(
            children=[
                self.choices,
                self.payload,
                self.amend,
                buttons,
                self.status,
                widgets.HTML("<b>History</b>"),
                self.history_html,
            ]
        )
        self.add_class("wb-approval-queue")

        self.choices.observe(self._on_choice, names="value")
        self.amend.observe(self._on_amend, names="value")
        self.approve_button.on_click(lambda _b: self._start(self.model.approve()))
        self.reject_button.on_click(lambda _b: self._start(self._reject()))
        self.refresh_button.on_click(lambda _b: self._start(self.model.refresh()))
        self.render()
        self._start(self.model.refresh())

    # ---------------------------------------------------------------- events
    def _on_choice(self, change: dict[str, Any]) -> None:
        if self._syncing or change["new"] is None:
            return
        self.model.select(change["new"])
        self.render()

    def _on_amend(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        self.model.set_amend(change["new"])
        self.status.value = self.model.status_line

    async def _reject(self) -> Action | None:
        done = await self.model.reject(self.note.value or None)
        if done is not None:
            self.note.value = ""
        return done

    def _start(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.status.value = "working…"
        try:
            task = schedule(coro, self._done)
        except Exception as exc:  # no running loop: it ran now and raised
            self.status.value = describe_error(exc)
            return
        if task is not None:
            self._tasks.add(task)

    def _done(self, task: asyncio.Future[Any] | None) -> None:
        if task is not None:
            self._tasks.discard(task)
        self.render()
        if task is not None and not task.cancelled() and task.exception() is not None:
            # the model catches WorkbenchError; anything else still gets one line, not a trace
            self.status.value = describe_error(task.exception())

    async def wait_idle(self) -> None:
        """Wait for every task a click started (tests; a cell that wants to block)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def auto_refresh(self, interval_s: float | None = 5.0) -> None:
        """Refresh every `interval_s` seconds on the running loop (None stops it)."""
        if self._live is not None:
            self._live.cancel()
            self._live = None
        if interval_s is None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_s)
                await self.model.refresh()
                self.render()

        self._live = asyncio.get_running_loop().create_task(loop())

    # ---------------------------------------------------------------- display
    def render(self) -> None:
        """Show the model's state (called after every task; never decides anything)."""
        m = self.model
        self._syncing = True
        try:
            options = [(_label(a), a.id) for a in m.pending]
            if list(self.choices.options) != options:
                self.choices.options = options
            ids = {a.id for a in m.pending}
            self.choices.value = m.selected_id if m.selected_id in ids else None
            if self.amend.value != m.amend_text:
                self.amend.value = m.amend_text
        finally:
            self._syncing = False
        self.payload.value = payload_html(m.selected)
        self.history_html.value = history_html(m.history)
        self.status.value = m.status_line
