"""BFCL's real files, and BFCL's own checker as the oracle ours must agree with.

The wheel is what `workbench bfcl fetch` caches (`scripts/test` fetches it before the tests);
BFCL's checker and decoder are imported from an unpacked copy of it, never installed.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import types
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.eval.suites.bfcl.source import WHEEL, cache_dir


@pytest.fixture(scope="session")
def bfcl_wheel() -> Path:
    wheel = cache_dir() / WHEEL
    if not wheel.is_file():
        pytest.skip(f"BFCL's wheel is not fetched ({wheel}): run `workbench bfcl fetch`")
    return wheel


@pytest.fixture(scope="session")
def bfcl_package(bfcl_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """BFCL's own package importable from an unpacked copy of the wheel (its config makes
    folders beside itself), with stubs for what the parts we call never use: the model table
    (it would import every model handler), and filelock and tenacity when they are absent."""
    root = tmp_path_factory.mktemp("bfcl_eval")
    with zipfile.ZipFile(bfcl_wheel) as z:
        z.extractall(root, [n for n in z.namelist() if n.startswith("bfcl_eval/")])
    sys.path.insert(0, str(root))
    # A test that read a module straight from the wheel (a zip) left the package imported from
    # there, where its config cannot make its folders: import it afresh from the copy.
    for name in [n for n in sys.modules if n == "bfcl_eval" or n.startswith("bfcl_eval.")]:
        del sys.modules[name]
    import bfcl_eval.constants  # noqa: F401  (the package must exist before its stubbed module)

    stubs = {
        "bfcl_eval.constants.model_config": {
            "MODEL_CONFIG_MAPPING": {"oracle": types.SimpleNamespace(underscore_to_dot=False)}
        }
    }
    for name, attrs in {
        "filelock": {"FileLock": object},
        "tenacity": dict.fromkeys(
            (
                "retry",
                "retry_if_exception_message",
                "retry_if_exception_type",
                "wait_random_exponential",
            ),
            lambda *a, **k: lambda f: f,
        ),
    }.items():
        if importlib.util.find_spec(name) is None:
            stubs[name] = attrs
    for name, attrs in stubs.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
    yield
    sys.path.remove(str(root))


@pytest.fixture(scope="session")
def bfcl_oracle(bfcl_package: None) -> Any:
    """`oracle(case, decoded_calls) -> (valid, error_type)` by BFCL's own `ast_checker`."""
    from bfcl_eval.constants.enums import Language  # type: ignore[import-not-found]
    from bfcl_eval.eval_checker.ast_eval.ast_checker import (  # type: ignore[import-not-found]
        ast_checker,
    )

    languages = {
        "python": Language.PYTHON,
        "java": Language.JAVA,
        "javascript": Language.JAVASCRIPT,
    }

    def oracle(case: Any, calls: list[dict[str, Any]]) -> tuple[bool, str | None]:
        got = ast_checker(
            copy.deepcopy(list(case.functions)),
            copy.deepcopy(calls),
            copy.deepcopy(list(case.ground_truth)),
            languages[case.language],
            case.category,
            "oracle",
        )
        return got["valid"], None if got["valid"] else got["error_type"]

    return oracle


@pytest.fixture(scope="session")
def bfcl_decoder(bfcl_package: None) -> Any:
    """`decode(text, language) -> decoded | Exception`: BFCL's own prompting-mode decoder."""
    pytest.importorskip("tree_sitter_java", reason="the `bfcl` extra (tree-sitter) is needed")
    from bfcl_eval.constants.enums import ReturnFormat
    from bfcl_eval.model_handler.utils import (  # type: ignore[import-not-found]
        default_decode_ast_prompting,
    )

    formats = {
        "python": ReturnFormat.PYTHON,
        "java": ReturnFormat.JAVA,
        "javascript": ReturnFormat.JAVASCRIPT,
    }

    def decode(text: str, language: str) -> Any:
        try:
            return default_decode_ast_prompting(text, formats[language])
        except Exception as exc:  # BFCL's decoder fails by raising: that is its verdict
            return exc

    return decode
