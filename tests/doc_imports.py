"""The `from workbench... import name` lines of the README and the docs' Markdown pages.

One reader, shared by tests/test_exports.py (a name shown from a package is public) and
tests/test_docs.py (every name shown resolves), so the two checks read the same lines.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
_FROM_IMPORT = re.compile(r"^\s*from (workbench[\w.]*) import (\([^)]*\)|[^\n]*)", re.M)


def doc_pages() -> list[Path]:
    """The README and every Markdown page of the site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def python_imports(path: Path) -> list[tuple[str, str]]:
    """Every `from workbench... import name` in a page's python blocks, as (module, name)."""
    found = []
    for block in _FENCE.findall(path.read_text(encoding="utf-8")):
        for module, names in _FROM_IMPORT.findall(block):
            names = re.sub(r"#[^\n]*", "", names).strip("()")
            for name in names.split(","):
                name = name.split(" as ")[0].strip()
                if name:
                    found.append((module, name))
    return found


def site_hooks(name: str = "generated"):
    """A module of docs/hooks/, the site's build code (not a package module): by default
    `generated`, the mkdocs hook that writes the generated pages."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"docs_hooks_{name}", DOCS / "hooks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
