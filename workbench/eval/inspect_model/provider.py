"""`WorkbenchModel`: Inspect AI's `workbench` model API.

`inspect eval TASK --model workbench/chain -M providers=FILE -M db=FILE` sends each generate of
Inspect through the providers file's chain (`workbench/<provider>:<model>` pins one model):
quotas, pacing, fallback, masking and the capability planning of tools are the router's, and
every attempt, route and verdict goes to the workbench DuckDB file through a `LoggedRouter`,
so `RunFrames`, `workbench runs` and `workbench report` read an Inspect eval like any run.

The mapping (the same as `workbench export inspect`, read the other way):

- one Inspect task execution (its `eval_id`) is one workbench run, its dataset
  `inspect:<task>`; it starts at the task's first generate and finishes when Inspect says the
  task ended (`hooks.py`), or when Inspect closes the model;
- one sample × epoch is one item × repeat (the sample's id, the epoch − 1): each generate of
  the sample is one route of that item, its last one the item's output; the sample's score is
  written over the output's grade when the run finishes;
- a generate outside any sample (Inspect's model API called directly, `async with
  get_model("workbench/chain", ...)`) is an item named by a hash of its first user message, in
  a run finished when the model is closed.

Two names come from Inspect's private modules, for want of public ones: `sample_active` (which
sample a generate belongs to) and `PrerequisiteError` (the error its CLI prints as one line);
the `inspect` extra pins Inspect below 0.4, and the tests exercise both.

A rate limit never reaches Inspect's own retry: the router falls back down the chain (and,
every model cooling, waits for the first to free: a providers file without `when_all_cooling`
waits here), and a route refused for the provider's reasons holds the sample and asks again
when a model is expected free, within `max_wait`, as `workbench run` holds an item
(`eval/run/holding.py`). Any other failure errors the sample, in one line with its code.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from dataclasses import dataclass
from typing import Any

from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log._samples import sample_active
from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    RetryDecision,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from workbench.cassettes import Cassette
from workbench.config.providers_file import ProvidersConfig, load_config
from workbench.errors import ConfigError, RoutingError, WorkbenchError
from workbench.eval.gateway.logged_router import LoggedRouter
from workbench.eval.inspect_model.convert import chat_request, model_output
from workbench.eval.inspect_model.model_args import CHAIN, ModelArgs
from workbench.eval.inspect_model.shared_store import STORES
from workbench.eval.run.holding import ItemHold, Unanswered
from workbench.eval.store.schema import OutputGrade
from workbench.routing import RouteResult
from workbench.types import ChatRequest

#: Every open model, for the hooks that finish their runs when Inspect's tasks end.
OPEN: weakref.WeakSet[WorkbenchModel] = weakref.WeakSet()


#: Inspect's log status → the workbench run's status.
RUN_STATUS = {"success": "finished", "error": "failed", "cancelled": "interrupted"}


class RouteFailed(Exception):
    """A generate that failed, as Inspect records it on the sample: Inspect shows an
    exception's `message`, and ours is the error's one line with its code (the WorkbenchError,
    or the hold that gave up, is its cause)."""

    def __init__(self, line: str) -> None:
        self.message = line
        super().__init__(line)


#: Routes of one sample refused for the provider's reasons before it errors (as `workbench
#: run --max-tries`).
MAX_TRIES = 10


@dataclass(slots=True)
class Conversation:
    """One sample's account across its generates: its turns answered and the attempts they
    logged (the next attempt's number), and its hold (the time the provider kept it)."""

    hold: ItemHold
    turns: int = 0
    tries: int = 0


class WorkbenchModel(ModelAPI):
    """Routes Inspect's generates through a providers file and logs them; see the module."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 (Inspect's own signature)
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self._cassette: Cassette | None = None
        try:
            self.args = ModelArgs.parse(model_name, model_args)
            self._check_pinned(self._providers())  # a bad file is refused before the eval
            self._cassette = self._open_cassette()  # a bad or missing cassette too
        except WorkbenchError as exc:
            # Inspect's CLI prints a PrerequisiteError's message alone, without a traceback:
            # the one line, with its code; the WorkbenchError stays its cause.
            raise PrerequisiteError(str(exc)) from exc
        self.concurrency = config.max_connections or 16
        self._runs: dict[str, LoggedRouter] = {}  # per Inspect task execution (eval_id)
        self._inspect_run: dict[str, str] = {}  # eval_id → the Inspect run (an eval() call)
        # eval_id → its samples' grades, written when its run finishes: one statement, where
        # one a sample would cost a DuckDB transaction each (milliseconds, the loop blocked)
        self._grades: dict[str, list[OutputGrade]] = {}
        # (eval_id, item, repeat) → its account so far
        self._conversations: dict[tuple[str, str, int], Conversation] = {}
        OPEN.add(self)
        from workbench.eval.inspect_model.hooks import register_hooks  # (it imports OPEN)

        register_hooks()

    # -------------------------------------------------------------------- what Inspect asks
    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        try:
            return await self._generate(input, tools, tool_choice, config)
        except WorkbenchError as exc:
            raise RouteFailed(str(exc)) from exc
        except Unanswered as held:
            said = held.message
            if held.reason == "max_wait":  # in the words of the model args, not the CLI's
                said = (
                    f"held past -M max_wait={self.args.max_wait_s:g}s; last refusal: {held.error}"
                )
            raise RouteFailed(f"{held.code}: {said}") from held

    async def _generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        request = chat_request(input, tools, tool_choice, config)
        eval_id, inspect_run, task, item_id, repeat = _identity(request)
        logged = self._run(eval_id, task)
        self._inspect_run.setdefault(eval_id, inspect_run)
        key = (eval_id, item_id, repeat)
        conversation = self._conversations.get(key)
        if conversation is None:
            hold = ItemHold(self.args.max_wait_s, MAX_TRIES)
            conversation = self._conversations[key] = Conversation(hold)

        async def route() -> RouteResult:
            try:
                result = await logged.route(
                    request,
                    item_id=item_id,
                    repeat=repeat,
                    tools_mode=self.args.tools_mode,
                    turn=conversation.turns,
                    tries=conversation.tries,
                )
            except BaseException as exc:
                # A failed route says its attempts; a cancelled one logged at most the one it
                # was making (counting one too many only leaves a gap in the numbers).
                conversation.tries += len(exc.attempts) if isinstance(exc, RoutingError) else 1
                raise
            conversation.tries += len(result.attempts)
            conversation.turns += 1
            return result

        result = await conversation.hold.ask(route)
        asked = result.attempts[0].key if result.attempts else result.key
        output = model_output(result.value, answered=result.key, asked=asked)
        # Where to find this generate in the DuckDB file, from Inspect's log.
        output.metadata = {
            "workbench": {
                "run_id": logged.run_id,
                "item_id": item_id,
                "repeat": repeat,
                "turn": conversation.turns - 1,
                "protocol": result.value.protocol,
                "attempts": len(result.attempts),
            }
        }
        return output

    def should_retry(self, ex: Exception) -> bool | RetryDecision:
        """Never: the router fell back and waited, and the sample's hold asked again as long
        as `max_wait` allows (as `workbench run` holds an item); what reaches Inspect is a
        failure asking again cannot mend, or a hold already spent."""
        return RetryDecision.no()

    def max_connections(self) -> int:
        # The router paces each provider itself; Inspect's ceiling is the run's concurrency.
        return self.concurrency

    def connection_key(self) -> str:
        return str(self.args.providers.resolve())

    def canonical_name(self) -> str:
        return self.model_name

    async def aclose(self) -> None:
        """Inspect closes the model: every run still open is finished, the cassette closed."""
        for eval_id in list(self._runs):
            await self.finish(eval_id, "finished")
        self.close_cassette()

    def close(self) -> None:  # Inspect's sync close: nothing to do without a loop
        return None

    # -------------------------------------------------------------------- the runs
    def _providers(self) -> ProvidersConfig:
        """The providers file, read again for each run (a run's router closes its clients);
        without its own `when_all_cooling`, the router waits for a model to free."""
        entry = load_config(self.args.providers)
        entry.router_options.setdefault("when_all_cooling", "wait")
        return entry

    def _check_pinned(self, entry: ProvidersConfig) -> None:
        pinned = self.args.pinned
        if pinned is None:
            return
        named = [f"{p.id}:{m.id}" for p in entry.providers for m in p.models]
        if pinned not in named:
            raise ConfigError(
                f"workbench/{pinned}: not a model of {self.args.providers} "
                f"(workbench/{CHAIN}, or one of: {', '.join(named)})",
                code="INSPECT_MODEL_INVALID",
            )

    def _run(self, eval_id: str, task: str | None) -> LoggedRouter:
        """The run of this task execution, started at its first generate."""
        logged = self._runs.get(eval_id)
        if logged is None:
            store = STORES.take(self.args.db)
            try:
                logged = LoggedRouter.open(
                    self._providers(),
                    store,
                    dataset=f"inspect:{task}" if task else "inspect",
                    name=self.args.name,
                    mask=self.args.mask,
                    model=self.args.pinned,
                    tools_mode=self.args.tools_mode,
                    concurrency=self.concurrency,
                )
            except BaseException:
                STORES.give_back(self.args.db)
                raise
            if self.args.cassette is not None:
                if self._cassette is None or self._cassette.closed:  # a new eval in this process
                    self._cassette = self._open_cassette()
                logged.config.router.use_cassette(self._cassette)
            self._runs[eval_id] = logged
        return logged

    def _open_cassette(self) -> Cassette | None:
        if self.args.cassette is None:
            return None
        return Cassette(self.args.cassette, self.args.cassette_mode)

    def cassette_open(self) -> bool:
        return self._cassette is not None and not self._cassette.closed

    def close_cassette(self) -> None:
        """The eval is over: the cassette is rewritten in its stable order. One recording a
        whole eval, its tasks in turn or at once; the next eval in this process opens it again
        (`-M record`: a new recording, as `workbench run --record` again)."""
        if self._cassette is not None:
            self._cassette.close()

    def run_id(self, eval_id: str) -> str | None:
        """The workbench run of an Inspect task execution, while it is open."""
        logged = self._runs.get(eval_id)
        return logged.run_id if logged is not None else None

    def logged(self, eval_id: str) -> LoggedRouter | None:
        return self._runs.get(eval_id)

    def sample_ended(self, eval_id: str, item_id: str, repeat: int) -> None:
        """A sample is over: its turns are forgotten (Inspect retrying it starts again)."""
        self._conversations.pop((eval_id, item_id, repeat), None)

    def graded(self, eval_id: str, grade: OutputGrade) -> None:
        """A sample's score, to be written over its output when its run finishes."""
        self._grades.setdefault(eval_id, []).append(grade)

    def open_runs(self, inspect_run: str | None = None) -> list[str]:
        """The task executions whose runs are open (of one Inspect run, if given)."""
        return [
            e for e in self._runs if inspect_run is None or self._inspect_run.get(e) == inspect_run
        ]

    async def finish(self, eval_id: str, status: str) -> None:
        """Finish the run of a task execution (`status`: a run status) and close its file."""
        logged = self._runs.pop(eval_id, None)
        self._inspect_run.pop(eval_id, None)
        for key in [k for k in self._conversations if k[0] == eval_id]:
            del self._conversations[key]
        grades = self._grades.pop(eval_id, [])
        if logged is None:
            return
        try:
            try:
                if grades:
                    logged.store.set_grades(logged.run_id, grades)
            finally:
                await logged.aclose(status)
        finally:
            STORES.give_back(self.args.db)


def _identity(request: ChatRequest) -> tuple[str, str, str | None, str, int]:
    """(eval id, Inspect run id, task name, item id, repeat) of the generate under way:
    Inspect's active sample says; outside any sample, the item is named by its first user
    message."""
    sample = sample_active()
    if sample is not None and sample.sample.id is not None:
        return (
            sample.eval_id,
            sample.run_id or "",
            sample.task,
            str(sample.sample.id),
            max(0, sample.epoch - 1),
        )
    first = next((m for m in request.messages if m.get("role") == "user"), {})
    text = json.dumps(first.get("content") or request.system or "", ensure_ascii=False)
    item_id = f"msg-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if sample is not None:
        return sample.eval_id, sample.run_id or "", sample.task, item_id, max(0, sample.epoch - 1)
    return "", "", None, item_id, 0


__all__ = ["MAX_TRIES", "OPEN", "RUN_STATUS", "Conversation", "RouteFailed", "WorkbenchModel"]
