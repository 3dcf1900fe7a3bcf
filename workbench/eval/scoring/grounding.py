"""Is an answer grounded? A port of ai-kit's `verifyAnswer` ("verify"), pure.

Deterministic on purpose (the seed's reason): fabrication is overwhelmingly nominal —
invented organisations, people, numbers, file paths — and those are mechanically
recognisable; a check that needs a second model call is one that gets switched off exactly
where it is needed. Four checks, each a `Violation` kind:

- unknown-citation: `[F#]`/`[D#]` (fullwidth brackets too) that is not a legal id;
- novel-proper-noun: a capitalised word, acronym or name run absent from the evidence;
- novel-number: a phone number, year, percentage or count of 4+ digits absent from it;
- novel-path: a file path absent from it.

The evidence is what the model was legitimately given: the user's message, extra evidence
(tool results, other turns) and each fact's subject, kind, source and field values.
The grader (`grading.py`) turns a dataset item's `sources` into facts with
`facts_from_sources`.

The facts themselves (`Fact`, `FACT_KINDS`, `make_fact`, `render_facts`, ...) live in the
library, `workbench.text.facts`, which builds them (the web's search hits and pages); they
are re-exported here so that `workbench.eval.scoring.grounding.Fact` still names them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from workbench.text.facts import (
    FACT_KINDS,
    NOT_RECORDED,
    Fact,
    assign_fact_ids,
    declared_fields,
    fact_ids,
    make_fact,
    render_facts,
    unrecorded_fields,
)

VerifyMode = Literal["closed-world", "entity-attribution"]
ViolationKind = Literal["unknown-citation", "novel-proper-noun", "novel-number", "novel-path"]


@dataclass(frozen=True, slots=True)
class Violation:
    kind: ViolationKind
    text: str  # the offending text, exactly as written
    detail: str  # why, phrased for a repair prompt the model will read


@dataclass(frozen=True, slots=True)
class Verification:
    ok: bool
    violations: tuple[Violation, ...] = ()

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{v.kind}: {v.text}" for v in self.violations)


# Capitalised for reasons other than being a proper noun, or the seed system's own nouns.
# Every entry is a hole in the check: the seed's list, unchanged.
COMMON = frozenset(
    """the a an and or but if then so because not this that these those it its your you i we
    there here what which who when where why how no yes none nothing today tomorrow yesterday
    now next last first one two three primary focus task tasks outreach note notes summary
    status update monday tuesday wednesday thursday friday saturday sunday january february
    march april may june july august september october november december loki cat fleetcrown
    orangecat recorded""".split()
)
# Lower-case words that sit inside a name ("University of Zurich", "Bank für Handel").
CONNECTORS = frozenset(
    [
        "of",
        "the",
        "for",
        "and",
        "de",
        "der",
        "des",
        "van",
        "von",
        "du",
        "da",
        "di",
        "für",
        "el",
        "al",
    ]
)

_OPEN, _CLOSE = "【〔［", "】〕］"
_BRACKETS = str.maketrans({**dict.fromkeys(_OPEN, "["), **dict.fromkeys(_CLOSE, "]")})
_CITATION = re.compile(r"\[[FD]\d+\]")
_CODE = re.compile(r"```.*?```|`[^`]*`", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?:\n])\s+")
_TOKEN = re.compile(r"[^\W_](?:[^\W_]|[&.'’-])*")  # letters and digits, with & . ' ’ -
_TRAILING = re.compile(r"[.'’-]+$")
_NUMBER = re.compile(r"\+?\d[\d\s().-]{3,}\d|\b\d{2,}%?\b")
_PATHS = (
    re.compile(r"""(?:^|[\s("'`])(/[A-Za-z0-9_.\-/]{4,})"""),  # absolute
    re.compile(r"""(?:^|[\s("'`])([A-Za-z0-9_.-]+/[A-Za-z0-9_.\-/]*[A-Za-z0-9_-]\.[a-z]{2,5})"""),
    re.compile(r"""(?:^|[\s("'`])([A-Za-z0-9_-]+\.(?:json|env|ya?ml|sql|toml|ini|conf|log))\b"""),
)


def norm(text: str) -> str:
    """Lower-case; every run outside [a-z0-9+] becomes one space; trimmed."""
    return re.sub(r"[^a-z0-9+]+", " ", text.lower()).strip()


def _fact(f: Fact | Mapping[str, Any]) -> Fact:
    if isinstance(f, Fact):
        return f
    return Fact(
        id=str(f.get("id") or ""),
        kind=str(f.get("kind") or ""),
        subject=str(f.get("subject") or ""),
        fields=dict(f.get("fields") or {}),
        source=str(f.get("source") or ""),
    )


def facts_from_sources(sources: Iterable[Mapping[str, Any]]) -> list[Fact]:
    """A dataset item's sources (`{"id", "text", "url"?, "title"?}`) as document facts."""
    return [
        Fact(
            id=str(s["id"]),
            kind="document",
            subject=str(s.get("title") or s["id"]),
            fields={"excerpt": s.get("text"), "url": s.get("url")},
            source=str(s.get("url") or "dataset"),
        )
        for s in sources
    ]


def _evidence(facts: Sequence[Fact], user_message: str, extra: Iterable[str]) -> str:
    parts = [user_message, *extra]
    for f in facts:
        parts += [f.subject, f.kind, f.source]
        parts += [v for v in f.fields.values() if v]
    return norm(" ".join(parts))


def _sentences(text: str) -> list[str]:
    return _SENTENCE_END.split(text)


def _flush(run: list[str], out: list[str]) -> None:
    """End a run: trailing connectors dropped ("University of"), kept when 2+ words."""
    while run and run[-1].lower() in CONNECTORS:
        run.pop()
    if len(run) > 1:
        out.append(" ".join(run))
    run.clear()


def proper_noun_runs(text: str) -> list[str]:
    """Acronyms, capitalised words (not sentence-initial) and the runs they form.

    Both a run and its tokens are emitted: the run catches a composite invention
    ("University of Liechtenstein"), the tokens an invented acronym beside a real name."""
    out: list[str] = []
    prose = _CODE.sub(" ", text).replace("|", "\n")  # a table cell is an utterance boundary
    for sentence in _sentences(prose):
        run: list[str] = []
        for i, token in enumerate(_TOKEN.findall(sentence)):
            bare = _TRAILING.sub("", token)
            acronym = len(bare) >= 2 and bare.isalpha() and bare.isupper()
            capitalised = len(bare) >= 2 and bare[0].isupper() and bare[1].islower()
            if acronym or (capitalised and i > 0):
                run.append(bare)
                out.append(bare)  # individually checkable
            elif bare.lower() in CONNECTORS and run:
                run.append(bare)  # a connector only continues a run already started
            else:
                _flush(run, out)
        _flush(run, out)
    return out


def _path_claims(text: str) -> list[str]:
    found: dict[str, None] = {}
    for pattern in _PATHS:
        for m in pattern.finditer(text):
            found.setdefault(m.group(1), None)
    return list(found)


def verify_answer(
    answer: str,
    facts: Sequence[Fact | Mapping[str, Any]],
    user_message: str,
    extra_evidence: Iterable[str] = (),
    mode: VerifyMode = "closed-world",
    subjects: Sequence[str] | None = None,
    extra_citation_ids: Iterable[str] = (),
) -> Verification:
    """Claims in `answer` that the facts, the user's message and `extra_evidence` do not
    support. `entity-attribution` checks names only in sentences about a known subject."""
    known = [_fact(f) for f in facts]
    subjects = [f.subject for f in known] if subjects is None else list(subjects)
    evidence = _evidence(known, user_message, extra_evidence)
    evidence_digits = re.sub(r"\D", "", evidence)
    legal = {f.id.upper() for f in known} | {i.upper() for i in extra_citation_ids}
    violations: list[Violation] = []

    # 1. A citation that resolves to nothing invents its own proof. Fullwidth brackets are
    #    mapped one for one, so the reported text is the model's own.
    mapped = answer.translate(_BRACKETS)
    for m in _CITATION.finditer(mapped):
        if m.group(0)[1:-1].upper() not in legal:
            cite = answer[m.start() : m.end()]
            violations.append(
                Violation(
                    "unknown-citation",
                    cite,
                    f"{cite} is not a record in this turn's context. Cite only ids that were "
                    "provided, or say there is no record.",
                )
            )

    # 2. Names must be traceable.
    scope = answer
    if mode == "entity-attribution":
        wanted = [n for n in (norm(s) for s in subjects) if len(n) > 2]
        scope = " ".join(s for s in _sentences(answer) if any(n in norm(s) for n in wanted))
    seen: set[str] = set()
    for run in proper_noun_runs(scope):
        n = norm(run)
        if not n or n in seen:
            continue
        seen.add(n)
        words = n.split(" ")
        if len(words) == 1 and (words[0] in COMMON or len(words[0]) < 2):
            continue
        if all(w in COMMON for w in words) or n in evidence:
            continue
        if len(words) > 1 and all(w in COMMON or w in evidence for w in words):
            continue  # a rephrasing of attested words, not a new entity
        violations.append(
            Violation(
                "novel-proper-noun",
                run,
                f'"{run}" does not appear in any record or in the operator\'s message. If it is '
                "an organisation, role, or place you associated with someone, the relevant "
                f"field is {NOT_RECORDED} — remove the claim.",
            )
        )

    # 3. Numbers: specific digits read as authoritative precisely because they are specific.
    for m in _NUMBER.finditer(_CODE.sub(" ", answer)):
        num = m.group(0).strip()
        n = norm(num)
        if len(n) < 2 or n in evidence:
            continue
        digits = re.sub(r"\D", "", num)
        if len(digits) < 4 or digits in evidence_digits:
            continue  # small counts ("3 tasks") are rhetorical
        violations.append(
            Violation(
                "novel-number",
                num,
                f'The number "{num}" is not in any record. Do not state contact details, '
                "dates, or metrics that were not provided.",
            )
        )

    # 4. Paths: naming a file implies the model read it.
    for p in _path_claims(answer):
        if norm(p) in evidence:
            continue
        violations.append(
            Violation(
                "novel-path",
                p,
                f'The path "{p}" is not in any record. Do not state file locations you were '
                "not given.",
            )
        )
    return Verification(ok=not violations, violations=tuple(violations))


def build_repair_prompt(violations: Iterable[Violation], no_basis_phrase: str) -> str:
    """A rewrite instruction listing each violation's detail."""
    return "\n".join(
        [
            "Your previous answer contained claims not supported by the records. Rewrite it.",
            "",
            *(f"- {v.detail}" for v in violations),
            "",
            "Remove every unsupported claim. Where removing one empties a requested item, "
            f'write "{no_basis_phrase}" for that item instead of substituting something else. '
            "Keep everything that was supported, unchanged.",
        ]
    )


__all__ = [
    "FACT_KINDS",
    "NOT_RECORDED",
    "Fact",
    "Verification",
    "Violation",
    "assign_fact_ids",
    "build_repair_prompt",
    "declared_fields",
    "fact_ids",
    "facts_from_sources",
    "make_fact",
    "norm",
    "proper_noun_runs",
    "render_facts",
    "unrecorded_fields",
    "verify_answer",
]
