"""What Inspect's `inspect_ai` entry point imports: the `workbench` model API, registered by
importing this module (Inspect's `@modelapi` does).

Inspect loads every entry point when it starts, whatever the model: so this module imports
nothing of workbench, and the provider (the router, DuckDB) is imported when a `workbench/...`
model is first made, as Inspect defers its own providers'. Its hooks register then too.
"""

from inspect_ai.model import ModelAPI, modelapi


@modelapi(name="workbench")
def workbench() -> type[ModelAPI]:
    from workbench.eval.inspect_model.provider import WorkbenchModel

    return WorkbenchModel


__all__ = ["workbench"]
