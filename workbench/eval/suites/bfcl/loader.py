"""BFCL's single-turn categories as prompt-set items, sent the way BFCL's handlers send them.

Each question becomes an `Item` whose `expect.bfcl` holds BFCL's own function docs and
possible answers (what the grader compares against, untouched) and whose tools are the
docs as BFCL's OpenAI function-calling handler sends them:

- a language hint ends every description ("Note that the provided function is in Python 3
  syntax."); Java and JavaScript parameters become strings of source text, their real type
  said in the description;
- BFCL's types become JSON Schema: `dict` → `object`, `float` → `number` (with
  `"format": "float"` and a sentence saying so), `tuple` → `array`, `any` → `string`, an
  unknown or missing type → `string`;
- dotted names (`math.factorial`) go out as `math_factorial`: vendors accept only
  `[a-zA-Z0-9_-]`; the grader maps them back.

For prompting mode the item also carries BFCL's default system prompt (`tools_in_prose`):
the same hinted docs as JSON, and the instruction to answer `[func(a=1)]`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.eval.dataset.prompt_set import Dataset, Expect, Item
from workbench.eval.suites.bfcl.case import (
    AGENTIC_CATEGORIES,
    ALL_CATEGORIES,
    MEMORY_CATEGORIES,
    MULTI_TURN_CATEGORIES,
    BfclCase,
    language_of,
)
from workbench.eval.suites.bfcl.prompt import prompt_mode_system
from workbench.eval.suites.bfcl.source import DATA_VERSION, PREFIX, VERSION, BfclSource, open_source
from workbench.types import ToolsInProse

# BFCL's type names → JSON Schema types (what its OpenAI handler sends).
OPENAPI_TYPES: dict[str, str] = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number",
    "char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
    "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}  # fmt: skip
_HINTS = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
_LANGUAGE_NAME = {"java": "Java", "javascript": "JavaScript"}
TEMPERATURE = 0.001  # what BFCL generates at (its default), so scores compare


def load_bfcl(
    category: str, *, source: str | Path | BfclSource | None = None, limit: int | None = None
) -> list[Item]:
    """The questions of one single-turn BFCL category (the first `limit`), as items."""
    return list(bfcl_dataset(category, source=source, limit=limit).items)


def bfcl_dataset(
    categories: str | list[str],
    *,
    source: str | Path | BfclSource | None = None,
    limit: int | None = None,
) -> Dataset:
    """One or several categories (`"simple_python,multiple"`) as a `Dataset` named
    `bfcl:<categories>`; `limit` applies per category. Its hash covers the files read and
    the limit, so resuming a run checks it is the same questions."""
    names = _categories(categories)
    if limit is not None and limit < 1:
        raise ConfigError("--limit must be at least 1", code="RUN_INVALID")
    found = source if isinstance(source, BfclSource) else open_source(source)
    digest = hashlib.sha256(f"limit={limit}".encode())
    items: list[Item] = []
    # Live questions share their docs by the dozen; the prompt's indented listing is written by
    # Python's slow JSON encoder, so each is written once per load, keyed by its compact JSON.
    prompts: dict[str, str] = {}
    docs: dict[str, list] = {}  # the multi-turn backends' function docs, read once
    for category in names:
        if category in MULTI_TURN_CATEGORIES:
            from workbench.eval.suites.bfcl.entries import multi_turn_items

            items += multi_turn_items(found, category, digest, limit, docs)
            continue
        if category in MEMORY_CATEGORIES:
            from workbench.eval.suites.bfcl.memory import memory_items

            items += memory_items(found, category, digest, limit, docs)
            continue
        if category in AGENTIC_CATEGORIES:
            from workbench.eval.suites.bfcl.agentic import agentic_items

            items += agentic_items(found, category, digest, limit, docs)
            continue
        questions, answers = _read_category(found, category, digest)
        items += [_item(category, q, answers, prompts) for q in questions[:limit]]
    return Dataset(
        name="bfcl:" + ",".join(names),
        path=Path(found.where),
        items=tuple(items),
        sha256=digest.hexdigest(),
        limit=limit,
    )


def category_sizes(source: str | Path | BfclSource | None = None) -> dict[str, int]:
    """How many questions each category holds (what BFCL weighs a category left out of a run
    by). Memory categories share one file; web search's two share another."""
    found = source if isinstance(source, BfclSource) else open_source(source)
    sizes = {}
    for category in ALL_CATEGORIES:
        file = category
        if category in AGENTIC_CATEGORIES:
            file = category.split("_")[0] + ("_search" if category.startswith("web") else "")
        data = found.read(f"{PREFIX}{file}.json")
        if data is not None:
            sizes[category] = sum(1 for line in data.splitlines() if line.strip())
    return sizes


def _copied(value: Any) -> Any:
    """A deep copy of JSON data, through JSON: several times faster than `copy.deepcopy`,
    which loading every category does ~15,000 times."""
    return json.loads(json.dumps(value))


def _categories(categories: str | list[str]) -> list[str]:
    names = categories.split(",") if isinstance(categories, str) else list(categories)
    names = [n.strip() for n in names if n.strip()]
    for name in names:
        if name not in ALL_CATEGORIES:
            raise ConfigError(
                f"unknown BFCL category {name!r}: the categories are " + ", ".join(ALL_CATEGORIES),
                code="BFCL_CATEGORY_UNKNOWN",
            )
    if not names:
        raise ConfigError("no BFCL category named", code="BFCL_CATEGORY_UNKNOWN")
    return list(dict.fromkeys(names))


# ------------------------------------------------------------------ files
def read_records(
    found: BfclSource, name: str, digest: Any, keys: tuple[str, ...]
) -> list[dict[str, Any]]:
    """One of BFCL's JSON-lines files, each record checked for `keys`, its bytes hashed
    into `digest` (a resumed run checks it reads the same questions)."""
    data = found.read(name)
    if data is None:
        raise _missing_file(found, name)
    digest.update(data)
    return _records(found, name, data, keys)


def _read_category(
    found: BfclSource, category: str, digest: Any
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    name = f"{PREFIX}{category}.json"
    questions = read_records(found, name, digest, ("id", "question", "function"))
    for line, q in enumerate(questions, 1):
        _check_question(found.shown(name), line, q)
    answers: dict[str, dict[str, Any]] = {}
    if "relevance" not in category:  # (ir)relevance has no possible answers: any call is wrong
        answer_name = f"possible_answer/{name}"
        for a in read_records(found, answer_name, digest, ("id", "ground_truth")):
            answers[a["id"]] = a
        for q in questions:
            if q["id"] not in answers:
                raise ConfigError(
                    f"{found.shown(answer_name)}: no possible answer for id {q['id']!r}",
                    code="BFCL_ANSWER_MISSING",
                )
    return questions, answers


def _missing_file(found: BfclSource, name: str) -> ConfigError:
    """A missing file, told apart from a source of another BFCL version (`BFCL_v3_...`)."""
    versions = sorted({m.group(1) for n in found.names() if (m := re.search(r"BFCL_(v\d+)_", n))})
    if versions and DATA_VERSION not in versions:
        return ConfigError(
            f"{found.shown(name)}: missing; this source holds BFCL {', '.join(versions)} files "
            f"and this workbench reads BFCL {DATA_VERSION} (bfcl-eval {VERSION})",
            code="BFCL_VERSION",
        )
    return ConfigError(f"{found.shown(name)}: missing from the source", code="BFCL_FILE_INVALID")


def _records(found: BfclSource, name: str, data: bytes, keys: tuple[str, ...]) -> list[dict]:
    out = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{found.shown(name)}: not UTF-8 text", code="BFCL_FILE_INVALID"
        ) from None
    for line, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{found.shown(name)}:{line}: not JSON ({exc.msg})", code="BFCL_FILE_INVALID"
            ) from None
        missing = [k for k in keys if not isinstance(record, dict) or k not in record]
        if missing:
            raise ConfigError(
                f"{found.shown(name)}:{line}: not a BFCL record (no {', '.join(missing)})",
                code="BFCL_FILE_INVALID",
            )
        out.append(record)
    return out


def _check_question(shown: str, line: int, q: dict[str, Any]) -> None:
    """Refuse a question this grader cannot send or grade, naming the file, line and id."""

    def bad(why: str) -> ConfigError:
        return ConfigError(f"{shown}:{line}: id {q.get('id')!r}: {why}", code="BFCL_FILE_INVALID")

    turns = q["question"]
    if not isinstance(turns, list) or len(turns) != 1 or not isinstance(turns[0], list):
        raise bad("`question` must hold exactly one turn (a list of messages): single-turn only")
    for m in turns[0]:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
            raise bad("a message needs a role of system, user or assistant")
        if not isinstance(m.get("content"), str):
            raise bad("a message's content must be text")
    functions = q["function"]
    if not isinstance(functions, list):  # empty is fine: an irrelevance question may offer none
        raise bad("`function` must be a list of function docs")
    for f in functions:
        if (
            not isinstance(f, dict)
            or not isinstance(f.get("name"), str)
            or not isinstance(f.get("parameters"), dict)
            or not isinstance(f["parameters"].get("properties", {}), dict)
        ):
            raise bad("a function doc needs a name and parameters with properties")


# ------------------------------------------------------------------ one item
def _item(
    category: str, q: dict[str, Any], answers: dict[str, dict[str, Any]], prompts: dict[str, str]
) -> Item:
    functions = q["function"]
    hinted = hinted_docs(functions, category)
    tools = [openai_tool(f) for f in hinted]
    sent = {t["function"]["name"]: f["name"] for t, f in zip(tools, functions, strict=True)}
    case = BfclCase(
        id=q["id"],
        category=category,
        functions=tuple(_copied(functions)),
        ground_truth=tuple(answers[q["id"]]["ground_truth"]) if q["id"] in answers else (),
        sent_names={k: v for k, v in sent.items() if k != v},
    )
    return Item(
        id=q["id"],
        messages=tuple(_copied(q["question"][0])),
        tools=tuple(tools),
        expect=Expect(bfcl=case),
        tags=("bfcl", category),
        category=category,
        temperature=TEMPERATURE,
        tools_in_prose=ToolsInProse(
            prompt=_prompt_for(hinted, prompts), names=tuple(f["name"] for f in functions)
        ),
    )


def _prompt_for(hinted: list[dict[str, Any]], prompts: dict[str, str]) -> str:
    key = json.dumps(hinted, separators=(",", ":"))
    if key not in prompts:
        prompts[key] = prompt_mode_system(hinted)
    return prompts[key]


def hinted_docs(functions: list[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """BFCL's docs as its handlers see them: the language hint on every description, and a
    Java or JavaScript parameter turned into a string whose description names its type."""
    language = language_of(category)
    docs = _copied(functions)
    for doc in docs:
        doc["description"] = str(doc.get("description", "")) + _HINTS[language]
        if language == "python":
            continue
        lang = _LANGUAGE_NAME[language]
        for spec in (doc["parameters"].get("properties") or {}).values():
            kind = spec.get("type")
            spec.setdefault("description", "")
            if kind == "any":
                spec["description"] += (
                    f" This parameter can be of any type of {lang} object in string representation."
                )
            else:
                spec["description"] += (
                    f" This is {lang} {kind} type parameter in string representation."
                )
            listed = ("ArrayList", "Array") if language == "java" else ("array",)
            if kind in listed and isinstance(spec.get("items"), dict):
                spec["description"] += (
                    f" The list elements are of type {spec['items'].get('type')}; "
                    "they are not in string representation."
                )
                del spec["items"]
            if language == "javascript" and kind == "dict" and "properties" in spec:
                spec["description"] += (
                    " The dictionary entries have the following schema; they are not in "
                    f"string representation. {json.dumps(spec['properties'])}"
                )
                del spec["properties"]
            spec["type"] = "string"
    return docs


def openai_tool(doc: dict[str, Any]) -> dict[str, Any]:
    """One hinted doc as an OpenAI function tool, as BFCL's function-calling handler builds it."""
    function = _copied(doc)
    function["name"] = function["name"].replace(".", "_")
    parameters = function["parameters"]
    parameters["type"] = "object"
    parameters["properties"] = _schema_properties(parameters.get("properties") or {})
    return {"type": "function", "function": function}


def _schema_properties(properties: dict[str, Any]) -> dict[str, Any]:
    for spec in properties.values():
        kind = spec.get("type")
        if kind == "float":
            spec["format"] = "float"
            spec["description"] = str(spec.get("description", "")) + " This is a float type value."
        spec["type"] = OPENAPI_TYPES.get(kind, "string") if isinstance(kind, str) else "string"
        if spec["type"] not in ("array", "object"):
            continue
        if isinstance(spec.get("properties"), dict):
            spec["properties"] = _schema_properties(spec["properties"])
        elif isinstance(spec.get("items"), dict):
            items = spec["items"]
            items["type"] = OPENAPI_TYPES.get(str(items.get("type")), "string")
            inner = items.get("items")
            if items["type"] == "array" and isinstance(inner, dict):
                inner["type"] = OPENAPI_TYPES.get(str(inner.get("type")), "string")
            elif items["type"] == "object" and isinstance(items.get("properties"), dict):
                items["properties"] = _schema_properties(items["properties"])
    return properties
