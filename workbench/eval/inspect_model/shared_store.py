"""One `Store` per DuckDB file for the whole process, shared by every run open on it.

DuckDB allows one writer per file, and Inspect runs several tasks at once (`--max-tasks`),
each its own workbench run on the same `-M db`: the runs share the file's one store, which is
closed when its last run finishes.
"""

from __future__ import annotations

from pathlib import Path

from workbench.eval.store.database import Store


class SharedStores:
    """The DuckDB files this process writes: `take` opens one (or counts one more run on it),
    `give_back` closes it after its last run."""

    def __init__(self) -> None:
        self._open: dict[Path, tuple[Store, int]] = {}

    def take(self, path: Path) -> Store:
        key = path.resolve()
        store, users = self._open.get(key) or (Store.open(path), 0)
        self._open[key] = (store, users + 1)
        return store

    def give_back(self, path: Path) -> None:
        key = path.resolve()
        store, users = self._open.pop(key)
        if users > 1:
            self._open[key] = (store, users - 1)
        else:
            store.close()


STORES = SharedStores()


__all__ = ["STORES", "SharedStores"]
