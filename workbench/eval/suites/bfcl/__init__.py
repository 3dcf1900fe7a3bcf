"""BFCL — the Berkeley Function Calling Leaderboard — run and graded as its authors grade it.

source   `fetch_bfcl`, `open_source`: the `bfcl-eval` wheel's data, downloaded, never installed
loader   `load_bfcl`, `bfcl_dataset`: single-turn categories as items, tools sent as BFCL sends
prompt   `prompt_mode_system`: BFCL's prompting-mode system prompt
checker  `grade_calls` → `BfclGrade`: BFCL's AST checker, error types included
multi_turn_checker  `grade_multi_turn`: BFCL's multi-turn checker, backends in `sandbox`
backends, sandbox   BFCL's backend classes from the wheel, run in a limited worker process
value_checks, values   its checks of one value; Java and JavaScript argument text as it reads it
decode, tree_calls     a prompting-mode reply decoded as BFCL decodes it (Python; tree-sitter)
reply    `grade_reply`: one reply graded in the mode it was asked in
scores   `bfcl_scores`: BFCL's leaderboard row, Overall Acc and summaries aggregated as BFCL does
score_files  `write_bfcl_scores`: BFCL's score files and leaderboard CSVs, for BFCL's own tools
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

if TYPE_CHECKING:
    from workbench.eval.suites.bfcl.case import CATEGORIES, BfclCase
    from workbench.eval.suites.bfcl.checker import BfclGrade, grade_calls
    from workbench.eval.suites.bfcl.loader import bfcl_dataset, load_bfcl
    from workbench.eval.suites.bfcl.multi_turn_checker import grade_multi_turn
    from workbench.eval.suites.bfcl.prompt import prompt_mode_system
    from workbench.eval.suites.bfcl.score_files import write_bfcl_scores
    from workbench.eval.suites.bfcl.scores import bfcl_scores
    from workbench.eval.suites.bfcl.source import fetch_bfcl, open_source

_HOMES: dict[str, str] = {
    "CATEGORIES": "case",
    "BfclCase": "case",
    "BfclGrade": "checker",
    "grade_calls": "checker",
    "bfcl_dataset": "loader",
    "load_bfcl": "loader",
    "grade_multi_turn": "multi_turn_checker",
    "prompt_mode_system": "prompt",
    "bfcl_scores": "scores",
    "fetch_bfcl": "source",
    "open_source": "source",
    "write_bfcl_scores": "score_files",
}
__all__ = [
    "CATEGORIES",
    "BfclCase",
    "BfclGrade",
    "bfcl_dataset",
    "bfcl_scores",
    "fetch_bfcl",
    "grade_calls",
    "grade_multi_turn",
    "load_bfcl",
    "open_source",
    "prompt_mode_system",
    "write_bfcl_scores",
]
__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
