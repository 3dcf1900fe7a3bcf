"""Where BFCL's files come from: the `bfcl-eval` wheel, never installed.

BFCL's questions, function docs and possible answers ship inside the PyPI wheel
`bfcl-eval` under `bfcl_eval/data/`; installing the package would pull in torch-sized
dependencies to read a few JSON-lines files. A wheel is a zip, so `fetch_bfcl` asks pip to
download it alone (`--no-deps`) into a cache, and every reader opens the zip. A source can
also be a wheel someone already has, a wheel unpacked, a checkout of BFCL's repository, or
the `data` folder itself — for machines without a registry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import ConfigError

VERSION = "2026.3.23"  # the bfcl-eval release whose data (BFCL v4) this grader was checked on
DATA_VERSION = "v4"  # the BFCL data version those files are
PREFIX = f"BFCL_{DATA_VERSION}_"  # every data file's name starts with it
WHEEL = f"bfcl_eval-{VERSION}-py3-none-any.whl"
_DATA = "bfcl_eval/data/"
_CHECKOUT_DATA = ("berkeley-function-call-leaderboard/bfcl_eval/data", "bfcl_eval/data", "data")


def cache_dir() -> Path:
    """`$WORKBENCH_BFCL_DIR`, else `$XDG_CACHE_HOME/workbench/bfcl` (`~/.cache/...`)."""
    if os.environ.get("WORKBENCH_BFCL_DIR"):
        return Path(os.environ["WORKBENCH_BFCL_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "workbench" / "bfcl"


@dataclass(frozen=True)
class BfclSource:
    """BFCL's data folder, inside a wheel or on disk. Names are relative to that folder
    (`BFCL_v4_simple_python.json`, `possible_answer/BFCL_v4_simple_python.json`)."""

    where: Path  # the wheel file, or the data folder
    wheel: bool

    def read(self, name: str) -> bytes | None:
        """The file's bytes, or None when the source has no such file."""
        if self.wheel:
            try:
                with zipfile.ZipFile(self.where) as z:
                    return z.read(_DATA + name)
            except KeyError:
                return None
        path = self.where / name
        return path.read_bytes() if path.is_file() else None

    def names(self) -> list[str]:
        if self.wheel:
            with zipfile.ZipFile(self.where) as z:
                return [n[len(_DATA) :] for n in z.namelist() if n.startswith(_DATA)]
        return [str(p.relative_to(self.where)) for p in self.where.rglob("*.json")]

    def shown(self, name: str) -> str:
        """How a file is named in an error: the wheel and its member, or the file's path."""
        return f"{self.where}!{_DATA}{name}" if self.wheel else str(self.where / name)


def open_source(source: str | Path | None = None) -> BfclSource:
    """The data `source` names (a wheel, an unpacked wheel, a checkout, a data folder), or
    what `fetch_bfcl` left in the cache. `BFCL_DATA_MISSING` says how to get it."""
    if source is None:
        cached = cache_dir()
        # The pinned release first; a wheel of another release someone fetched with --source.
        for candidate in (cached / WHEEL, *sorted(cached.glob("bfcl_eval-*.whl")), cached / "data"):
            if candidate.exists():
                return _source_at(candidate)
        raise ConfigError(
            f"BFCL's data is not in {cached}: run `workbench bfcl fetch` "
            "(or pass --source PATH to a bfcl-eval wheel or a BFCL checkout)",
            code="BFCL_DATA_MISSING",
        )
    return _source_at(Path(source).expanduser())


def _source_at(path: Path) -> BfclSource:
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder", code="BFCL_SOURCE_INVALID")
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise ConfigError(
                f"{path}: not a wheel (a bfcl-eval .whl is a zip)", code="BFCL_SOURCE_INVALID"
            )
        with zipfile.ZipFile(path) as z:
            if not any(n.startswith(_DATA) for n in z.namelist()):
                raise ConfigError(
                    f"{path}: this wheel holds no {_DATA} folder", code="BFCL_SOURCE_INVALID"
                )
        return BfclSource(path, wheel=True)
    for inner in ("", *_CHECKOUT_DATA):
        folder = path / inner if inner else path
        if folder.is_dir() and any(folder.glob("BFCL_v*.json")):
            return BfclSource(folder, wheel=False)
    raise ConfigError(
        f"{path}: no BFCL data here (looked for BFCL_v*.json in it and in "
        f"{', '.join(_CHECKOUT_DATA)})",
        code="BFCL_SOURCE_INVALID",
    )


def fetch_bfcl(source: str | Path | None = None, *, into: str | Path | None = None) -> Path:
    """Put BFCL's data in the cache and return where. Without `source`, pip downloads the
    `bfcl-eval` wheel alone (`pip download --no-deps`: nothing is installed); with one, its
    data is copied from there. `BFCL_FETCH_FAILED` carries pip's last line."""
    target = Path(into).expanduser() if into is not None else cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    if source is None:
        return _download(target)
    found = open_source(source)
    if found.wheel:
        dest = target / found.where.name  # its own name: the release it is stays visible
        if dest.resolve() != found.where.resolve():
            shutil.copyfile(found.where, dest)
        return dest
    dest = target / "data"
    if dest.resolve() == found.where.resolve():
        return dest  # already the cache's own copy
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(found.where, dest)
    return dest


def _download(target: Path) -> Path:
    dest = target / WHEEL
    if dest.is_file() and zipfile.is_zipfile(dest):
        return dest  # already fetched: the release is pinned, so it cannot be stale
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            tmp,
            f"bfcl-eval=={VERSION}",
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        got = Path(tmp) / WHEEL
        if done.returncode != 0 or not got.is_file():
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ConfigError(
                f"pip could not download bfcl-eval=={VERSION}: {last[0][:300]}",
                code="BFCL_FETCH_FAILED",
            )
        os.replace(got, dest)
    return dest
