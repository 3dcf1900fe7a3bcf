"""The tests' redis-server is the one the Ray engine starts for a local cluster; and how a
test counts the PINGs a failover store sends to see whether Redis is back."""

from typing import Any

from workbench._redis_server import RedisServer, free_port, redis_server_binary

__all__ = ["RedisServer", "count_pings", "free_port", "redis_server_binary"]


def count_pings(store: Any) -> list[float]:
    """Every PING `store`'s Redis side sends from now on, kept in the list returned (its length
    is the count), each still sent."""
    pings: list[float] = []
    real_ping = store.redis.ping

    async def counting_ping(timeout_s: float = 0.2) -> None:
        pings.append(timeout_s)
        await real_ping(timeout_s)

    store.redis.ping = counting_ping
    return pings
