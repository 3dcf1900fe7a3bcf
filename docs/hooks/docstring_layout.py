"""A griffe extension (mkdocs.yml, mkdocstrings' `extensions:`): a docstring paragraph laid out
in columns is shown as it is written.

Our docstrings are written for `help()` and a reader of the source: a package's docstring lists
its modules in two aligned columns. Read as Markdown, those columns run together into one
paragraph; kept as a preformatted block, they read on the site as they do in the file.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# A gap of three spaces or more between two words: text aligned in columns, not prose.
_COLUMNS = re.compile(r"\S {3,}\S")


def laid_out(text: str) -> str:
    """`text` with each paragraph that is laid out in columns fenced as preformatted text."""
    paragraphs = re.split(r"\n\s*\n", text)
    kept = []
    for paragraph in paragraphs:
        lines = paragraph.splitlines()
        aligned = any(_COLUMNS.search(line.strip()) for line in lines)
        indented = lines and lines[0].startswith("    ")  # already a code block
        if aligned and not indented and "```" not in paragraph:
            paragraph = "```text\n" + paragraph + "\n```"
        kept.append(paragraph)
    return "\n\n".join(kept)


class ColumnLayout(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = laid_out(obj.docstring.value)
