"""BFCL's real files, and BFCL's own checker as the oracle ours must agree with.

The wheel is what `workbench bfcl fetch` caches (`scripts/test` fetches it before the tests);
BFCL's checker is imported straight from it, never installed: only its model table, which
would import every model handler, is replaced by a stub naming one model that keeps dotted
names as they are.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from workbench.eval.bfcl.source import WHEEL, cache_dir


@pytest.fixture(scope="session")
def bfcl_wheel() -> Path:
    wheel = cache_dir() / WHEEL
    if not wheel.is_file():
        pytest.skip(f"BFCL's wheel is not fetched ({wheel}): run `workbench bfcl fetch`")
    return wheel


@pytest.fixture(scope="session")
def bfcl_oracle(bfcl_wheel: Path) -> Any:
    """`oracle(case, decoded_calls) -> (valid, error_type)` by BFCL's own `ast_checker`."""
    sys.path.insert(0, str(bfcl_wheel))
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {"oracle": types.SimpleNamespace(underscore_to_dot=False)}  # type: ignore[attr-defined]
    import bfcl_eval.constants  # noqa: F401  (the package must exist before its stubbed module)

    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language  # type: ignore[import-not-found]
    from bfcl_eval.eval_checker.ast_eval.ast_checker import (  # type: ignore[import-not-found]
        ast_checker,
    )

    languages = {"python": Language.PYTHON, "java": Language.JAVA, "javascript": Language.JAVASCRIPT}

    def oracle(case: Any, calls: list[dict[str, Any]]) -> tuple[bool, str | None]:
        import copy

        got = ast_checker(
            copy.deepcopy(list(case.functions)), copy.deepcopy(calls),
            copy.deepcopy(list(case.ground_truth)), languages[case.language], case.category,
            "oracle",
        )  # fmt: skip
        return got["valid"], None if got["valid"] else got["error_type"]

    yield oracle
    sys.path.remove(str(bfcl_wheel))
