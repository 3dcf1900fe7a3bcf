"""The gateway's own client keys: who may route through it. Never a provider's key: those
stay in the providers file's environment and never leave the server.

Keys come from `WORKBENCH_GATEWAY_KEYS` (comma-separated) and a keys file (one a line; a line
starting with `#` is a comment); both may be given. No key, no route: a gateway without one
refuses to start (`GATEWAY_NO_KEYS`) rather than serve everyone. A presented key is compared
with every key held, each in constant time (`hmac.compare_digest` over SHA-256 digests, so the
key's length leaks nothing either), and no key is ever logged, shown in an error or kept in a
row.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from workbench.errors import ConfigError

__all__ = ["ENV", "MIN_LENGTH", "ClientKeys"]

ENV = "WORKBENCH_GATEWAY_KEYS"
# A key short enough to guess is refused when the gateway starts.
MIN_LENGTH = 16


class ClientKeys:
    """The keys a gateway accepts, held as digests. `allows(presented)` checks one."""

    __slots__ = ("_digests",)

    def __init__(self, keys: list[str]) -> None:
        short = [n for n, k in enumerate(keys, 1) if len(k) < MIN_LENGTH]
        if short:
            raise ConfigError(
                f"gateway key(s) number {', '.join(map(str, short))} are shorter than "
                f"{MIN_LENGTH} characters",
                code="GATEWAY_KEYS_INVALID",
            )
        if not keys:
            raise ConfigError(
                f"no gateway key: set {ENV} (comma-separated) or pass --keys-file FILE; "
                "the gateway routes nobody's request without one",
                code="GATEWAY_NO_KEYS",
            )
        self._digests = tuple(dict.fromkeys(_digest(k) for k in keys))

    @classmethod
    def load(cls, keys_file: str | Path | None = None, env: str | None = None) -> ClientKeys:
        """The keys of `env` (default: the `WORKBENCH_GATEWAY_KEYS` variable) and `keys_file`."""
        value = os.environ.get(ENV, "") if env is None else env
        keys = [k.strip() for k in value.split(",") if k.strip()]
        if keys_file is not None:
            keys += _read_file(Path(keys_file))
        return cls(keys)

    def __len__(self) -> int:
        return len(self._digests)

    def __repr__(self) -> str:
        return f"ClientKeys({len(self._digests)} key(s))"

    def allows(self, presented: str | None) -> bool:
        """Whether `presented` is one of the keys. Every key is compared, found or not, so the
        time taken says nothing of which key matched or how close a guess came."""
        if not presented:
            return False
        digest = _digest(presented)
        found = False
        for held in self._digests:
            found |= hmac.compare_digest(held, digest)
        return found

    def allows_header(self, authorization: str | None) -> bool:
        """Whether an `Authorization: Bearer KEY` header carries one of the keys."""
        scheme, _, key = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and self.allows(key.strip())


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def _read_file(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: the keys file cannot be read ({type(exc).__name__})",
            code="GATEWAY_KEYS_INVALID",
        ) from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]  # a key may hold "#"
