"""The evaluation workbench: a prompt set through one or more router configurations,
logged to DuckDB, graded, and read back as DataFrames and reports.

datasets         `load_dataset` → `Dataset` of `Item` (each with its `Expect`), checked whole
catalogue        `load_catalogue`: the tool specs a prompt set names by name
config           `load_config` / `load_providers` → `ProvidersConfig`: the providers file
litellm_config   a LiteLLM proxy config.yaml read as a providers file (`from_litellm`)
fleet_providers  `sim_providers`, `sim_chain_config`, `local_config`: simulator and local model
runner           `run_prompt_set`, `regrade` → `RunSummary`
store            `Store`: the DuckDB file every run, attempt, verdict and output lands in
grading          `grade` → `Grade`; grounding: `verify_answer` → `Verification` (`Violation`s
                 against `Fact`s, built with `make_fact` over `FACT_KINDS`, numbered by
                 `assign_fact_ids`, shown to the model by `render_facts`)
privacy, audit   `masker_for` (an item's masker); `audit_leaks` (did a sensitive value leave?)
probe            `probe_models`, `verdict_table`
analysis, report `Workbench` (DataFrames over a store); `write_report` (one HTML file a run)
chaos            `run_chaos` → `ChaosReport`
bfcl             BFCL's single-turn categories, graded as BFCL grades them (`workbench.eval.bfcl`)

Each name is imported from its module on first use, so `workbench.eval.datasets` alone does
not load pandas, matplotlib or DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

if TYPE_CHECKING:
    from workbench.eval.analysis import Workbench
    from workbench.eval.audit import audit_leaks
    from workbench.eval.catalogue import load_catalogue
    from workbench.eval.chaos import ChaosReport, run_chaos
    from workbench.eval.config import ProvidersConfig, load_config, load_providers
    from workbench.eval.datasets import Dataset, Expect, Item, load_dataset
    from workbench.eval.fleet_providers import local_config, sim_chain_config, sim_providers
    from workbench.eval.grading import Grade, grade
    from workbench.eval.grounding import (
        FACT_KINDS,
        Fact,
        Verification,
        Violation,
        assign_fact_ids,
        declared_fields,
        fact_ids,
        make_fact,
        render_facts,
        unrecorded_fields,
        verify_answer,
    )
    from workbench.eval.privacy import masker_for
    from workbench.eval.probe import probe_models, verdict_table
    from workbench.eval.report import write_report
    from workbench.eval.runner import RunSummary, regrade, run_prompt_set
    from workbench.eval.store import Store

# public name → the module of this package that defines it
_HOMES: dict[str, str] = {
    "Workbench": "analysis",
    "audit_leaks": "audit",
    "load_catalogue": "catalogue",
    "ChaosReport": "chaos",
    "run_chaos": "chaos",
    "ProvidersConfig": "config",
    "load_config": "config",
    "load_providers": "config",
    "Dataset": "datasets",
    "Expect": "datasets",
    "Item": "datasets",
    "load_dataset": "datasets",
    "local_config": "fleet_providers",
    "sim_chain_config": "fleet_providers",
    "sim_providers": "fleet_providers",
    "Grade": "grading",
    "grade": "grading",
    # The fact names are defined in the library (`workbench.text.facts`); `grounding`
    # re-exports them, and a home here is a module of this package.
    "FACT_KINDS": "grounding",
    "Fact": "grounding",
    "Verification": "grounding",
    "Violation": "grounding",
    "assign_fact_ids": "grounding",
    "declared_fields": "grounding",
    "fact_ids": "grounding",
    "make_fact": "grounding",
    "render_facts": "grounding",
    "unrecorded_fields": "grounding",
    "verify_answer": "grounding",
    "masker_for": "privacy",
    "probe_models": "probe",
    "verdict_table": "probe",
    "write_report": "report",
    "RunSummary": "runner",
    "regrade": "runner",
    "run_prompt_set": "runner",
    "Store": "store",
}

__all__ = [
    "FACT_KINDS",
    "ChaosReport",
    "Dataset",
    "Expect",
    "Fact",
    "Grade",
    "Item",
    "ProvidersConfig",
    "RunSummary",
    "Store",
    "Verification",
    "Violation",
    "Workbench",
    "assign_fact_ids",
    "audit_leaks",
    "declared_fields",
    "fact_ids",
    "grade",
    "load_catalogue",
    "load_config",
    "load_dataset",
    "load_providers",
    "local_config",
    "make_fact",
    "masker_for",
    "probe_models",
    "regrade",
    "render_facts",
    "run_chaos",
    "run_prompt_set",
    "sim_chain_config",
    "sim_providers",
    "unrecorded_fields",
    "verdict_table",
    "verify_answer",
    "write_report",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
