"""How every Redis-backed store in workbench connects: a client it owns or one it is given.

Owned clients get a blocking pool (a burst of concurrent calls queues for a connection
instead of failing "Too many connections"), socket timeouts, and no retries: redis-py's
default retries with backoff would stall requests for seconds when Redis dies, and the
stores decide themselves what a failure means (the quota fails over to memory).
"""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

log = logging.getLogger("workbench.redis")

# What counts as "Redis is not there" for a failover store. ConnectionError, TimeoutError
# and BusyLoadingError are RedisError subclasses; ResponseError (READONLY, OOM, MISCONF) is
# one too: any of them means what Redis holds cannot be trusted right now.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.RedisError,
    OSError,
    TimeoutError,
)


def redis_client(
    url_or_client: str | aioredis.Redis,
    *,
    socket_timeout_s: float,
    max_connections: int,
    pool_timeout_s: float,
) -> tuple[aioredis.Redis, bool]:
    """(client, owned): close an owned client when done; never close one you were given."""
    if not isinstance(url_or_client, str):
        return url_or_client, False
    pool = aioredis.BlockingConnectionPool.from_url(
        url_or_client,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_connect_timeout=socket_timeout_s,
        socket_timeout=socket_timeout_s,
        retry=Retry(NoBackoff(), 0),
    )
    return aioredis.Redis.from_pool(pool), True


class RedisStore:
    """A store over one Redis client, built from a URL (owned) or given (the caller's).

    What a failover store asks of any Redis store lives here once: PING to see whether Redis
    is back, dropping the pool's sockets when it went away, and closing only an owned client.
    """

    def __init__(
        self,
        url_or_client: str | aioredis.Redis,
        *,
        socket_timeout_s: float,
        max_connections: int,
        pool_timeout_s: float,
    ) -> None:
        self._client, self._owns_client = redis_client(
            url_or_client,
            socket_timeout_s=socket_timeout_s,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
        )

    @property
    def client(self) -> aioredis.Redis:
        return self._client

    async def ping(self, timeout_s: float = 0.2) -> None:
        """Raise unless the server answers PING within `timeout_s`."""
        await asyncio.wait_for(self._client.ping(), timeout_s)

    async def disconnect(self) -> None:
        """Drop pooled connections (they reconnect on next use)."""
        try:
            await self._client.connection_pool.disconnect()
        except Exception as exc:
            log.debug("dropping redis connections failed: %r", exc)

    async def close(self) -> None:
        if self._owns_client:
            await self._client.aclose()
