"""A package's public names imported on first use (a module `__getattr__`, PEP 562).

Why: `import workbench.eval.dataset.prompt_set`, or `workbench --help`, imports every package
`__init__` on the way; if those imported their names eagerly, the lightest command would pay
for pandas, httpx, jsonschema and DuckDB.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(
    package: str, homes: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose name N lives in `package.homes[N]` (or in
    `homes[N]` itself when that is an absolute `workbench.` name: a re-export from the library);
    a name, once imported, is kept in `namespace` (the package's globals): an ordinary
    attribute from then on."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if home.startswith("workbench.") else f"{package}.{home}"
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__
