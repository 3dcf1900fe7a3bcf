"""Personas that play BFCL's multi-turn entries: an oracle, and the mistakes models make.

A persona with `bfcl` set recognises the entry a conversation is (its first user message,
then each later turn's message in order), where it stands (the turn: how many turns' user
messages it has seen, a held-back turn's being BFCL's MORE_FUNCTIONS; the step: assistant
messages since that turn's message), and answers as the persona plays:

- step 0 of a turn: the ground truth's calls of that turn, all at once — native tool calls
  when tools are offered, BFCL's `[f(a=1), g(b="x")]` when they are not (prompting mode), or
  the persona's own prose markup; a turn whose ground truth is empty gets a question back;
- any later step (after the results): the calls of the turn not made yet (a turn played in
  parts, see below), else a short text, no calls, so the turn ends.

Mistakes (`skips_step`, `wrong_arg`, `asks_back`) strike a seeded share of entries, chosen by
the entry's opening message alone, so which entries a persona fails is a fact of the persona. A conversation that
is no BFCL entry (the capability probe) gets the ordinary answer.

A run masks personal data before a request leaves (a date reads as a phone number, a name
as a person): a masked value (`#PHONE_0001`) stands for any text wherever the persona
compares what it sees with BFCL's data, and the calls it wrote before are read back from
the history — native calls, BFCL's list of calls, or its own prose as the tool loop writes
it again. A conversation that is no multi-turn entry may be an agentic one (memory, web
search: `bfcl_agentic`).

Several entries open with the same message (a base entry and its long-context twin), and a
few differ only in ground truth. The candidates are narrowed by each later turn's message,
then by the functions offered (a miss_func turn before its functions arrive), then by the calls the conversation already made, then: one candidate's calls holding every
other's (the extra calls are harmless reads or misses there); then the candidate whose string
arguments the conversation's results show (a long-context listing); then BFCL's category order.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from workbench.sim.bfcl_data import (
    MORE_FUNCTIONS,
    Call,
    Entry,
    EntryIndex,
    entry_index,
    same_text,
)
from workbench.sim.conversation import Answer, Conversation, OutCall, compact
from workbench.sim.failures import draw
from workbench.sim.fleet import Persona

MISTAKES = ("skips_step", "wrong_arg", "asks_back")
DONE = "I have done what you asked for this turn."
_TOKEN = re.compile(r"[\w.@#$'-]{4,}")
# A function doc's name in a prompt: BFCL's JSON listing, or Python's repr of held-back docs.
_DOC_NAME = re.compile(r"""["']name["']\s*:\s*["']([A-Za-z_]\w*)["']""")


@dataclass(frozen=True, slots=True)
class Position:
    """Where a conversation stands in an entry: `made`, the calls this turn made so far;
    `twins`, the entries it could still be when nothing told them apart (else empty)."""

    entry: Entry
    turn: int
    step: int
    made: Counter[str]
    twins: tuple[Entry, ...] = ()


@dataclass(frozen=True, slots=True)
class Mistake:
    """The one mistake a persona makes on an entry: at `turn`, on call number `call`."""

    kind: str
    turn: int
    call: int


# ------------------------------------------------------------------ where the conversation is


def locate(conv: Conversation, index: EntryIndex) -> Position | None:
    """The entry, turn and step of `conv`; None when it is no BFCL multi-turn entry."""
    users = [i for i, t in enumerate(conv.turns) if t.role == "user"]
    if not users:
        return None
    candidates = index.get(conv.turns[users[0]].text)
    if not candidates:
        return None
    turn, boundaries = 0, [users[0]]
    for i in users[1:]:
        text = conv.turns[i].text
        following = tuple(
            e for e in candidates if turn + 1 < len(e.turns) and _opens_turn(e, turn + 1, text)
        )
        if following:  # any other user message carries results (prompting mode)
            candidates, turn = following, turn + 1
            boundaries.append(i)
    step = sum(1 for t in conv.turns[boundaries[-1] + 1 :] if t.role == "assistant")
    known = {c.key: c for e in candidates for calls in e.truth for c in calls}
    seen = _calls_per_turn(conv, boundaries, known)
    entry, twins = _choose(candidates, turn, conv, seen, index.markers)
    return Position(entry, turn, step, seen[turn], twins)


def _opens_turn(entry: Entry, turn: int, text: str) -> bool:
    if turn in entry.held_back or not entry.turns[turn]:
        return text.strip().endswith(MORE_FUNCTIONS)
    return same_text(text.strip(), entry.turns[turn].strip())


def _calls_per_turn(
    conv: Conversation, boundaries: list[int], known: dict[str, Call]
) -> list[Counter[str]]:
    """The calls the conversation made in each turn, as `Call.key`s (native or BFCL text); a
    call the router sent back masked, or a prose call whose values were read as text, counts as
    the `known` call it matches."""
    out: list[Counter[str]] = []
    names = {c.name for c in known.values()}
    for k, start in enumerate(boundaries):
        end = boundaries[k + 1] if k + 1 < len(boundaries) else len(conv.turns)
        seen: Counter[str] = Counter()
        for t in conv.turns[start + 1 : end]:
            if t.role != "assistant":
                continue
            for c in t.tool_calls:
                args = c.get("arguments") or {}
                try:  # the OpenAI surface keeps the wire string; Gemini's, the object
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    continue
                if isinstance(args, dict):
                    seen[_known(Call(str(c.get("name")), args), known)] += 1
            written = _python_calls(t.text) or _prose_calls(t.text, names)
            seen.update(_known(call, known) for call in written)
        out.append(seen)
    return out


def _known(call: Call, known: dict[str, Call]) -> str:
    """`call.key`, or the key of the `known` call it is as the history shows it: a masked
    value (`#PHONE_0001`) stands for any text, and a value read from prose as text (an XML
    family's `<parameter=limit>22000.0</parameter>`) for the number or list it writes."""
    if call.key in known:
        return call.key
    for key, meant in known.items():
        if meant.name == call.name and meant.args.keys() == call.args.keys():
            if all(_same_value(call.args[k], v) for k, v in meant.args.items()):
                return key
    return call.key


def _same_value(seen: Any, meant: Any) -> bool:
    if seen == meant:
        return True
    shown = seen if isinstance(seen, str) else json.dumps(seen, sort_keys=True)
    forms = {str(meant), json.dumps(meant, sort_keys=True), json.dumps(meant, ensure_ascii=False)}
    return any(same_text(shown, form) for form in forms)


def _prose_calls(text: str, names: set[str]) -> list[Call]:
    """A prose persona's calls as the history shows them (the tool loop writes them again in
    the family's format), read by the library's readers of every family under `names`."""
    if "<" not in text and "{" not in text and "[" not in text:
        return []
    from workbench.providers.protocols.families import read_text_tool_calls

    calls, _ = read_text_tool_calls(text, names)
    return [Call(c.name, dict(c.arguments)) for c in calls if not c.invalid]


def _python_calls(text: str) -> list[Call]:
    """BFCL's prompting-mode list of calls, keyword arguments only; [] for anything else."""
    text = text.strip().strip("`\n ")
    if not text.startswith("["):
        return []
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, SystemError):
        # SystemError: CPython 3.11's parser on some deeply nested texts, not our bug to raise.
        return []
    calls = []
    for item in node.elts if isinstance(node, ast.List) else []:
        if isinstance(item, ast.Call) and isinstance(item.func, ast.Name):
            try:
                args = {k.arg: ast.literal_eval(k.value) for k in item.keywords if k.arg}
            except ValueError:
                continue
            calls.append(Call(item.func.id, args))
    return calls


def _choose(
    candidates: tuple[Entry, ...],
    turn: int,
    conv: Conversation,
    seen: list[Counter[str]],
    markers: tuple[str, ...],
) -> tuple[Entry, tuple[Entry, ...]]:
    """The entry `conv` most likely is, and the others it could as well be (when no rule told
    them apart: the caller plays their common calls first, and looks again at the results)."""

    def truth(e: Entry) -> Counter[str]:
        return Counter(c.key for c in e.truth[turn])

    def settled(group: tuple[Entry, ...]) -> bool:
        return len({tuple(sorted(truth(e).elements())) for e in group}) == 1

    if settled(candidates):
        return candidates[0], ()
    # The functions offered: a miss_func entry offers its held-back ones only from their turn.
    offered = _offered(conv)
    if offered:
        fits = tuple(
            e
            for e in candidates
            if _offers_as(e, turn, offered) and {c.name for c in e.truth[turn]} <= offered
        )
        candidates = fits or candidates
        if settled(candidates):
            return candidates[0], ()
    # The calls already made: an entry whose earlier turns the conversation played.
    agree = {
        e.id: sum(
            sum((Counter(c.key for c in e.truth[k]) & seen[k]).values())
            for k in range(min(turn, len(seen)))
        )
        for e in candidates
    }
    best = max(agree.values())
    candidates = tuple(e for e in candidates if agree[e.id] == best)
    if settled(candidates):
        return candidates[0], ()
    # One candidate's calls holding every other's, none of them empty.
    for e in candidates:
        if all(truth(o) and not (truth(o) - truth(e)) for o in candidates):
            return e, ()
    # A long-context entry's backends pad their results with text of their own.
    shown = "\n".join(t.text for t in conv.turns)
    flat = " ".join(shown.replace("\\'", "'").replace('\\"', '"').replace("\\n", " ").split())
    if any(m in flat for m in markers):  # no padding seen yet proves nothing: not read yet
        long = tuple(e for e in candidates if e.category == "multi_turn_long_context")
        candidates = long or candidates
        if settled(candidates):
            return candidates[0], ()
    # The candidate whose string arguments the conversation shows (missing fewest, then most).
    evidence = {}
    for e in candidates:
        tokens = [w for c in e.truth[turn] for w in _tokens(c.args)]
        found = sum(1 for w in tokens if w in shown)
        evidence[e.id] = (not e.truth[turn], len(tokens) - found, -found)
    return min(candidates, key=lambda e: evidence[e.id]), candidates


def _offers_as(entry: Entry, turn: int, offered: set[str]) -> bool:
    """Whether `offered` is what `entry` offers at `turn`: its held-back functions absent
    before their turn, present from it."""
    return all(
        (names <= offered) if held <= turn else not (names & offered)
        for held, names in entry.held_back.items()
    )


def _offered(conv: Conversation) -> set[str]:
    """The function names offered: the tools field, else the docs written in the prompt."""
    if conv.tools:
        return {t.name for t in conv.tools}
    text = "\n".join([conv.system or "", *(t.text for t in conv.turns if t.role == "user")])
    return set(_DOC_NAME.findall(text))


def _tokens(value: Any) -> list[str]:
    if isinstance(value, str):
        return _TOKEN.findall(value)
    if isinstance(value, dict):
        return [w for v in value.values() for w in _tokens(v)]
    if isinstance(value, list | tuple):
        return [w for v in value for w in _tokens(v)]
    return []


# ------------------------------------------------------------------ the persona's mistake


def mistake_plan(kind: str, entry: Entry, share: float) -> Mistake | None:
    """The mistake `kind` makes on `entry`, or None: entries are struck when a draw seeded by
    the entry's opening message falls under `share` (not its id: entries that open alike are
    struck alike, since the persona cannot tell them apart until later); then the turn and the
    call are drawn among those the mistake can change (a dropped call from a turn of two or
    more when there is one)."""
    seed = entry.turns[0]
    if kind not in MISTAKES or draw(0, "bfcl", kind, seed) >= share:
        return None
    places: list[tuple[int, int]] = []
    for t, calls in enumerate(entry.truth):
        for k, call in enumerate(calls):
            if kind == "wrong_arg" and not any(_changed(v) != v for v in call.args.values()):
                continue
            if kind == "asks_back" and (k > 0 or not call.args):  # it asks for an argument
                continue
            places.append((t, k))
    if kind == "skips_step":
        several = [(t, k) for t, k in places if len(entry.truth[t]) > 1]
        places = several or places
    if not places:
        return None
    turn, index = places[int(draw(0, "bfcl-place", kind, seed) * len(places))]
    return Mistake(kind, turn, index)


def _changed(value: Any) -> Any:
    """A wrong value of the same type, as a model gets one wrong: off by one, another name."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value + 1.5, 2)
    if isinstance(value, str):
        return value + "_2" if value else "x"
    if isinstance(value, list | tuple) and value:
        return list(value[:-1]) if len(value) > 1 else [*value, *value]
    return value


def _wrong(call: Call) -> Call:
    name = next(k for k, v in call.args.items() if _changed(v) != v)
    return Call(call.name, {**call.args, name: _changed(call.args[name])})


def turn_calls(entry: Entry, turn: int, mistake: Mistake | None) -> list[Call]:
    """The calls the persona makes at step 0 of `turn`."""
    calls = list(entry.truth[turn])
    if mistake is None or mistake.turn != turn:
        return calls
    if mistake.kind == "skips_step":
        del calls[mistake.call]
    elif mistake.kind == "wrong_arg":
        calls[mistake.call] = _wrong(calls[mistake.call])
    elif mistake.kind == "asks_back":
        return []
    return calls


# ------------------------------------------------------------------ the answer


def play(persona: Persona, conv: Conversation, index: EntryIndex | None = None) -> Answer | None:
    """The persona's answer to a BFCL multi-turn conversation; None when `conv` is not one
    (or BFCL's data was never fetched): the ordinary answer engine takes it."""
    if not persona.bfcl:
        return None
    index = index if index is not None else entry_index()
    where = None if index is None else locate(conv, index)
    if where is None:
        from workbench.sim.bfcl_agentic import agentic_index, play_agentic

        agentic = agentic_index() if index is not None else None
        return None if agentic is None else play_agentic(persona, conv, agentic)
    entry, turn = where.entry, where.turn
    mistake = mistake_plan(persona.bfcl, entry, persona.bfcl_mistake_share)
    calls = turn_calls(entry, turn, mistake)
    if where.step > 0:
        # A turn played in parts (see below) goes on with what is left; else it is done.
        left = _left(calls, where.made)
        if not where.made or not left:
            return Answer(text=DONE)
        return render(persona, conv, left, f"{entry.id}:{turn}:{where.step}")
    if where.twins:
        # Entries the conversation cannot yet tell apart: their common first calls now, the
        # rest once the results show which one it is (a long-context listing, a file's text).
        plans = [
            turn_calls(e, turn, mistake_plan(persona.bfcl, e, persona.bfcl_mistake_share))
            for e in where.twins
        ]
        common = _common_start(plans)
        if 0 < len(common) < len(calls):
            calls = common
    if not calls:
        if entry.truth[turn] and mistake is not None and mistake.kind == "asks_back":
            first = entry.truth[turn][mistake.call]
            what = next(iter(first.args), "details")
            return Answer(text=f"Before I call {first.name}, which {what} should I use?")
        return Answer(text="I cannot do that with these functions: some information is missing.")
    return render(persona, conv, calls, f"{entry.id}:{turn}")


def _left(calls: list[Call], made: Counter[str]) -> list[Call]:
    """`calls` less those already made this turn (each made call strikes one)."""
    made = Counter(made)
    left = []
    for c in calls:
        if made[c.key] > 0:
            made[c.key] -= 1
        else:
            left.append(c)
    return left


def _common_start(plans: list[list[Call]]) -> list[Call]:
    common: list[Call] = []
    for group in zip(*plans, strict=False):
        if len({c.key for c in group}) != 1:
            break
        common.append(group[0])
    return common


def render(persona: Persona, conv: Conversation, calls: list[Call], label: str) -> Answer:
    """Native calls when tools are offered to a native persona; BFCL's text list without
    them; a prose persona's own markup either way."""
    out = [
        OutCall(
            id="call_" + hashlib.sha256(f"{label}:{k}".encode()).hexdigest()[:24],
            name=c.name,
            args=json.loads(json.dumps(c.args)),
            arguments=compact(c.args),
        )
        for k, c in enumerate(calls)
    ]
    if persona.tool_style == "native":
        if conv.tools:
            return Answer(calls=out, finish="tool_calls")
        return Answer(text=python_calls(calls))
    from workbench.sim.answers import render_text_calls  # answers imports the engine's parts

    return Answer(text=render_text_calls(persona.tool_style, out))


def python_calls(calls: list[Call]) -> str:
    """BFCL's prompting-mode answer: `[cd(folder="document"), sort(file_name="a.pdf")]`."""
    return "[" + ", ".join(f"{c.name}({_keywords(c.args)})" for c in calls) + "]"


def _keywords(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_literal(v)}" for k, v in args.items())


def _literal(value: Any) -> str:
    """A Python literal with its strings in double quotes: the run's name detector reads the
    closing quote of `'John Levy'` as part of the name and masks it away with the name, which
    leaves the call unreadable in the history; a double quote it leaves alone."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)
