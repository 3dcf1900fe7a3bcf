"""`LoggedRouter` for a conversation routed turn by turn (an Inspect sample's tool loop): one
item, its attempts numbered across the turns, its replies journaled per turn, its prompt the
first turn's; and a store given open is left open for the next run on the file."""

from __future__ import annotations

import json

from workbench.eval.gateway import LoggedRouter
from workbench.eval.store.database import Store
from workbench.types import ChatRequest, user


def _providers(tmp_path, sim):
    path = tmp_path / "providers.toml"
    path.write_text(
        f'[router]\nname = "turns"\n[[providers]]\nid = "sim"\nbase_url = "{sim.openai_url}"\n'
        'key_env = "WB_TEST_TURNS_KEY"\nmodels = ["sim-native"]\n'
    )
    return path


async def test_the_turns_of_one_conversation_are_one_item(tmp_path, sim, monkeypatch):
    monkeypatch.setenv("WB_TEST_TURNS_KEY", "sk-turns-0123456789")
    with Store.open(tmp_path / "wb.duckdb") as store:
        logged = LoggedRouter.open(_providers(tmp_path, sim), store, dataset="inspect:t")
        first = ChatRequest.of("What is the capital of France?")
        one = await logged.route(first, item_id="s1")
        second = ChatRequest(
            messages=[
                *first.messages,
                {"role": "assistant", "content": one.value.text},
                user("And of Italy?"),
            ]
        )
        await logged.route(second, item_id="s1", turn=1, tries=len(one.attempts))
        run_id = logged.run_id
        await logged.aclose()
        # Given open, the store stays open: the next run on the file writes through it.
        assert store.run(run_id).status == "finished"
        store.add_output({"run_id": run_id, "item_id": "other", "repeat": 0, "config": "turns"})
        con = store.con
        ids = [
            json.loads(i)[-1] for (i,) in con.execute("SELECT attempt_id FROM attempts").fetchall()
        ]
        assert sorted(ids) == [0, 1]
        turns = con.execute(
            "SELECT turn FROM replies WHERE item_id = 's1' ORDER BY turn"
        ).fetchall()
        assert turns == [(0,), (1,)]
        prompt = con.execute("SELECT prompt FROM items WHERE item_id = 's1'").fetchall()
        assert prompt == [("What is the capital of France?",)]
