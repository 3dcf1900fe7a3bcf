"""The error tree: stable codes, one line, and no secret ever; every code declared once."""

import ast
import importlib
import re
from pathlib import Path

import pytest

from workbench import errors
from workbench.errors import (
    CODE_CLASS,
    CODES,
    ERROR_CLASSES,
    RESERVED,
    ConfigError,
    ProviderError,
    StreamInterrupted,
    WorkbenchError,
    excerpt,
    scrub,
)

# Fake keys, assembled at run time so that no key-shaped string sits in the repository.
FAKE_OPENAI = "sk-" + "abcdefghijklmnop1234"
FAKE_GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrs"


def test_scrub_removes_known_secret_and_vendor_key_shapes():
    text = f"bad key {FAKE_OPENAI} and {FAKE_GOOGLE} and mine=s3cr3t!"
    out = scrub(text, ["s3cr3t!"])
    assert FAKE_OPENAI not in out
    assert "AIzaSy" not in out
    assert "s3cr3t!" not in out


def test_provider_error_is_one_line_with_code_and_no_key():
    key = "gsk_live_1234567890abcdef"
    err = ProviderError(
        "401 for key gsk_live_1234567890abcdef",
        kind="auth",
        status_code=401,
        provider="groq",
        model="m",
        body='{"error": {"message": "Invalid API Key gsk_live_1234567890abcdef"}\n\n}',
        secrets=[key],
    )
    assert str(err).startswith("PROVIDER_AUTH: groq:m:")
    assert "\n" not in str(err)
    assert key not in str(err) and key not in err.body and key not in repr(err.details)


def test_excerpt_is_bounded():
    assert len(excerpt("x " * 1000)) <= 301


def test_stream_interrupted_keeps_partial_and_cause():
    cause = ProviderError("reset", kind="network", provider="p", model="m")
    err = StreamInterrupted(cause, "Hello wor")
    assert err.code == "AI_STREAM_INTERRUPTED"
    assert err.partial == "Hello wor" and err.cause is cause
    assert "9 character(s)" in str(err)


def test_config_error_code_overrides_default():
    assert ConfigError("x", code="FLEET_INVALID").code == "FLEET_INVALID"
    assert ConfigError("x").code == "CONFIG_INVALID"


# ------------------------------------------------------------------ the registry of codes
# Every stable code is declared once, in `workbench.errors.CODES`. The scan below reads the
# package's source and finds every code a module raises, declares, defaults to, or compares
# with; the tests fail on a code missing from the registry, on a registry entry nobody uses,
# on a code raised by a class other than the one it is declared under, and when the
# docstring's tree or the docs' errors page drift from the registry.

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
# The simulator imitates vendors: a SimError carries the vendor's own code
# (`model_not_found`, `rate_limit_exceeded`), and its JSON bodies are the vendor's wire
# format. Those codes are OpenAI's, not ours.
VENDOR_CARRIERS = {"SimError"}
VENDOR_BODIES = PACKAGE / "sim"
# A message that starts with a code: "ACTION_UNKNOWN: no tool named …".
_CODE_PREFIX = re.compile(r"^([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+): ")


def _strings(node: ast.AST) -> list[str]:
    """Every string constant inside an expression (`code or "X"`, `"X" if a else "Y"`)."""
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _is_code_attr(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in ("code", "error_code")) or (
        isinstance(node, ast.Name) and node.id in ("code", "error_code")
    )


def scan(source: str, path: Path = PACKAGE / "x.py") -> list[tuple[int, str, str | None]]:
    """(line, code, the class that carries it when the source says so) for every use."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):  # Error(..., code="X") and f(..., error_code="X")
            carrier = _name(node.func)
            if carrier in VENDOR_CARRIERS:
                continue
            for kw in node.keywords:
                if kw.arg in ("code", "error_code"):
                    known = carrier if carrier in ERROR_CLASSES else None
                    found += [(node.lineno, s, known) for s in _strings(kw.value)]
        elif isinstance(node, ast.ClassDef):  # class X(WorkbenchError): code = "X"
            for stmt in node.body:
                target = (
                    stmt.targets[0]
                    if isinstance(stmt, ast.Assign)
                    else getattr(stmt, "target", None)
                )
                if isinstance(target, ast.Name) and target.id == "code" and stmt.value is not None:
                    found += [(stmt.lineno, s, node.name) for s in _strings(stmt.value)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # def f(code="X")
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(
                zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
            )
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
            for arg, default in pairs:
                if arg.arg in ("code", "error_code"):
                    found += [(node.lineno, s, None) for s in _strings(default)]
        elif isinstance(node, ast.Dict) and not path.is_relative_to(VENDOR_BODIES):
            for key, value in zip(node.keys, node.values, strict=True):  # {"code": "X"}
                if isinstance(key, ast.Constant) and key.value == "code":
                    found += [(node.lineno, s, None) for s in _strings(value)]
        elif isinstance(node, ast.Compare):  # exc.code == "X", error.code in ("X", "Y")
            sides = [node.left, *node.comparators]
            if any(_is_code_attr(side) for side in sides):
                found += [(node.lineno, s, None) for side in sides for s in _strings(side)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _CODE_PREFIX.match(node.value)
            if m:
                found.append((node.lineno, m.group(1), None))
    return found


def _sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def _uses() -> list[tuple[str, str, str | None]]:
    """(where, code, carrier) over the whole package, the kind mapping of errors.py included."""
    uses = [
        (f"{path.relative_to(ROOT)}:{line}", code, carrier)
        for path, text in _sources().items()
        for line, code, carrier in scan(text, path)
    ]
    uses += [
        ("workbench/errors.py:_KIND_CODES", c, "ProviderError") for c in errors._KIND_CODES.values()
    ]
    return uses


def test_the_scan_sees_every_form_a_code_takes():
    source = """
class Refused(WorkbenchError):
    code = "A_CLASS_ATTR"
    status: int = 400
class Typed(WorkbenchError):
    code: str = "A_TYPED_ATTR"
def f(x, code="A_DEFAULT", *, error_code="A_KW_DEFAULT"):
    raise ConfigError("m", code="A_KEYWORD")
def g(exc, seen):
    RoutingError("m", code="A_MAYBE" if seen else None)
    emit(error_code="AN_EVENT_CODE")
    if exc.code == "A_COMPARED" or exc.code in ("A_MEMBER", "ANOTHER_MEMBER"):
        return {"code": exc.code or "A_WIRE_CODE"}
    return "A_PREFIXED: with a message"
SimError(404, "x", code="model_not_found")
"""
    got = {(code, carrier) for _, code, carrier in scan(source)}
    assert got == {
        ("A_CLASS_ATTR", "Refused"),
        ("A_TYPED_ATTR", "Typed"),
        ("A_DEFAULT", None),
        ("A_KW_DEFAULT", None),
        ("A_KEYWORD", "ConfigError"),
        ("A_MAYBE", "RoutingError"),
        ("AN_EVENT_CODE", None),
        ("A_COMPARED", None),
        ("A_MEMBER", None),
        ("ANOTHER_MEMBER", None),
        ("A_WIRE_CODE", None),
        ("A_PREFIXED", None),
    }


def test_every_code_a_module_uses_is_declared_in_the_registry():
    undeclared = sorted(f"{where}: {code}" for where, code, _ in _uses() if code not in CODE_CLASS)
    assert not undeclared, (
        "declare these codes in workbench.errors.CODES (with a one-line meaning), "
        "or use a declared one:\n" + "\n".join(undeclared)
    )


def test_every_declared_code_is_used_somewhere_or_reserved():
    used = {code for _, code, _ in _uses()}
    dead = sorted(set(CODE_CLASS) - used - RESERVED)
    assert not dead, f"declared but raised nowhere (remove them, or add them to RESERVED): {dead}"
    assert not (RESERVED & used), "a reserved code is in use: take it out of RESERVED"
    assert RESERVED <= set(CODE_CLASS)


def test_a_code_is_raised_by_the_class_it_is_declared_under():
    wrong = sorted(
        f"{where}: {code} is raised by {carrier}, declared under {CODE_CLASS[code]}"
        for where, code, carrier in _uses()
        if carrier is not None and code in CODE_CLASS and CODE_CLASS[code] != carrier
    )
    assert not wrong, "\n".join(wrong)


def test_no_code_is_declared_twice():
    # A dict literal keeps the last of two equal keys silently: read the source instead.
    module = ast.parse((PACKAGE / "errors.py").read_text(encoding="utf-8"))
    (registry,) = [
        n.value
        for n in module.body
        if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "CODES"
    ]
    assert isinstance(registry, ast.Dict)
    declared = [k.value for group in registry.values for k in group.keys]  # type: ignore[attr-defined]
    assert len(declared) == len(set(declared)), sorted(c for c in declared if declared.count(c) > 1)
    assert all(re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", code) for code in declared)
    assert all(
        meaning and "\n" not in meaning for group in CODES.values() for meaning in group.values()
    )


def _classes() -> dict[str, tuple[str, list[str]]]:
    """Every class defined under workbench/: name → (its module, the names of its bases)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for path, text in _sources().items():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, (module, [_name(b) for b in node.bases]))
    return found


def test_the_registry_names_real_classes_with_their_real_parents():
    assert list(ERROR_CLASSES) == list(CODES), "ERROR_CLASSES and CODES list the same classes"
    classes = _classes()
    for name, (parent, _) in ERROR_CLASSES.items():
        if name == "Exception":  # INTERNAL: whatever is not a WorkbenchError
            assert parent is None
            continue
        cls = getattr(importlib.import_module(classes[name][0]), name)
        if parent is None:
            assert name == "WorkbenchError" or not issubclass(cls, BaseException), name
        else:
            assert cls.__bases__[0].__name__ == parent, (name, cls.__bases__)


def test_every_error_class_of_the_package_is_in_the_registry():
    # A new subclass of one of our errors carries codes: it belongs in the registry's tree.
    ours = {c for c in ERROR_CLASSES if c not in ("Exception", "AskRefusal")}
    missing = sorted(
        name
        for name, (_, bases) in _classes().items()
        if ours.intersection(bases) and name not in ERROR_CLASSES
    )
    assert not missing, f"add these classes to workbench.errors.ERROR_CLASSES: {missing}"


def test_the_docstring_tree_is_the_registry():
    indented = "\n".join(f"    {line}" if line else "" for line in errors.tree().splitlines())
    assert indented in (errors.__doc__ or ""), (
        "the tree in workbench/errors.py's docstring is stale; it should read:\n" + indented
    )


def test_the_errors_page_is_the_registry():
    """docs/errors.md is generated from the registry when the site is built: its marker is
    replaced by `table()` and `tree()`, so the page cannot drift from the codes."""
    from tests.doc_imports import site_hooks

    page = site_hooks().render((ROOT / "docs" / "errors.md").read_text(encoding="utf-8"))
    assert errors.table() in page, "docs/errors.md lost its generated table of codes"
    assert errors.tree() in page, "docs/errors.md lost its generated tree of classes"


def test_the_web_docstring_lists_exactly_the_web_codes():
    import workbench.web

    web_classes = {"WebError", "WebFetchError", "WebFetchBlocked", "WebSearchError"}
    declared = {code for code, cls in CODE_CLASS.items() if cls in web_classes}
    listed = set(re.findall(r"\bWEB_[A-Z_]+\b", workbench.web.__doc__ or ""))
    assert listed == declared


def test_an_undeclared_code_is_not_refused_at_run_time():
    # The registry is the package's promise, checked by the tests above; an app built on the
    # package may raise codes of its own (AskLimit(code="CHAT_TOO_FAST"), CHAT_INVALID).
    err = WorkbenchError("slow down", code="CHAT_TOO_FAST", status=429)
    assert err.code == "CHAT_TOO_FAST" and "CHAT_TOO_FAST" not in CODE_CLASS


@pytest.mark.parametrize("code", ["ACTION_INVALID", "COMPARE_INVALID", "WIDGETS_UNAVAILABLE"])
def test_a_users_mistake_is_a_config_error(code):
    # Same kind of mistake, same class: the CLI exits 2 for every ConfigError.
    assert CODE_CLASS[code] == "ConfigError"
