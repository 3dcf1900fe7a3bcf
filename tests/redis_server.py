"""The tests' redis-server is the one the Ray engine starts for a local cluster."""

from workbench._redis_server import RedisServer, free_port, redis_server_binary

__all__ = ["RedisServer", "free_port", "redis_server_binary"]
