"""Where a report or an export is written: checked before any work, and nothing half-written.

Every file is written beside its final name as a hidden temporary (`.NAME.XXXX.tmp`, which
`inspect view` and log listings skip) and moved into place with `os.replace` once every file
of the export is complete; if anything fails, the temporaries are removed and what the folder
held before is untouched. A staged folder (a big report: a page and its data files) is
written the same way, whole, and replaces the folder of that name whole: the old one is moved
aside, the new one moved in, the old one removed — never a mix of the two.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
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
def staged(folder: Path) -> Iterator[Callable[..., Path]]:
    """`stage(name)` gives the temporary to write `folder/name` to (`stage(name, folder=True)`:
    a temporary folder, made); when the block ends without error every staged file is moved
    into place, otherwise every temporary is removed."""
    made: list[tuple[Path, Path]] = []
    into = folder

    def stage(name: str, *, folder: bool = False) -> Path:
        temp = into / f".{name}.{secrets.token_hex(4)}.tmp"
        made.append((temp, into / name))
        if folder:
            temp.mkdir()
        return temp

    try:
        yield stage
        for temp, final in made:
            _move_in(temp, final)
    except OSError as exc:
        _remove(made)
        raise out_invalid(folder, exc.strerror or exc) from None
    except BaseException:
        _remove(made)
        raise


def _move_in(temp: Path, final: Path) -> None:
    """`temp` to `final`; a folder replaces whatever held its name (moved aside first, as a
    folder cannot be renamed over a folder that is not empty)."""
    if not temp.is_dir() or not (final.exists() or final.is_symlink()):
        os.replace(temp, final)
        return
    old = final.with_name(f".{final.name}.{secrets.token_hex(4)}.old.tmp")
    os.replace(final, old)
    os.replace(temp, final)
    _delete(old)


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _remove(made: list[tuple[Path, Path]]) -> None:
    for temp, _ in made:
        _delete(temp)
