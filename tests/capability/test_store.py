from workbench.capability.decide import make_record
from workbench.capability.store import CapabilityStore, MemoryCapabilityStore

T0 = 1_767_225_600_000


def rec(verdict="native", via="live", at=T0, model="m", capability="tools"):
    return make_record("p", model, "s", capability, verdict, via, None, at)


def test_memory_store_is_a_capability_store():
    assert isinstance(MemoryCapabilityStore(), CapabilityStore)


async def test_get_missing_is_none_and_put_then_get():
    store = MemoryCapabilityStore()
    assert await store.get("p", "m", "s", "tools") is None
    assert await store.put(rec()) is True
    assert await store.get("p", "m", "s", "tools") == rec()
    assert await store.get("p", "m", "s", "vision") is None
    assert await store.get("p", "m", "other-scope", "tools") is None


async def test_put_applies_should_replace():
    store = MemoryCapabilityStore()
    assert await store.put(rec("native", "live", T0))
    assert not await store.put(rec("none", "probe", T0 + 1))  # weaker provenance loses
    assert (await store.get("p", "m", "s", "tools")).verdict == "native"
    assert await store.put(rec("none", "live", T0 + 1))  # same rank, newer wins
    assert (await store.get("p", "m", "s", "tools")).verdict == "none"
    assert not await store.put(rec("text", "live", T0))  # same rank, older loses
    assert len(store) == 1


async def test_all_lists_every_key_once():
    store = MemoryCapabilityStore()
    await store.put(rec(model="a"))
    await store.put(rec(model="b"))
    await store.put(rec(model="a", capability="vision"))
    await store.put(rec(model="a", at=T0 + 5))
    got = await store.all()
    assert sorted((r.model, r.capability) for r in got) == [
        ("a", "tools"),
        ("a", "vision"),
        ("b", "tools"),
    ]


async def test_the_memory_store_returns_the_protocol_family_it_was_given():
    store = MemoryCapabilityStore()
    seen = make_record("p", "m", "s", "tools", "text", "live", "prose", T0, "mistral")
    assert await store.put(seen)
    got = await store.get("p", "m", "s", "tools")
    assert got is not None and got.protocol_family == "mistral"
    assert [r.protocol_family for r in await store.all()] == ["mistral"]
