"""What an export carries of a conversation, and how it is masked before it does.

The store keeps what a person reads: the item's prompt, and every answer unmasked (the router
unmasks a reply on its way in). An export leaves the machine, so everything in it that a person
or a model wrote goes through the item's masker first: the masker the run itself used
(`masker_for(item)`, from the prompt set the run names), primed with the item's request so that
each value gets the very token the provider saw. An attempt that logged its request as it left
(`attempts.request`) is exported as logged, masked again: a no-op on its tokens, and it masks
what a local model was sent in clear (nothing left the machine then; the export does).

A tool loop's conversation is rebuilt from what was logged, turn by turn: each turn's answer
(`replies`), then what the loop sent back after it, read from the next turn's request as it
left (the tool results, or the instruction to answer). A step's arguments and result are
those of the call and the tool message of its id.

Without the prompt set the item's sensitive values are unknown, and a registry name that no
pattern catches would go out in clear: the export refuses (`EXPORT_DATASET_MISSING`) rather
than guess. Images are never exported: the masker cannot read them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.dataset.masking import masker_for
from workbench.eval.dataset.prompt_set import Dataset, Item, open_dataset
from workbench.eval.export._run import (
    LoggedAttempt,
    LoggedRoute,
    LoggedRun,
    LoggedSample,
    LoggedToolStep,
)
from workbench.eval.store.schema import OutputRow
from workbench.routing.privacy import mask_request
from workbench.text.masker import ReversibleMasker

IMAGE = "[image]"  # what stands in for a picture: its bytes are never exported


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call as exported: its arguments masked."""

    id: str
    name: str
    arguments: Any


@dataclass(frozen=True, slots=True)
class Turn:
    """One message as exported: text masked, images replaced by a placeholder."""

    role: str  # system, user, assistant, tool
    text: str
    calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # a tool result's tool


@dataclass(frozen=True, slots=True)
class Exchange:
    """One turn of a sample as exported: its route, the answer it got (None when nobody
    answered), and what the loop sent back after that answer (empty after the last turn)."""

    route: LoggedRoute
    answer: Turn | None
    fed_back: tuple[Turn, ...] = ()


@dataclass(frozen=True, slots=True)
class Offered:
    """A tool an attempt sent natively: its name, and the item's description and schema for
    it (masked) when the prompt set has them."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


def step_trail(
    exchanges: list[Exchange], step: LoggedToolStep, turn: int
) -> tuple[Call | None, Turn | None]:
    """A step's call (in the answer of `turn`, the one that asked for it) and its result (the
    tool message the loop sent back after it), found by the step's id in that turn first: ids
    repeat across turns. None for what was not logged."""
    order = [*exchanges[turn : turn + 1], *exchanges] if 0 <= turn < len(exchanges) else exchanges
    call = next(
        (c for x in order if x.answer for c in x.answer.calls if c.id == step.step_id), None
    )
    result = next(
        (
            t
            for x in order
            for t in x.fed_back
            if t.role == "tool" and t.tool_call_id == step.step_id
        ),
        None,
    )
    return call, result


def open_run_dataset(run: LoggedRun, dataset: str | Path | Dataset | None = None) -> Dataset:
    """The prompt set the run was made from (or `dataset`), checked against what the run
    logged: every sample's item is in it, with the same prompt."""
    if isinstance(dataset, Dataset):
        found = dataset
    else:
        bfcl = dataset is None and run.dataset_name.startswith("bfcl:")
        spec: str | Path = dataset or (run.dataset_name if bfcl else run.dataset)
        try:
            found = open_dataset(spec, bfcl_source=run.dataset if bfcl else None)
        except ConfigError as exc:
            raise _missing(run, f"{spec} cannot be read ({exc.code})") from None
        # Found where the run read it: it must be the very file (a changed `sensitive` list
        # would mask with the wrong values). One the user names is checked item by item.
        if dataset is None and run.dataset_sha and found.sha256 != run.dataset_sha:
            raise _missing(run, f"{found.path} changed since the run (another sha256)")
    items = {item.id: item for item in found.items}
    for sample in run.samples:
        item = items.get(sample.item_id)
        if item is None:
            raise _missing(run, f"{found.path} has no item {sample.item_id!r}")
        if item.prompt != sample.prompt:
            raise _missing(run, f"item {sample.item_id!r} of {found.path} changed since the run")
    return found


def _missing(run: LoggedRun, why: str) -> ConfigError:
    return ConfigError(
        f"run {run.run_id}: its prompt set {why}, so its sensitive values are unknown and the "
        "export would carry them in clear; pass --dataset FILE (the prompt set it ran)",
        code="EXPORT_DATASET_MISSING",
    )


class Masking:
    """The content of a run's samples, each through its own masker (one per conversation, as
    the run had)."""

    def __init__(self, dataset: Dataset) -> None:
        self._items = {item.id: item for item in dataset.items}

    @classmethod
    def for_run(cls, run: LoggedRun, dataset: str | Path | Dataset | None = None) -> Masking:
        return cls(open_run_dataset(run, dataset))

    def sample(self, sample: LoggedSample) -> SampleContent:
        return SampleContent(self._items[sample.item_id])


class SampleContent:
    """One sample's content, masked: its input, what each attempt sent and got, its output."""

    def __init__(self, item: Item) -> None:
        self._request = item.request()
        self._masker: ReversibleMasker = masker_for(item)
        # The router masked this request first: masking it now allots the same tokens.
        mask_request(self._masker, self._request)

    def text(self, text: str | None) -> str:
        return self._masker.mask(text) if text else ""

    def value(self, value: Any) -> Any:
        return self._masker.mask_value(value)

    def input(self) -> list[Turn]:
        """The item's request: system prompt, then its messages."""
        return self._turns(self._request.system, self._request.messages)

    def sent(self, attempt: LoggedAttempt) -> list[Turn]:
        """What the attempt sent, as logged; the item's request when it was not logged."""
        if attempt.request is None:
            return self.input()
        return self._turns(attempt.request.get("system"), attempt.request.get("messages") or [])

    def offered(self, attempt: LoggedAttempt) -> list[Offered]:
        """The tools the attempt put on its request: none when they went described in the
        system prompt instead (its text says so), or when the request was not logged."""
        request = attempt.request or {}
        if request.get("tools_sent") != "native":
            return []
        specs = {}
        for tool in self._request.tools or ():
            fn = tool.get("function") if isinstance(tool, Mapping) else None
            if isinstance(fn, Mapping) and fn.get("name"):
                specs[str(fn["name"])] = fn
        out = []
        for name in request.get("tools") or []:
            spec = specs.get(str(name)) or {}
            parameters = spec.get("parameters")
            out.append(
                Offered(
                    str(name),
                    self.text(str(spec.get("description") or "")),
                    self.value(parameters) if isinstance(parameters, Mapping) else None,
                )
            )
        return out

    def exchanges(self, sample: LoggedSample) -> list[Exchange]:
        """The sample's turns, in order, each with its answer and what followed it."""
        out = []
        routes = sample.routes
        for n, route in enumerate(routes):
            answer = self.answer(route.reply) if route.reply is not None else None
            after = routes[n + 1] if answer is not None and n + 1 < len(routes) else None
            out.append(Exchange(route, answer, tuple(self.fed_back(after)) if after else ()))
        return out

    def fed_back(self, route: LoggedRoute) -> list[Turn]:
        """What the route's request added after the model's last answer: the messages after
        its last assistant message, as the first attempt that logged its request sent them."""
        sent = next((a for a in route.attempts if a.request is not None), None)
        if sent is None:
            return []
        turns = self.sent(sent)
        last = max((n for n, t in enumerate(turns) if t.role == "assistant"), default=None)
        return [] if last is None else turns[last + 1 :]

    def params(self, step: LoggedToolStep) -> str:
        """The step's own summary of its arguments, masked."""
        return self.text(step.params)

    def answer(self, reply: Mapping[str, Any]) -> Turn:
        """A turn's answer (a `replies` row) as the assistant message."""
        return Turn("assistant", self.text(reply.get("text")), self._calls(reply.get("tool_calls")))

    def output(self, output: OutputRow) -> Turn:
        """The graded output: the cleaned text and every call of the item."""
        return Turn("assistant", self.text(output.cleaned), self._calls(_loads(output.tool_calls)))

    def _turns(self, system: Any, messages: Any) -> list[Turn]:
        turns = [Turn("system", self.text(str(system)))] if system else []
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, Mapping):
                continue
            turns.append(
                Turn(
                    role=str(message.get("role") or "user"),
                    text=self.text(_text(message.get("content"))),
                    calls=self._calls(message.get("tool_calls")),
                    tool_call_id=_opt(message.get("tool_call_id")),
                    name=_opt(message.get("name")),
                )
            )
        return turns

    def _calls(self, calls: Any) -> tuple[Call, ...]:
        out = []
        for n, call in enumerate(calls if isinstance(calls, list) else []):
            if not isinstance(call, Mapping):
                continue  # a call logged as its repr: nothing readable to export
            fn = call.get("function")
            if isinstance(fn, Mapping):  # the OpenAI shape an assistant message carries
                name, arguments = fn.get("name"), _loads(fn.get("arguments"))
            else:  # a ToolCall as a dict
                name, arguments = call.get("name"), call.get("arguments")
            out.append(
                Call(str(call.get("id") or f"call_{n}"), str(name or ""), self.value(arguments))
            )
        return tuple(out)


def _text(content: Any) -> str:
    """A message's words; a picture is a placeholder."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, Mapping) and part.get("type") in ("image_url", "image"):
                parts.append(IMAGE)
        return "\n".join(parts)
    return ""


def _loads(value: Any) -> Any:
    """Arguments as the model wrote them: JSON when they are, else the text itself (an
    unreadable call's arguments are still what it sent)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)
