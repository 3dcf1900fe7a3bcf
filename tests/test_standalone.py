"""The repository stands alone: no file cites a section of a document its reader does not have.

The design documents the package was written from (the spec, and the notes on the seed
package ai-kit) are not in the repository, so a section number of either tells a reader
nothing: each rule is stated where it applies. Naming ai-kit is fine; citing a section is not.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLACES = (
    "workbench",
    "tests",
    "benchmarks",
    "examples",
    "notebooks",
    "scripts",
    "docs",
    "datasets",
)
# Caches and build output are not the repository's files (a .pyc holds old docstrings).
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
# A document's name in capitals (optionally with ".md" and "§"), then a section number.
CITATION = re.compile(r"\b(?:SPEC|AI-KIT)(?:\.md)?\s+(?:§\s*)?\d")


def _files() -> list[Path]:
    """The repository's files: tracked, or new and not ignored (git's own view, so a virtualenv
    or a cache left in a folder is not read); every file under the places without git."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        listed = None
    if listed is not None:
        names = [n for n in listed.split("\0") if n]
        wanted = [n for n in names if n == "README.md" or n.split("/", 1)[0] in PLACES]
        return [ROOT / n for n in sorted(wanted) if (ROOT / n).is_file()]
    found = [ROOT / "README.md"]
    for place in PLACES:
        base = ROOT / place
        if base.is_dir():
            found += [
                p
                for p in sorted(base.rglob("*"))
                if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
            ]
    return found


def test_no_file_cites_a_section_of_spec_or_ai_kit():
    cited = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # an image or a binary: it cites nothing
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if CITATION.search(line):
                cited.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not cited, "state the rule instead of citing its section:\n" + "\n".join(cited)
