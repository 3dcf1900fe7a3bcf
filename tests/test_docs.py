"""The documentation: every name a page imports exists, the generated pages are generated from
the code they describe, and the site builds with `mkdocs build --strict`.

A page that shows `from workbench.eval.run.runner import run_prompt_set` after the function
moved would teach a newcomer an import that fails; the generated CLI reference and error
codes would drift the first time a flag or a code is added by hand.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from tests.doc_imports import DOCS, README, ROOT, doc_pages, python_imports, site_hooks
from workbench import errors
from workbench.cli.verbs import build_parser


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_workbench_import_on_a_page_resolves(page):
    missing = [
        f"from {module} import {name}"
        for module, name in python_imports(page)
        if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []


def test_the_pages_show_real_imports():
    """The checks above read something: the README keeps a few examples, the site many."""
    assert len(python_imports(README)) >= 5, "the README's code examples were not found"
    assert sum(len(python_imports(p)) for p in doc_pages()) >= 20


def _commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += [sub, *_commands(sub)]
    return found


def test_the_cli_reference_is_generated_from_the_parser():
    page = site_hooks().render((DOCS / "cli.md").read_text(encoding="utf-8"))
    assert "<!-- generated" not in page
    parser = build_parser()
    commands = _commands(parser)
    assert len(commands) >= 14
    for sub in commands:
        assert f"## `{sub.prog}`" in page, f"{sub.prog} is missing from the CLI reference"
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in page or f", {flag}" in page, f"{sub.prog} {flag}"


def test_the_cli_reference_follows_a_new_flag():
    """It walks the parser it is given: a flag added in code is on the page."""
    parser = build_parser()
    run = next(sub for sub in _commands(parser) if sub.prog == "workbench run")
    run.add_argument("--brand-new-flag", metavar="X", help="only in this test")
    assert "`--brand-new-flag X` |  | only in this test |" in site_hooks().cli_reference(parser)


def test_the_errors_page_holds_every_code():
    page = site_hooks().render((DOCS / "errors.md").read_text(encoding="utf-8"))
    assert "<!-- generated" not in page
    missing = [code for code in errors.CODE_CLASS if f"| `{code}` |" not in page]
    assert missing == []


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="the `docs` extra (mkdocs, mkdocs-material, mkdocstrings) is not installed",
)
def test_the_site_builds_strictly(tmp_path):
    """What scripts/test runs after mypy: a broken link, a missing page in the nav or a
    docstring griffe cannot read fails the build."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "workbench run" in cli and "--durability" in cli
    assert "STORE_LOCKED" in (site / "errors" / "index.html").read_text(encoding="utf-8")
    assert (site / "api" / "eval" / "index.html").is_file()


def test_a_docstring_laid_out_in_columns_stays_laid_out():
    """The site's griffe extension fences aligned columns and leaves prose to Markdown."""
    layout = site_hooks("docstring_layout")
    text = "Why it is so.\n\nrun/     `run_prompt_set`\nstore/   `Store`\n\nA closing word."
    assert layout.laid_out(text) == (
        "Why it is so.\n\n```text\nrun/     `run_prompt_set`\nstore/   `Store`\n```\n\nA closing word."
    )
