"""The evaluation workbench: a prompt set through one or more router configurations,
logged to DuckDB, graded, and read back as DataFrames and reports.

dataset/      `load_dataset` → `Dataset` of `Item` (each with its `Expect`), checked whole;
              `load_catalogue` (the tool specs a prompt set names by name); `masker_for`
run/          `run_prompt_set` (its settings a `RunConfig`, its callbacks `RunHooks`),
              `regrade` → `RunSummary`
engines/      where a run's jobs are made: this process, or Ray actors (`engines/ray/`)
store/        `Store`: the DuckDB file every run, attempt, verdict and output lands in
scoring/      `grade` → `Grade`; `verify_answer` → `Verification` (`Violation`s against
              `Fact`s, built with `make_fact` over `FACT_KINDS`, numbered by
              `assign_fact_ids`, shown to the model by `render_facts`)
analysis/     `RunFrames` (DataFrames over a store); the regression gate
report/       `write_report`: one HTML file a run
export/       a run as Inspect AI logs or OpenTelemetry spans
diagnostics/  `probe_models`, `verdict_table`; `run_chaos` → `ChaosReport`; `audit_leaks`
inspect_model/ Inspect AI's `workbench/...` model provider (`inspect eval --model workbench/chain`)
suites/bfcl/  BFCL, graded as BFCL grades it (`workbench.eval.suites.bfcl`)

A run that names no providers file gets the default fleet: `async with default_fleet()` →
`DefaultFleet`, the simulator plus the local model when it is installed. The providers file
(`load_config`, `ProvidersConfig`) and the fleet's parts (`sim_providers`, `sim_chain_config`,
`local_config`) are library code (`workbench.config`, `workbench.sim`, `workbench.local`),
re-exported here because a run starts from them.

Each name is imported from its module on first use, so `workbench.eval.dataset` alone does
not load pandas, matplotlib or DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names

if TYPE_CHECKING:
    from workbench.config.providers_file import ProvidersConfig, load_config, load_providers
    from workbench.eval.analysis.frames import RunFrames
    from workbench.eval.dataset.masking import masker_for
    from workbench.eval.dataset.prompt_set import Dataset, Expect, Item, load_dataset
    from workbench.eval.dataset.tool_specs import load_catalogue
    from workbench.eval.diagnostics.audit import audit_leaks
    from workbench.eval.diagnostics.chaos import ChaosReport, run_chaos
    from workbench.eval.diagnostics.probe import probe_models, verdict_table
    from workbench.eval.report.page import write_report
    from workbench.eval.run.default_fleet import DefaultFleet, default_fleet
    from workbench.eval.run.options import RunConfig, RunHooks
    from workbench.eval.run.runner import regrade, run_prompt_set
    from workbench.eval.run.summary import RunSummary
    from workbench.eval.scoring.grading import Grade, grade
    from workbench.eval.scoring.grounding import (
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
    from workbench.eval.store.database import Store
    from workbench.local.provider_config import local_config
    from workbench.sim.fleet_providers import sim_chain_config, sim_providers

# public name → the module that defines it (relative to this package, or absolute)
_HOMES: dict[str, str] = {
    "RunFrames": "analysis.frames",
    "audit_leaks": "diagnostics.audit",
    "load_catalogue": "dataset.tool_specs",
    "ChaosReport": "diagnostics.chaos",
    "run_chaos": "diagnostics.chaos",
    "ProvidersConfig": "workbench.config.providers_file",
    "load_config": "workbench.config.providers_file",
    "load_providers": "workbench.config.providers_file",
    "Dataset": "dataset.prompt_set",
    "Expect": "dataset.prompt_set",
    "Item": "dataset.prompt_set",
    "load_dataset": "dataset.prompt_set",
    "local_config": "workbench.local.provider_config",
    "sim_chain_config": "workbench.sim.fleet_providers",
    "sim_providers": "workbench.sim.fleet_providers",
    "DefaultFleet": "run.default_fleet",
    "default_fleet": "run.default_fleet",
    "Grade": "scoring.grading",
    "grade": "scoring.grading",
    # The fact names are defined in the library (`workbench.text.facts`); `grounding`
    # re-exports them.
    "FACT_KINDS": "scoring.grounding",
    "Fact": "scoring.grounding",
    "Verification": "scoring.grounding",
    "Violation": "scoring.grounding",
    "assign_fact_ids": "scoring.grounding",
    "declared_fields": "scoring.grounding",
    "fact_ids": "scoring.grounding",
    "make_fact": "scoring.grounding",
    "render_facts": "scoring.grounding",
    "unrecorded_fields": "scoring.grounding",
    "verify_answer": "scoring.grounding",
    "masker_for": "dataset.masking",
    "probe_models": "diagnostics.probe",
    "verdict_table": "diagnostics.probe",
    "write_report": "report.page",
    "RunConfig": "run.options",
    "RunHooks": "run.options",
    "RunSummary": "run.summary",
    "regrade": "run.runner",
    "run_prompt_set": "run.runner",
    "Store": "store.database",
}

__all__ = [
    "FACT_KINDS",
    "ChaosReport",
    "Dataset",
    "DefaultFleet",
    "Expect",
    "Fact",
    "Grade",
    "Item",
    "ProvidersConfig",
    "RunConfig",
    "RunFrames",
    "RunHooks",
    "RunSummary",
    "Store",
    "Verification",
    "Violation",
    "assign_fact_ids",
    "audit_leaks",
    "declared_fields",
    "default_fleet",
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
