"""Pending actions in Redis: one store shared by several processes and hosts.

Keys (``prefix`` defaults to ``wb:actions:``):
    {prefix}a:{action_id}       a hash: the columns of the `actions` row (JSON ones as text)
    {prefix}index               a sorted set of every action id, scored by created_at_ms
    {prefix}dedupe:{sha1}       the id last proposed under (action name, dedupe key)

Each move is one Lua script, so it is atomic across processes: `TRANSITION` compares the
status and sets the new fields (the claim, the rejection, the finish), and `INSERT` checks
the dedupe pointer's action is no longer live before it writes a new one. The new fields are
computed in Python from the row as it was read: safe, because a pending (or executing) row
changes only by the guarded move that leaves that status. The scripts never decode JSON, so
a payload round-trips byte for byte.

`list` reads the whole index (one pipeline): fine for a review queue, not for millions of
actions. The dedupe script reads the pointed-to hash by name, so all keys of one prefix must
live on one node (no Redis Cluster spread).
"""

from __future__ import annotations

import builtins
import hashlib
from typing import Any, Literal

import redis.asyncio as aioredis

from workbench._redis import RedisStore
from workbench.events import now_ms
from workbench.tools.pending import (
    COLUMNS,
    MUTABLE,
    Action,
    Clock,
    claimed_row,
    duplicate_id,
    finished_row,
    from_row,
    newest_first,
    not_executing,
    rejected_row,
    to_row,
)

# KEYS[1] new hash, KEYS[2] index, KEYS[3] dedupe pointer (optional)
# ARGV[1] id, ARGV[2] created_at_ms, ARGV[3] hash prefix, ARGV[4..] field, value pairs
INSERT_LUA = """
if #KEYS >= 3 then
  local prior = redis.call('GET', KEYS[3])
  if prior then
    local h = ARGV[3] .. prior
    local st = redis.call('HGET', h, 'status')
    if st == 'pending' or st == 'executing' then
      return {0, redis.call('HGETALL', h)}
    end
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {-1}
end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
if #KEYS >= 3 then
  redis.call('SET', KEYS[3], ARGV[1])
end
return {1}
"""

# KEYS[1] the hash; ARGV[1] the status it must have; ARGV[2..] field, value pairs to set.
# Returns {1, fields after} when moved, {0, current status or ''} when not.
TRANSITION_LUA = """
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  return {0, ''}
end
if st ~= ARGV[1] then
  return {0, st}
end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return {1, redis.call('HGETALL', KEYS[1])}
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(row: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """Field, value pairs for HSET; a None column is simply absent from the hash."""
    out: list[str] = []
    for name in names:
        if row.get(name) is not None:
            out += [name, str(row[name])]
    return out


def _row(flat: list[Any] | dict[Any, Any]) -> dict[str, Any] | None:
    """HGETALL as a flat list (from a script) or a dict (from the client) → a row."""
    if not flat:
        return None
    if isinstance(flat, dict):
        items = {_text(k): _text(v) for k, v in flat.items()}
    else:
        items = {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}
    if "action_id" not in items:
        return None
    return {c: items.get(c) for c in COLUMNS}


class RedisActionStore(RedisStore):
    """Actions in Redis, atomic across processes and hosts.

    `url_or_client`: a `redis://` URL (the store builds and owns a client: short timeouts,
    no retries, a blocking pool of `max_connections` so a burst queues instead of failing)
    or a `redis.asyncio.Redis` the caller owns (not closed by `close()`; either
    `decode_responses` setting works). Redis errors are raised to the caller.
    """

    def __init__(
        self,
        url_or_client: str | aioredis.Redis,
        prefix: str = "wb:actions:",
        *,
        clock_ms: Clock | None = None,
        socket_timeout_s: float = 5.0,
        max_connections: int = 64,
        pool_timeout_s: float = 5.0,
    ) -> None:
        super().__init__(
            url_or_client,
            socket_timeout_s=socket_timeout_s,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
        )
        self.prefix = prefix
        self._clock = clock_ms or now_ms
        self._insert = self._client.register_script(INSERT_LUA)
        self._transition = self._client.register_script(TRANSITION_LUA)

    def key(self, action_id: str) -> str:
        return f"{self.prefix}a:{action_id}"

    @property
    def index_key(self) -> str:
        return f"{self.prefix}index"

    def dedupe_key(self, action: str, dedupe_key: str) -> str:
        digest = hashlib.sha1(f"{action}\0{dedupe_key}".encode(), usedforsecurity=False)
        return f"{self.prefix}dedupe:{digest.hexdigest()}"

    def _at(self, at_ms: int | None) -> int:
        return int(self._clock() if at_ms is None else at_ms)

    async def _read(self, action_id: str) -> dict[str, Any] | None:
        return _row(await self._client.hgetall(self.key(action_id)))

    async def insert(self, action: Action) -> Action:
        row = to_row(action)
        keys = [self.key(action.id), self.index_key]
        if action.dedupe_key is not None:
            keys.append(self.dedupe_key(action.action, action.dedupe_key))
        args = [action.id, row["created_at_ms"], f"{self.prefix}a:", *_pairs(row, COLUMNS)]
        reply = await self._insert(keys=keys, args=args)
        outcome = int(reply[0])
        if outcome == -1:
            raise duplicate_id(action.id)
        if outcome == 0:
            existing = _row(reply[1])
            if existing is not None:
                return from_row(existing)
        return from_row(row)

    async def get(self, action_id: str) -> Action | None:
        row = await self._read(action_id)
        return None if row is None else from_row(row)

    async def list(
        self, status: str | None = None, run_id: str | None = None
    ) -> builtins.list[Action]:
        ids = await self._client.zrevrange(self.index_key, 0, -1)
        if not ids:
            return []
        pipe = self._client.pipeline(transaction=False)
        for action_id in ids:
            pipe.hgetall(self.key(_text(action_id)))
        rows = [r for r in (_row(flat) for flat in await pipe.execute()) if r is not None]
        return newest_first(
            from_row(r)
            for r in rows
            if (status is None or r["status"] == status)
            and (run_id is None or r["run_id"] == run_id)
        )

    async def _move(self, new: dict[str, Any], expected: str) -> dict[str, Any] | None:
        reply = await self._transition(
            keys=[self.key(new["action_id"])], args=[expected, *_pairs(new, MUTABLE)]
        )
        return _row(reply[1]) if int(reply[0]) == 1 else None

    async def claim(
        self,
        action_id: str,
        by: str,
        amend: dict[str, Any] | None,
        *,
        at_ms: int | None = None,
    ) -> Action | None:
        row = await self._read(action_id)
        if row is None or row["status"] != "pending":
            return None
        moved = await self._move(claimed_row(row, by, amend, self._at(at_ms)), "pending")
        return None if moved is None else from_row(moved)

    async def finish(
        self,
        action_id: str,
        status: Literal["executed", "failed"],
        result: Any = None,
        error: str | None = None,
        *,
        at_ms: int | None = None,
    ) -> Action:
        row = await self._read(action_id)
        if row is None or row["status"] != "executing":
            raise not_executing(action_id, None if row is None else row["status"])
        moved = await self._move(
            finished_row(row, status, result, error, self._at(at_ms)), "executing"
        )
        if moved is None:
            raise not_executing(action_id, None)
        return from_row(moved)

    async def reject(
        self, action_id: str, by: str, note: str | None, *, at_ms: int | None = None
    ) -> Action | None:
        row = await self._read(action_id)
        if row is None or row["status"] != "pending":
            return None
        moved = await self._move(rejected_row(row, by, note, self._at(at_ms)), "pending")
        return None if moved is None else from_row(moved)
