"""The Redis quota store: one Lua script per reservation, atomic across processes.

The script reads Redis's own `TIME` as the clock (every process and host agrees on the
minute and the UTC day), computes the minute bucket and the `YYYY-MM-DD` day inside, checks
rpd, tpd, tpm and rpm, and on success increments all four counters and sets their expiries,
all in one atomic step. Since Redis 5 scripts replicate their effects, so calling `TIME`
before writing is allowed (the script also calls `redis.replicate_commands()` when it
exists, for older servers).

Keys (the `{...}` hash tag keeps one key's counters in one cluster slot):
    {prefix}{provider:model@lane}:m:{minute}       requests in that minute, TTL 120 s
    {prefix}{provider:model@lane}:m:{minute}:tok   tokens in that minute,   TTL 120 s
    {prefix}{provider:model@lane}:d:{day}:req      requests that UTC day,  TTL 2 days
    {prefix}{provider:model@lane}:d:{day}:tok      tokens that UTC day,    TTL 2 days

Window semantics are those of `workbench.routing.quota` (fixed calendar minute, UTC day).
`RedisQuota` raises Redis errors to its caller; `FailoverQuota` is the store that never
does.
"""

from __future__ import annotations

from typing import Any, cast

import redis.asyncio as aioredis

from workbench._redis import RedisStore
from workbench.routing.quota import (
    Clock,
    LimitName,
    Limits,
    Refusal,
    Reservation,
    clean_cap,
    clean_count,
)

MINUTE_TTL_S = 120
DAY_TTL_S = 2 * 86_400

# Lua 5.1 numbers are doubles: exact for epoch milliseconds and day numbers.
LUA_CLOCK = """
local function utc_day(n)  -- civil date of day number n since 1970-01-01 (H. Hinnant)
  local z = n + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02d', y, m, d)
end
local function now_ms(override)
  if override ~= nil and override ~= '' then return tonumber(override) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# KEYS[1] = base; ARGV = rpm, rpd, tpd, tpm (-1 = unlimited), tokens, now override ('' = TIME).
# -> {1, minute, day, now_ms} | {0, limit, retry_ms, used, cap}
RESERVE_LUA = (
    (
        "if redis.replicate_commands then redis.replicate_commands() end\n"
        + LUA_CLOCK
        + """
local base = KEYS[1]
local rpm, rpd, tpd = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tpm = tonumber(ARGV[4])
local tokens = tonumber(ARGV[5])
local now = now_ms(ARGV[6])
local minute = math.floor(now / 60000)
local day = utc_day(math.floor(now / 86400000))
local mkey = base .. ':m:' .. string.format('%d', minute)
local mtkey = mkey .. ':tok'
local rkey = base .. ':d:' .. day .. ':req'
local tkey = base .. ':d:' .. day .. ':tok'
local m_used = tonumber(redis.call('GET', mkey) or '0')
local mt_used = tonumber(redis.call('GET', mtkey) or '0')
local r_used = tonumber(redis.call('GET', rkey) or '0')
local t_used = tonumber(redis.call('GET', tkey) or '0')
local day_wait = 86400000 - now % 86400000
local minute_wait = 60000 - now % 60000
if rpd >= 0 and r_used + 1 > rpd then return {0, 'rpd', day_wait, r_used, rpd} end
if tpd >= 0 and t_used + tokens > tpd then return {0, 'tpd', day_wait, t_used, tpd} end
if tpm >= 0 and mt_used + tokens > tpm then return {0, 'tpm', minute_wait, mt_used, tpm} end
if rpm >= 0 and m_used + 1 > rpm then return {0, 'rpm', minute_wait, m_used, rpm} end
redis.call('INCR', mkey)
redis.call('EXPIRE', mkey, __MINUTE_TTL__)
redis.call('INCRBY', mtkey, ARGV[5])
redis.call('EXPIRE', mtkey, __MINUTE_TTL__)
redis.call('INCR', rkey)
redis.call('EXPIRE', rkey, __DAY_TTL__)
redis.call('INCRBY', tkey, ARGV[5])
redis.call('EXPIRE', tkey, __DAY_TTL__)
return {1, minute, day, now}
"""
    )
    .replace("__MINUTE_TTL__", str(MINUTE_TTL_S))
    .replace("__DAY_TTL__", str(DAY_TTL_S))
)

# KEYS[i] is raised to at least ARGV[2i-1] (never lowered), with the TTL ARGV[2i].
_RAISE_LUA = """
for i, key in ipairs(KEYS) do
  local want = tonumber(ARGV[2 * i - 1])
  local have = tonumber(redis.call('GET', key) or '0')
  if have < want then
    redis.call('SET', key, want, 'EX', tonumber(ARGV[2 * i]))
  end
end
return #KEYS
"""

# KEYS[i] gets the signed delta ARGV[i]; a missing (expired) key is left alone; floor at 0.
ADJUST_LUA = """
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    local v = redis.call('INCRBY', key, ARGV[i])
    if v < 0 then redis.call('SET', key, 0, 'KEEPTTL') end
  end
end
return 1
"""

# KEYS[1] = base; ARGV[1] = now override -> {rpm, rpd, tpd, tpm}
USAGE_LUA = (
    LUA_CLOCK
    + """
local base = KEYS[1]
local now = now_ms(ARGV[1])
local day = utc_day(math.floor(now / 86400000))
local mkey = base .. ':m:' .. string.format('%d', math.floor(now / 60000))
return {tonumber(redis.call('GET', mkey) or '0'),
        tonumber(redis.call('GET', base .. ':d:' .. day .. ':req') or '0'),
        tonumber(redis.call('GET', base .. ':d:' .. day .. ':tok') or '0'),
        tonumber(redis.call('GET', mkey .. ':tok') or '0')}
"""
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisQuota(RedisStore):
    """Quotas in Redis, atomic across processes and hosts.

    `url_or_client`: a `redis://` URL (the store builds and owns a client with short socket
    timeouts and no retries (a killed server refuses at once; a hung one costs at most
    `socket_timeout_s`, 2 s: shorter timeouts failed over spuriously under a burst of
    connections), and a blocking pool of `max_connections`, so a burst of concurrent calls
    queues for a connection, up to `pool_timeout_s`, instead of failing "Too many
    connections") or a `redis.asyncio.Redis` the caller owns (not closed by `close()`).
    `clock_ms` overrides Redis's `TIME` in the scripts: for tests only. Leave it None in
    production so that every process counts in the same minute and day.
    Errors are raised (see `FailoverQuota` for the store that never raises).
    """

    backend = "redis"

    def __init__(
        self,
        url_or_client: str | aioredis.Redis,
        *,
        prefix: str = "wb:quota:",
        clock_ms: Clock | None = None,
        socket_timeout_s: float = 2.0,
        max_connections: int = 64,
        pool_timeout_s: float = 1.0,
    ) -> None:
        super().__init__(
            url_or_client,
            socket_timeout_s=socket_timeout_s,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
        )
        self._prefix = prefix
        self._clock = clock_ms
        # register_script: EVALSHA, and EVAL (which reloads the cache) on NOSCRIPT,
        # e.g. after a restart of the server.
        self._reserve = self._client.register_script(RESERVE_LUA)
        self._adjust = self._client.register_script(ADJUST_LUA)
        self._usage = self._client.register_script(USAGE_LUA)

    def base(self, key: str) -> str:
        return f"{self._prefix}{{{key}}}"

    def minute_key(self, key: str, minute: int) -> str:
        return f"{self.base(key)}:m:{minute}"

    def minute_tokens_key(self, key: str, minute: int) -> str:
        return f"{self.minute_key(key, minute)}:tok"

    def day_keys(self, key: str, day: str) -> tuple[str, str]:
        """(requests key, tokens key) of `key` on UTC day `day`."""
        return f"{self.base(key)}:d:{day}:req", f"{self.base(key)}:d:{day}:tok"

    async def raise_counts(
        self,
        minutes: dict[tuple[str, int], list[int]],
        days: dict[tuple[str, str], list[int]],
    ) -> None:
        """Lift counters to at least these values (never lower them): a Redis that restarted
        empty learns what was spent while it was away, so a window is not granted twice."""
        keys: list[str] = []
        args: list[Any] = []
        for (key, minute), (requests, tokens) in minutes.items():
            keys += [self.minute_key(key, minute), self.minute_tokens_key(key, minute)]
            args += [requests, MINUTE_TTL_S, tokens, MINUTE_TTL_S]
        for (key, day), (requests, tokens) in days.items():
            req_key, tok_key = self.day_keys(key, day)
            keys += [req_key, tok_key]
            args += [requests, DAY_TTL_S, tokens, DAY_TTL_S]
        if keys:
            await self._client.eval(_RAISE_LUA, len(keys), *keys, *args)

    def _now_arg(self) -> str:
        return "" if self._clock is None else str(int(self._clock()))

    async def reserve(self, key: str, limits: Limits, tokens: int) -> Reservation | Refusal:
        tokens = clean_count(tokens)
        caps = [clean_cap(c) for c in (limits.rpm, limits.rpd, limits.tpd, limits.tpm)]
        args: list[int | str] = [-1 if c is None else c for c in caps]
        args += [tokens, self._now_arg()]
        result = await self._reserve(keys=[self.base(key)], args=args)
        if int(result[0]) == 1:
            return Reservation(key, tokens, int(result[1]), _text(result[2]), self.backend)
        limit = cast(LimitName, _text(result[1]))
        return Refusal(key, limit, int(result[2]) / 1000, int(result[3]), int(result[4]))

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        delta = clean_count(actual_tokens) - reservation.tokens
        if delta:
            _, tokens_key = self.day_keys(reservation.key, reservation.day)
            minute_tokens = self.minute_tokens_key(reservation.key, reservation.minute_bucket)
            await self._adjust(keys=[tokens_key, minute_tokens], args=[delta, delta])

    async def release(self, reservation: Reservation) -> None:
        keys = [
            self.minute_key(reservation.key, reservation.minute_bucket),
            *self.day_keys(reservation.key, reservation.day),
            self.minute_tokens_key(reservation.key, reservation.minute_bucket),
        ]
        tokens = -reservation.tokens
        await self._adjust(keys=keys, args=[-1, -1, tokens, tokens])

    async def usage(self, key: str) -> dict[str, int]:
        rpm, rpd, tpd, tpm = await self._usage(keys=[self.base(key)], args=[self._now_arg()])
        return {"rpm": int(rpm), "rpd": int(rpd), "tpd": int(tpd), "tpm": int(tpm)}
