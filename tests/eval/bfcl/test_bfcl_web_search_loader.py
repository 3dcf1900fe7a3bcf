"""Web search's two categories load as BFCL prepares them (BFCL's own preparation is the
oracle): renamed ids, the snippet flag, the answer-format prompt first; memory refuses."""

from __future__ import annotations

import copy
import json
import zipfile

import pytest

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.agentic import AGENTIC_SYSTEM_PROMPT, WEB_SEARCH_FILE
from workbench.eval.suites.bfcl.loader import bfcl_dataset


def test_both_categories_load_every_entry_renamed_with_their_snippet_flag(bfcl_wheel):
    items = bfcl_dataset("web_search_base,web_search_no_snippet", source=bfcl_wheel).items
    assert len(items) == 200
    base, none = items[:100], items[100:]
    assert [i.id for i in base] == [f"web_search_base_{k}" for k in range(100)]
    assert [i.id for i in none] == [f"web_search_no_snippet_{k}" for k in range(100)]
    for item, snippet in [(base[7], True), (none[7], False)]:
        entry = item.expect.bfcl
        assert entry.kind == "agentic" and entry.involved_classes == ("WebSearchAPI",)
        assert entry.initial_config == {"WebSearchAPI": {"show_snippet": snippet}}
        assert [f["name"] for f in entry.functions] == ["search_engine_query", "fetch_url_content"]
        assert entry.turns[0][0] == {"role": "system", "content": AGENTIC_SYSTEM_PROMPT}
        assert item.messages[0]["role"] == "system" and item.messages[1]["role"] == "user"
        assert entry.answers and entry.source == str(bfcl_wheel)
        assert [t["function"]["name"] for t in item.tools] == [
            "search_engine_query",
            "fetch_url_content",
        ]


def test_entries_match_what_bfcls_own_preparation_makes(bfcl_wheel, bfcl_package):
    from bfcl_eval.utils import (  # type: ignore[import-not-found]
        populate_initial_settings_for_web_search_test_cases,
        process_agentic_test_case,
        process_web_search_test_case,
    )

    with zipfile.ZipFile(bfcl_wheel) as z:
        raw = z.read(f"bfcl_eval/data/{WEB_SEARCH_FILE}").decode()
        truth = z.read(f"bfcl_eval/data/possible_answer/{WEB_SEARCH_FILE}").decode()
    records = [json.loads(line) for line in raw.splitlines() if line.strip()]
    answers = [json.loads(line)["ground_truth"] for line in truth.splitlines() if line.strip()]
    for category in ("web_search_base", "web_search_no_snippet"):
        theirs = process_web_search_test_case(copy.deepcopy(records), category)
        theirs = process_agentic_test_case(
            populate_initial_settings_for_web_search_test_cases(theirs)
        )
        ours = [i.expect.bfcl for i in bfcl_dataset(category, source=bfcl_wheel).items]
        assert len(ours) == len(theirs) == 100
        for entry, bfcl, accepted in zip(ours, theirs, answers, strict=True):
            assert entry.id == bfcl["id"]
            assert [list(t) for t in entry.turns] == bfcl["question"]
            assert entry.initial_config == bfcl["initial_config"]
            assert list(entry.answers) == accepted


def test_limit_applies_per_category(bfcl_wheel):
    items = bfcl_dataset("web_search_no_snippet", source=bfcl_wheel, limit=3).items
    assert [i.id for i in items] == [f"web_search_no_snippet_{k}" for k in range(3)]


@pytest.mark.parametrize("category", ["memory_vector"])
def test_a_memory_category_without_its_extra_refuses_saying_why(bfcl_wheel, category, monkeypatch):
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else found(name, *a),
    )
    with pytest.raises(ConfigError) as caught:
        bfcl_dataset(category, source=bfcl_wheel)
    assert caught.value.code == "BFCL_CATEGORY_UNAVAILABLE"
    assert category in str(caught.value) and "workbench[bfcl-vector]" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_web_search_run_without_a_key_or_the_simulator_is_refused_before_it_starts(
    bfcl_wheel, tmp_path, monkeypatch
):
    import asyncio

    from workbench.eval.run.runner import run_prompt_set
    from workbench.eval.store.database import Store

    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    monkeypatch.delenv("WORKBENCH_BFCL_WEB", raising=False)
    dataset = bfcl_dataset("web_search_base", source=bfcl_wheel, limit=1)
    with Store.open(tmp_path / "w.duckdb") as store:
        with pytest.raises(ConfigError) as refused:
            asyncio.run(run_prompt_set(dataset, [], store, progress=False))
        assert refused.value.code == "BFCL_WEB_SEARCH_KEY"
        assert store.con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # nothing recorded
