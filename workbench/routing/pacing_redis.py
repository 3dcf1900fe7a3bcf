"""The pacing state in Redis: one hash per key, changed by one Lua script per step, atomic
across processes and hosts.

The scripts say in Lua what `pacing.admit_on`, `learn_on`, `give_back_on` and `finished_on`
say in Python (the tests run the same cases against both). Times are the caller's epoch ms: the resets they
compare with are the vendor's wall-clock instants, which every host reads alike. Each script
hands the whole hash back, so the failover store's memory holds the last shared state.

Key: `{prefix}{provider:model@lane}` (a hash; fields `seq`, `tok`, `inflight`,
`{scope}:{window}:{limit|left|said|at|reset|period|start|last}`, `back:{seq}:{tok}` for a
request given back and `over:{seq}:{tok}` for the tokens an answer cost less than estimated), kept two days after its last change.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis

from workbench._redis import RedisStore
from workbench.providers.meter import QuotaReading
from workbench.routing.pacing import LONGEST_MS, MOST_BACK, WINDOWS, Paced, State, Ticket

TTL_MS = 2 * 86_400_000

_COMMON = (
    (
        """
local k = KEYS[1]
local function num(f)
  local v = redis.call('HGET', k, f)
  if v then return tonumber(v) end
  return nil
end
local WINDOWS = {__WINDOWS__}
local FIELDS = {'limit', 'left', 'said', 'at', 'reset', 'period', 'start', 'last'}
local LONGEST = {__LONGEST__}
local MOST_BACK = __MOST_BACK__
-- given back: {seq, tok, tokens, field, whole request?} ("back:" a request, "over:" tokens)
local function backs()
  local out = {}
  local flat = redis.call('HGETALL', k)
  for i = 1, #flat, 2 do
    local kind, s, t = string.match(flat[i], '^(%a+):(%d+):(%d+)$')
    if kind == 'back' or kind == 'over' then
      table.insert(out, {tonumber(s), tonumber(t), tonumber(flat[i + 1]), flat[i], kind == 'back'})
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end
local function credit(w, at, bs)
  local sum = 0
  local requests = string.sub(w, 1, 8) == 'requests'
  for _, b in ipairs(bs) do
    if requests then
      if b[5] and b[1] > at then sum = sum + 1 end
    elseif b[2] > at then
      sum = sum + b[3]
    end
  end
  return sum
end
local function avail_of(w, counter, bs)
  local at = num(w .. ':at') or counter
  return num(w .. ':left') - (counter - at) + credit(w, at, bs)
end
"""
    )
    .replace("__WINDOWS__", ", ".join(f"'{w}'" for w in WINDOWS))
    .replace("__LONGEST__", ", ".join(f"['{w}'] = {ms}" for w, ms in LONGEST_MS.items()))
    .replace("__MOST_BACK__", str(MOST_BACK))
)

# ARGV = now_ms, tokens -> {1, seq, tok, state...} | {0, window, left, reset, state...}
ADMIT_LUA = (
    _COMMON
    + """
local now, tokens = tonumber(ARGV[1]), tonumber(ARGV[2])
local seq, tok = num('seq') or 0, num('tok') or 0
local bs = backs()
local function done(verdict)
  redis.call('PEXPIRE', k, __TTL__)
  for _, v in ipairs(redis.call('HGETALL', k)) do table.insert(verdict, v) end
  return verdict
end
for _, w in ipairs(WINDOWS) do
  local left = num(w .. ':left')
  if left then
    local requests = string.sub(w, 1, 8) == 'requests'
    local counter = requests and seq or tok
    local need = requests and 1 or tokens
    local limit = num(w .. ':limit')
    local avail = avail_of(w, counter, bs)
    local reset = num(w .. ':reset')
    local known = true
    if reset == nil and avail < need then
      local period, last = num(w .. ':period'), num(w .. ':last')
      if period and last then reset = last + period end
    end
    if reset and now >= reset then
      if limit == nil then
        for _, f in ipairs(FIELDS) do redis.call('HDEL', k, w .. ':' .. f) end
        known = false
      else
        redis.call('HSET', k, w .. ':left', limit, w .. ':at', counter)
        redis.call('HDEL', k, w .. ':reset', w .. ':start', w .. ':said')
        avail, reset = limit, nil
      end
    end
    if known and avail < need and reset and (limit == nil or need <= limit) then
      return done({0, w, tostring(math.max(0, avail)), tostring(math.ceil(reset))})
    end
  end
end
redis.call('HSET', k, 'seq', seq + 1, 'tok', tok + tokens)
redis.call('HINCRBY', k, 'inflight', 1)
redis.call('HSETNX', k, 'first', now)
redis.call('HSET', k, 'last', now)
for _, w in ipairs(WINDOWS) do
  if redis.call('HEXISTS', k, w .. ':left') == 1 then
    redis.call('HSET', k, w .. ':last', now)
    redis.call('HSETNX', k, w .. ':start', now)
  end
end
return done({1, seq + 1, tok + tokens})
"""
).replace("__TTL__", str(TTL_MS))

# ARGV = seq ('' = now), tok ('' = now), then per reading: window, left, limit|'', reset|'',
# refusal (1/0), observed_at -> state...
LEARN_LUA = (
    _COMMON
    + """
local seq, tok = num('seq') or 0, num('tok') or 0
local bs = backs()
local i = 3
while i + 5 <= #ARGV do
  local w, left = ARGV[i], tonumber(ARGV[i + 1])
  local limit, reset, refusal = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4] == '1'
  local observed = tonumber(ARGV[i + 5])
  i = i + 6
  local requests = string.sub(w, 1, 8) == 'requests'
  local counter = requests and seq or tok
  local at = (requests and tonumber(ARGV[1]) or tonumber(ARGV[2])) or counter
  local old_left, old_reset = num(w .. ':left'), num(w .. ':reset')
  local take = true
  if old_left then
    local later = reset ~= nil and (old_reset == nil or reset > old_reset + 1000)
    local passed = old_reset ~= nil and observed >= old_reset
    local said, old_at = num(w .. ':said'), num(w .. ':at') or counter
    if string.sub(w, -4) == ':day' and said ~= nil and not later and not passed then
      if left > said then
        redis.call('HSET', k, w .. ':at', math.max(old_at, at))
        take = false
      else
        at = math.max(at, old_at)
      end
    else
      local bolder = left - (counter - at) + credit(w, at, bs) > avail_of(w, counter, bs)
      take = (not bolder) or later or passed
    end
  end
  if take then
    redis.call('HSET', k, w .. ':left', left, w .. ':said', left, w .. ':at', at)
    if limit then redis.call('HSET', k, w .. ':limit', limit) end
    local start = num(w .. ':start') or num('first')
    if refusal and reset and start then
      if redis.call('HEXISTS', k, w .. ':period') == 0 and reset > start then
        local longest = LONGEST[string.match(w, ':(.*)$')] or 60000
        redis.call('HSET', k, w .. ':period', math.min(reset - start, longest))
      end
      local last, period = num(w .. ':last') or num('last'), num(w .. ':period')
      if last and period then reset = math.max(reset, math.ceil(last + period)) end
    end
    if reset then redis.call('HSET', k, w .. ':reset', reset) end
  end
end
redis.call('PEXPIRE', k, __TTL__)
return redis.call('HGETALL', k)
"""
).replace("__TTL__", str(TTL_MS))

# ARGV = seq, tok, tokens, kind ("back": the whole request; "over": tokens only) -> state...
GIVE_BACK_LUA = """
local k = KEYS[1]
redis.call('HSET', k, ARGV[4] .. ':' .. ARGV[1] .. ':' .. ARGV[2], ARGV[3])
redis.call('PEXPIRE', k, __TTL__)
return redis.call('HGETALL', k)
""".replace("__TTL__", str(TTL_MS))

FINISHED_LUA = (
    _COMMON
    + """
local v = redis.call('HINCRBY', k, 'inflight', -1)
if v < 0 then
  redis.call('HSET', k, 'inflight', 0)
  v = 0
end
local bs = backs()
if #bs > 0 and (v == 0 or #bs > MOST_BACK) then
  local folded = bs
  if v > 0 then
    folded = {}
    for j = 1, #bs - MOST_BACK do folded[j] = bs[j] end
  end
  for _, w in ipairs(WINDOWS) do
    local left, at = num(w .. ':left'), num(w .. ':at')
    if left and at then redis.call('HSET', k, w .. ':left', left + credit(w, at, folded)) end
  end
  for _, b in ipairs(folded) do redis.call('HDEL', k, b[4]) end
end
return 1
"""
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _state(flat: list[Any]) -> State:
    return {_text(flat[i]): float(_text(flat[i + 1])) for i in range(0, len(flat) - 1, 2)}


def _arg(x: float | None) -> str:
    return "" if x is None else repr(float(x))


class RedisPace(RedisStore):
    """Pacing state in Redis. Errors are raised (`FailoverPace` is the store that never does)."""

    backend = "redis"

    def __init__(
        self,
        url_or_client: str | aioredis.Redis,
        *,
        prefix: str = "wb:pace:",
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
        self._admit = self._client.register_script(ADMIT_LUA)
        self._learn = self._client.register_script(LEARN_LUA)
        self._give_back = self._client.register_script(GIVE_BACK_LUA)
        self._finished = self._client.register_script(FINISHED_LUA)

    def name(self, key: str) -> str:
        return f"{self._prefix}{{{key}}}"

    async def admit(self, key: str, now_ms: int, tokens: int) -> tuple[Ticket | Paced, State]:
        out = await self._admit(keys=[self.name(key)], args=[int(now_ms), int(tokens)])
        if int(out[0]) == 1:
            return Ticket(key, int(out[1]), int(out[2]), int(tokens)), _state(out[3:])
        verdict = Paced(key, _text(out[1]), float(_text(out[2])), int(float(_text(out[3]))))
        return verdict, _state(out[4:])

    async def learn(self, key: str, readings: list[QuotaReading], ticket: Ticket | None) -> State:
        args: list[str] = [
            "" if ticket is None else str(ticket.seq),
            "" if ticket is None else str(ticket.tok),
        ]
        for r in readings:
            args += [
                f"{r.scope}:{r.window}",
                _arg(r.remaining),
                _arg(r.limit),
                _arg(r.reset_at_ms),
                "1" if r.source.startswith("429") else "0",
                str(r.observed_at_ms),
            ]
        return _state(await self._learn(keys=[self.name(key)], args=args))

    async def give_back(self, ticket: Ticket, used: int | None = None) -> State:
        # A whole request ("back") or only what its answer cost less than estimated ("over").
        args: list[int | str] = (
            [ticket.seq, ticket.tok, ticket.tokens, "back"]
            if used is None
            else [ticket.seq, ticket.tok, ticket.tokens - used, "over"]
        )
        return _state(await self._give_back(keys=[self.name(ticket.key)], args=args))

    async def finished(self, key: str) -> None:
        await self._finished(keys=[self.name(key)], args=[])

    async def state(self, key: str) -> State:
        found = await self._client.hgetall(self.name(key))
        return {_text(k): float(_text(v)) for k, v in found.items()}
