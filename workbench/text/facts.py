"""Facts: the records an answer may draw on and cite (ai-kit's "facts"), pure.

A fact is a record with a declared field set (`FACT_KINDS`), built with `make_fact`,
numbered `F1…Fn` by `assign_fact_ids` and shown to the model by `render_facts`: every
declared field is shown, an empty one as `<not recorded>`, because a model told
"affiliation: <not recorded>" is given a specific negative, far harder to overwrite than the
silence of a field it was never shown.

The records live here, in the library, because the library builds them (`workbench.web`
turns search hits and read pages into facts); checking an answer against them is the
workbench's business (`workbench.eval.scoring.grounding`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

NOT_RECORDED = "<not recorded>"


@dataclass(frozen=True, slots=True)
class Fact:
    """One record the answer may draw on.

    `id` is the citation handle (`F3`), empty until `assign_fact_ids`; `fields` maps each
    declared field to its value, None where nothing is stored; `similarity` is set only for
    a fact found by similarity search — one fetched by a filter is not ranked, it is true."""

    id: str
    kind: str
    subject: str
    fields: dict[str, str | None] = field(default_factory=dict)
    source: str = ""
    similarity: float | None = None


# What could be known about each kind of record. Fields nobody stores (a person's
# affiliation, role) are declared on purpose: those are what models invent, and naming them
# as unrecorded is the whole defence. Do not prune the empty ones.
FACT_KINDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "person": (
            "name",
            "affiliation",
            "role",
            "how_we_met",
            "last_interaction",
            "notes",
            "channels",
        ),
        "project": ("name", "status", "stack", "description", "latest_dev_log", "repo"),
        "goal": ("title", "project", "progress", "target_date", "last_updated"),
        "habit": ("title", "frequency", "current_streak", "last_checked"),
        "commitment": ("title", "due", "counterparty", "status"),
        "event": ("name", "type", "deadline", "url", "status"),
        "crew_member": (
            "name",
            "role",
            "skills",
            "engagement",
            "rate",
            "availability",
            "open_assignments",
        ),
        "assignment": ("title", "assignee", "status", "due", "fee", "why"),
        "document": ("title", "source", "excerpt"),
        "pending_action": ("title", "type", "reasoning", "proposed_on", "id"),
        "web_result": ("title", "url", "published", "snippet", "engine"),
        "web_page": ("title", "url", "retrieved", "truncated"),
    }
)


def declared_fields(kind: str, fallback: Iterable[str] = ()) -> tuple[str, ...]:
    """The kind's declared fields; an unknown kind has only what its caller brought."""
    declared = FACT_KINDS.get(kind)
    return declared if declared is not None else tuple(fallback)


def make_fact(
    kind: str,
    subject: str,
    source: str,
    values: Mapping[str, str | None] | None = None,
    similarity: float | None = None,
) -> Fact:
    """A fact with every declared field present, blank or missing ones None, id "".

    Undeclared keys are dropped, not passed through: a field worth showing the model is
    worth declaring, or `FACT_KINDS` stops describing what the model sees."""
    given = dict(values or {})
    fields: dict[str, str | None] = {}
    for key in declared_fields(kind, given):
        raw = given.get(key)
        value = raw.strip() if isinstance(raw, str) else raw
        fields[key] = str(value) if value else None
    return Fact(
        id="", kind=kind, subject=subject, fields=fields, source=source, similarity=similarity
    )


def assign_fact_ids(facts: Iterable[Fact]) -> list[Fact]:
    """Copies numbered F1…Fn. Call once, on the final set: the ids are the legal citations."""
    return [replace(f, id=f"F{i}", fields=dict(f.fields)) for i, f in enumerate(facts, 1)]


def fact_ids(facts: Iterable[Fact]) -> set[str]:
    """The only citations an answer over these facts may use."""
    return {f.id for f in facts}


def render_facts(facts: Iterable[Fact]) -> str:
    """One block per fact, one line per field, absence written out as `<not recorded>`.

    A field list invites lookup where a prose blob invites summarising, and summarising is
    where small models invent (the seed's observation with 8B models)."""
    blocks = []
    for f in facts:
        head = f"[{f.id}] {f.kind} — {f.subject}  ({f.source})"
        blocks.append(
            "\n".join([head, *(f"     {k}: {v or NOT_RECORDED}" for k, v in f.fields.items())])
        )
    return "\n\n".join(blocks)


def unrecorded_fields(facts: Iterable[Fact]) -> list[str]:
    """`kind.field` for every field stored as None, sorted, once each: the contract names
    this turn's concrete gaps rather than a standing rule the model may ignore."""
    return sorted({f"{f.kind}.{k}" for f in facts for k, v in f.fields.items() if v is None})


__all__ = [
    "FACT_KINDS",
    "NOT_RECORDED",
    "Fact",
    "assign_fact_ids",
    "declared_fields",
    "fact_ids",
    "make_fact",
    "render_facts",
    "unrecorded_fields",
]
