"""Where a report or an export is written: checked before any work, and nothing half-written.

Every file is written beside its final name as a hidden temporary (`.NAME.XXXX.tmp`, which
`inspect view` and log listings skip) and moved into place with `os.replace` once every file
of the export is complete; if anything fails, the temporaries are removed and what the folder
held before is untouched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from workbench.errors import ConfigError


def out_invalid(path: Path, why: object) -> ConfigError:
    return ConfigError(f"{path}: cannot write there ({why})", code="OUT_NOT_WRITABLE")


def writable_dir(path: str | Path) -> Path:
    """`path` as a folder that can be written into (made if missing), else `OUT_NOT_WRITABLE`."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".workbench-probe.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise out_invalid(folder, exc.strerror or exc) from None
    return folder


def writable_file(path: str | Path) -> Path:
    """`path` as a file that can be written (its folder made if missing)."""
    file = Path(path)
    if file.is_dir():
        raise out_invalid(file, "it is a folder")
    writable_dir(file.parent)
    return file


@contextlib.contextmanager
def staged(folder: Path) -> Iterator[Callable[[str], Path]]:
    """`stage(name)` gives the temporary to write `folder/name` to; when the block ends without
    error every staged file is moved into place, otherwise every temporary is removed."""
    made: list[tuple[Path, Path]] = []

    def stage(name: str) -> Path:
        temp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
        made.append((temp, folder / name))
        return temp

    try:
        yield stage
        for temp, final in made:
            os.replace(temp, final)
    except OSError as exc:
        _remove(made)
        raise out_invalid(folder, exc.strerror or exc) from None
    except BaseException:
        _remove(made)
        raise


def _remove(made: list[tuple[Path, Path]]) -> None:
    for temp, _ in made:
        with contextlib.suppress(OSError):
            temp.unlink()
