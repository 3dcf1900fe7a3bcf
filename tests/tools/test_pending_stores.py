"""The action stores (memory, a real DuckDB file, the workbench Store's `store.actions` on its
own file, a real redis-server) keep the cycle's promises; Redis keeps them across OS
processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import traceback
from typing import Any

import duckdb
import pytest
import redis.asyncio as aioredis

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.store.database import Store, StoreActionStore
from workbench.events import ActionEvent
from workbench.tools.pending import Action, ActionStore, MemoryActionStore, PendingActions
from workbench.tools.pending_duckdb import DuckDBActionStore
from workbench.tools.pending_redis import RedisActionStore

PAYLOAD = {"to": "famille@x.cd", "body": "Bonjour 👋", "n": 12345678901234567, "x": 0.1}
# What a careless JSON layer would mangle: empty list vs object, big ints, float digits.
TRICKY = {
    "empty_list": [],
    "empty_obj": {},
    "big": 2**62 + 1,
    "pi": 3.141592653589793,
    "nested": {"a": [1, {"b": None}]},
    "text": 'é"\\\n',
    "neg": -0.5,
}


class Counter:
    def __init__(self, reply: Any = None, raises: BaseException | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.reply = {"sent": True} if reply is None else reply
        self.raises = raises

    async def __call__(self, payload: dict[str, Any]) -> Any:
        self.calls.append(payload)
        await asyncio.sleep(0.01)  # a real tool awaits: the window a double claim would need
        if self.raises is not None:
            raise self.raises
        return self.reply


@pytest.fixture(params=["memory", "duckdb", "workbench", "redis"])
async def store(request, tmp_path):
    if request.param == "memory":
        yield MemoryActionStore()
    elif request.param == "duckdb":
        s = DuckDBActionStore(tmp_path / "actions.duckdb")
        yield s
        s.close()
    elif request.param == "workbench":  # the Store's own: every statement a Store method's
        wb = Store.open(tmp_path / "workbench.duckdb")
        yield wb.actions
        wb.close()
    else:
        s = RedisActionStore(request.getfixturevalue("redis_url"))
        # Open the pool's connections first: redis-py opens new ones one at a time, which
        # would serialise the approvals below and hide a race instead of testing it.
        await asyncio.gather(*(s.client.ping() for _ in range(50)))
        yield s
        await s.close()


def test_every_store_satisfies_the_protocol(store) -> None:
    assert isinstance(store, ActionStore)


async def test_full_cycle(store) -> None:
    tool = Counter()
    events: list[ActionEvent] = []
    sas = PendingActions(store, {"send_email": tool}, sinks=[events.append], run_id="r1")
    action = await sas.propose("send_email", PAYLOAD, "agent")
    assert (await sas.get(action.id)) == action and action.run_id == "r1"
    assert [a.id for a in await sas.list("pending")] == [action.id]
    done = await sas.approve(action.id, "alice")
    assert done.status == "executed" and done.result == {"sent": True}
    assert tool.calls == [PAYLOAD]
    again = await sas.get(action.id)  # read back from the store
    assert again == done and again.payload == PAYLOAD
    assert [h["status"] for h in again.history] == ["pending", "executing", "executed"]
    assert [e.status for e in events] == ["pending", "executing", "executed"]
    assert await sas.list("pending") == [] and [a.id for a in await sas.list()] == [action.id]


async def test_payload_round_trips_exactly(store) -> None:
    tool = Counter()
    sas = PendingActions(store, {"t": tool})
    action = await sas.propose("t", TRICKY, "agent")
    assert (await sas.get(action.id)).payload == TRICKY
    await sas.approve(action.id, "alice", amend={"empty_list": [], "more": {}})
    assert tool.calls == [{**TRICKY, "more": {}}]
    got = await sas.get(action.id)
    assert got.amended == {"empty_list": [], "more": {}} and got.history[1]["draft"] == TRICKY


async def test_fifty_concurrent_approvals_execute_once(store) -> None:
    tool = Counter()
    sas = PendingActions(store, {"send_email": tool})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    results = await asyncio.gather(
        *(sas.approve(action.id, f"human{i}") for i in range(50)), return_exceptions=True
    )
    executed = [r for r in results if isinstance(r, Action)]
    refused = [r for r in results if isinstance(r, WorkbenchError)]
    assert len(executed) == 1 and executed[0].status == "executed", results[:3]
    assert len(refused) == 49 and all(r.code == "ACTION_NOT_PENDING" for r in refused)
    assert len(tool.calls) == 1
    assert (await store.get(action.id)).status == "executed"


async def test_dedupe_returns_the_same_pending_action(store) -> None:
    sas = PendingActions(store, {"send_email": Counter(), "remind": Counter()})
    first = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k1")
    burst = await asyncio.gather(
        *(sas.propose("send_email", {"i": i}, "agent", dedupe_key="k1") for i in range(20))
    )
    assert {a.id for a in burst} == {first.id} and all(a.payload == PAYLOAD for a in burst)
    other_name = await sas.propose("remind", PAYLOAD, "agent", dedupe_key="k1")
    other_key = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k2")
    assert len({first.id, other_name.id, other_key.id}) == 3
    assert len(await sas.list()) == 3
    await sas.approve(first.id, "alice")  # executed: no longer blocks the key
    fresh = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k1")
    assert fresh.id != first.id and fresh.status == "pending"
    assert len(await sas.list("pending")) == 3


async def test_an_executing_action_still_blocks_its_dedupe_key(store) -> None:
    gate = asyncio.Event()

    async def slow(payload: dict[str, Any]) -> dict[str, Any]:
        await gate.wait()
        return {"sent": True}

    sas = PendingActions(store, {"send_email": slow})
    first = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k")
    running = asyncio.create_task(sas.approve(first.id, "alice"))
    for _ in range(200):
        if (await store.get(first.id)).status == "executing":
            break
        await asyncio.sleep(0.005)
    again = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k")
    assert again.id == first.id and again.status == "executing"
    gate.set()
    assert (await running).status == "executed"


async def test_amend_is_recorded_with_who_amended(store) -> None:
    tool = Counter()
    sas = PendingActions(store, {"send_email": tool})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    await sas.approve(action.id, "alice", amend={"to": "bonne-adresse@x.cd"})
    got = await sas.get(action.id)
    assert tool.calls == [{**PAYLOAD, "to": "bonne-adresse@x.cd"}] == [got.payload]
    assert got.amended == {"to": "bonne-adresse@x.cd"} and got.amended_by == "alice"
    assert got.history[1] == {
        "at_ms": got.history[1]["at_ms"],
        "status": "executing",
        "by": "alice",
        "draft": PAYLOAD,
    }


async def test_a_raising_tool_is_failed(store) -> None:
    sas = PendingActions(store, {"send_email": Counter(raises=TimeoutError("smtp slow"))})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    await sas.approve(action.id, "alice")
    got = await sas.get(action.id)
    assert got.status == "failed" and got.error == "TimeoutError: smtp slow"
    assert await sas.list("executed") == []


async def test_a_tool_returning_an_error_is_failed(store) -> None:
    sas = PendingActions(store, {"send_email": Counter(reply={"error": "mailbox full"})})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    await sas.approve(action.id, "alice")
    got = await sas.get(action.id)
    assert got.status == "failed" and got.error == "mailbox full"
    assert got.result == {"error": "mailbox full"}


async def test_reject_then_approve_is_not_pending(store) -> None:
    tool = Counter()
    sas = PendingActions(store, {"send_email": tool})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    await sas.reject(action.id, "bob", note="mauvais destinataire")
    got = await sas.get(action.id)
    assert got.status == "rejected" and got.note == "mauvais destinataire"
    assert got.decided_by == "bob"
    with pytest.raises(WorkbenchError) as err:
        await sas.approve(action.id, "alice")
    assert err.value.code == "ACTION_NOT_PENDING" and err.value.details["status"] == "rejected"
    assert tool.calls == []


async def test_concurrent_reject_and_approve_one_wins(store) -> None:
    tool = Counter()
    sas = PendingActions(store, {"send_email": tool})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    calls = [sas.reject(action.id, f"r{i}") for i in range(10)]
    calls += [sas.approve(action.id, f"a{i}") for i in range(10)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    winners = [r for r in results if isinstance(r, Action)]
    assert len(winners) == 1
    final = await sas.get(action.id)
    assert final.status in ("rejected", "executed")
    assert len(tool.calls) == (1 if final.status == "executed" else 0)


async def test_store_level_guards(store) -> None:
    sas = PendingActions(store, {"send_email": Counter()})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    with pytest.raises(WorkbenchError) as err:  # only an executing action can be finished
        await store.finish(action.id, "executed")
    assert err.value.code == "ACTION_NOT_EXECUTING"
    with pytest.raises(WorkbenchError, match="ACTION_DUPLICATE_ID"):
        await store.insert(action)
    assert await store.claim("missing", "x", None) is None
    assert await store.reject("missing", "x", None) is None
    assert await store.get("missing") is None


async def test_list_newest_first_and_filters(store) -> None:
    now = [1_000]

    def clock() -> int:
        now[0] += 10
        return now[0]

    a = PendingActions(store, {"t": Counter()}, clock_ms=clock, run_id="a")
    b = PendingActions(store, {"t": Counter()}, clock_ms=clock, run_id="b")
    first = await a.propose("t", {}, "agent")
    other = await b.propose("t", {}, "agent")
    second = await a.propose("t", {}, "agent")
    await a.approve(first.id, "alice")
    assert [x.id for x in await store.list()] == [second.id, other.id, first.id]
    assert [x.id for x in await a.list()] == [second.id, first.id]
    assert [x.id for x in await store.list(status="executed")] == [first.id]
    assert [x.id for x in await store.list(status="pending", run_id="b")] == [other.id]
    got = await store.get(first.id)
    assert got.created_at_ms == 1_010 and got.updated_at_ms == 1_050


class StaleReads:
    """Mixin: once `stale` is set, the store's own read answers the last PENDING snapshot it
    saw of an action, so a claim or a rejection is computed from a stale row. Only the
    store's guarded write (the status compared in the same statement or script) can then
    stop a second move."""

    stale = False

    def _snapshot(self, action_id: str, fresh: dict[str, Any] | None) -> dict[str, Any] | None:
        seen: dict[str, Any] = self.__dict__.setdefault("_pending_seen", {})
        if fresh is not None and fresh["status"] == "pending":
            seen[action_id] = fresh
        return seen.get(action_id, fresh) if self.stale else fresh


class StaleDuckDB(StaleReads, DuckDBActionStore):
    def _fetch(self, action_id: str) -> dict[str, Any] | None:
        return self._snapshot(action_id, super()._fetch(action_id))


class StaleWorkbench(StaleReads, StoreActionStore):
    def _fetch(self, action_id: str) -> dict[str, Any] | None:
        return self._snapshot(action_id, super()._fetch(action_id))


class StaleRedis(StaleReads, RedisActionStore):
    async def _read(self, action_id: str) -> dict[str, Any] | None:
        return self._snapshot(action_id, await super()._read(action_id))


@pytest.fixture(params=["duckdb", "workbench", "redis"])
async def stale_store(request, tmp_path):
    if request.param == "duckdb":
        s = StaleDuckDB(tmp_path / "stale.duckdb")
        yield s
        s.close()
    elif request.param == "workbench":
        wb = Store.open(tmp_path / "stale.duckdb")
        yield StaleWorkbench(wb)
        wb.close()
    else:
        s = StaleRedis(request.getfixturevalue("redis_url"))
        yield s
        await s.close()


async def test_a_move_computed_from_a_stale_read_still_loses(stale_store) -> None:
    tool = Counter()
    sas = PendingActions(stale_store, {"send_email": tool})
    done = await sas.propose("send_email", PAYLOAD, "agent")
    refused = await sas.propose("send_email", PAYLOAD, "agent")
    await stale_store.get(done.id)  # snapshots taken while pending
    await stale_store.get(refused.id)
    assert (await sas.approve(done.id, "alice")).status == "executed"
    assert (await sas.reject(refused.id, "bob")).status == "rejected"
    stale_store.stale = True
    assert (await stale_store.get(done.id)).status == "pending"  # the read is stale
    for action_id in (done.id, refused.id):
        assert await stale_store.claim(action_id, "mallory", {"to": "x"}) is None
        assert await stale_store.reject(action_id, "mallory", None) is None
    stale_store.stale = False
    assert (await stale_store.get(done.id)).status == "executed"
    assert (await stale_store.get(refused.id)).status == "rejected"
    assert len(tool.calls) == 1


# --------------------------------------------------------------------------- DuckDB
EXPECTED_ACTIONS_COLUMNS = [
    ("action_id", "VARCHAR"),
    ("run_id", "VARCHAR"),
    ("action", "VARCHAR"),
    ("payload", "JSON"),
    ("status", "VARCHAR"),
    ("proposed_by", "VARCHAR"),
    ("decided_by", "VARCHAR"),
    ("amended", "JSON"),
    ("dedupe_key", "VARCHAR"),
    ("history", "JSON"),
    ("created_at_ms", "BIGINT"),
    ("updated_at_ms", "BIGINT"),
]


def _columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'actions' ORDER BY ordinal_position"
    ).fetchall()
    return [(n, t) for n, t in rows]


def _primary_key(con: duckdb.DuckDBPyConnection) -> list[Any]:
    return con.execute(
        "SELECT constraint_column_names FROM duckdb_constraints() "
        "WHERE table_name = 'actions' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall()


def test_duckdb_creates_the_workbench_actions_table_when_missing(tmp_path) -> None:
    from workbench.eval.store.schema import COLUMNS

    con = duckdb.connect()
    DuckDBActionStore(con)
    assert _columns(con) == EXPECTED_ACTIONS_COLUMNS == list(COLUMNS["actions"].items())
    # The same table as the workbench's frozen migration gives a fresh file, key included.
    with Store.open(tmp_path / "wb.duckdb") as wb:
        assert _columns(wb.con) == _columns(con)
        assert _primary_key(wb.con) == _primary_key(con) == [(["action_id"],)]


async def test_the_workbench_files_actions_go_through_its_store(tmp_path) -> None:
    from workbench.eval.store.database import migrate

    path = tmp_path / "workbench.duckdb"
    con = duckdb.connect(str(path))
    migrate(con, path)  # the file exactly as the workbench creates it
    with pytest.raises(ConfigError) as refused:  # a second writer of a workbench store
        DuckDBActionStore(con)
    assert refused.value.code == "ACTION_INVALID" and "Store.open(path).actions" in str(
        refused.value
    )
    con.close()
    with pytest.raises(ConfigError):
        DuckDBActionStore(path)
    with Store.open(path) as store:
        sas = PendingActions(store.actions, {"send_email": Counter()}, run_id="run-7")
        action = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="d")
        await sas.approve(action.id, "alice", amend={"to": "b@x.cd"})
        row = store.con.execute(
            "SELECT action_id, run_id, action, payload->>'$.to', status, proposed_by, decided_by, "
            "amended->>'$.to', dedupe_key, json_array_length(history), created_at_ms <= "
            "updated_at_ms FROM actions"
        ).fetchall()
    assert row == [
        (
            action.id,
            "run-7",
            "send_email",
            "b@x.cd",
            "executed",
            "agent",
            "alice",
            "b@x.cd",
            "d",
            3,
            True,
        ),
    ]
    reader = DuckDBActionStore(duckdb.connect(str(path), read_only=True))  # reading is fine
    got = await reader.get(action.id)
    assert got is not None and got.status == "executed" and got.amended_by == "alice"
    reader.close()


async def test_duckdb_reads_a_read_only_file(tmp_path) -> None:
    path = tmp_path / "ro.duckdb"
    writer = DuckDBActionStore(path)
    action = await PendingActions(writer, {"t": Counter()}).propose("t", PAYLOAD, "agent")
    writer.close()
    reader = DuckDBActionStore(duckdb.connect(str(path), read_only=True))
    try:
        assert [a.id for a in await reader.list("pending")] == [action.id]
    finally:
        reader.con.close()


@pytest.mark.parametrize("kind", ["duckdb", "workbench"])
async def test_duckdb_threads_sharing_one_connection_execute_once(tmp_path, kind) -> None:
    if kind == "duckdb":
        store = DuckDBActionStore(tmp_path / "threads.duckdb")
    else:
        wb = Store.open(tmp_path / "threads.duckdb")
        store = wb.actions
    calls: list[str] = []
    lock = threading.Lock()

    async def tool(payload: dict[str, Any]) -> dict[str, Any]:
        with lock:
            calls.append(threading.current_thread().name)
        return {"sent": True}

    sas = PendingActions(store, {"send_email": tool})
    action = await sas.propose("send_email", PAYLOAD, "agent")
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def worker(i: int) -> None:
        async def run() -> list[Any]:
            return await asyncio.gather(
                *(sas.approve(action.id, f"t{i}-{j}") for j in range(10)),
                return_exceptions=True,
            )

        barrier.wait()
        for r in asyncio.run(run()):
            with lock:
                if isinstance(r, Action):
                    outcomes.append(r.status)
                elif isinstance(r, WorkbenchError):
                    outcomes.append(r.code)
                else:
                    outcomes.append(repr(r))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    (store.close if kind == "duckdb" else wb.close)()
    assert sorted(set(outcomes)) == ["ACTION_NOT_PENDING", "executed"], outcomes[:3]
    assert outcomes.count("executed") == 1 and len(outcomes) == 80 and len(calls) == 1


# --------------------------------------------------------------------------- Redis
async def test_redis_instances_share_actions_and_prefixes_isolate(redis_url) -> None:
    one, two = RedisActionStore(redis_url), RedisActionStore(redis_url)
    elsewhere = RedisActionStore(redis_url, prefix="other:")
    client = aioredis.from_url(redis_url, decode_responses=True)
    mine = RedisActionStore(client)  # a caller-owned client, decoding responses
    try:
        sas = PendingActions(one, {"send_email": Counter()})
        action = await sas.propose("send_email", PAYLOAD, "agent", dedupe_key="k")
        assert (await two.get(action.id)) == action == (await mine.get(action.id))
        assert await elsewhere.get(action.id) is None and await elsewhere.list() == []
        deduped = await PendingActions(two, {"send_email": Counter()}).propose(
            "send_email", {}, "agent", dedupe_key="k"
        )
        assert deduped.id == action.id
        done = await PendingActions(mine, {"send_email": Counter()}).approve(action.id, "al")
        assert done.status == "executed" and (await one.get(action.id)) == done
        assert await client.hget(f"wb:actions:a:{action.id}", "status") == "executed"
    finally:
        for s in (one, two, elsewhere, mine):
            await s.close()
        await client.aclose()


PROCESSES = 4
PER_PROCESS = 13


def _approve_worker(url: str, action_id: str, ready: Any, go: Any, out: Any) -> None:
    try:
        out.put(asyncio.run(_approve_run(url, action_id, ready, go)))
    except BaseException:
        ready.put("failed")
        out.put(traceback.format_exc())


class SlowReadRedis(RedisActionStore):
    """A slow network between the read and the guarded write: every process reads `pending`
    before anyone claims, so only the Lua script's status check can keep it to one."""

    async def _read(self, action_id: str) -> dict[str, Any] | None:
        row = await super()._read(action_id)
        await asyncio.sleep(0.02)
        return row


async def _approve_run(url: str, action_id: str, ready: Any, go: Any) -> tuple[int, int, list]:
    store = SlowReadRedis(url)
    await asyncio.gather(*(store.client.ping() for _ in range(PER_PROCESS)))  # open the pool
    counter = aioredis.from_url(url)

    async def send_email(payload: dict[str, Any]) -> dict[str, Any]:
        await counter.rpush("test:executions", f"{os.getpid()}:{payload['to']}")
        await asyncio.sleep(0.05)
        return {"sent": True}

    sas = PendingActions(store, {"send_email": send_email})
    ready.put(os.getpid())
    go.wait(30)  # everybody starts together (blocking is fine: nothing else runs here)
    results = await asyncio.gather(
        *(sas.approve(action_id, f"human-{os.getpid()}-{i}") for i in range(PER_PROCESS)),
        return_exceptions=True,
    )
    await store.close()
    await counter.aclose()
    executed = sum(1 for r in results if isinstance(r, Action) and r.status == "executed")
    refused = sum(
        1 for r in results if isinstance(r, WorkbenchError) and r.code == "ACTION_NOT_PENDING"
    )
    others = [repr(r) for r in results if not isinstance(r, Action | WorkbenchError)]
    return executed, refused, others


def test_redis_four_processes_execute_once(redis_url) -> None:
    async def propose() -> str:
        store = RedisActionStore(redis_url)
        try:
            sas = PendingActions(store, {"send_email": Counter()})
            return (await sas.propose("send_email", PAYLOAD, "agent")).id
        finally:
            await store.close()

    action_id = asyncio.run(propose())
    ctx = multiprocessing.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(target=_approve_worker, args=(redis_url, action_id, ready, go, out))
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    try:
        assert all(ready.get(timeout=60) != "failed" for _ in procs)
        go.set()
        results = [out.get(timeout=60) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=10)
    errors = [r for r in results if isinstance(r, str)]
    assert not errors, errors[0]
    assert sum(r[0] for r in results) == 1
    assert sum(r[1] for r in results) == PROCESSES * PER_PROCESS - 1
    assert all(not r[2] for r in results), results

    async def check() -> tuple[list[bytes], Action | None]:
        client = aioredis.from_url(redis_url)
        store = RedisActionStore(redis_url)
        try:
            return await client.lrange("test:executions", 0, -1), await store.get(action_id)
        finally:
            await client.aclose()
            await store.close()

    executions, final = asyncio.run(check())
    assert len(executions) == 1 and executions[0].endswith(b":famille@x.cd")
    assert final is not None and final.status == "executed"
