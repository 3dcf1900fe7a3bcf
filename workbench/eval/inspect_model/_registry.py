"""What Inspect's `inspect_ai` entry point imports: the `workbench` model API, registered by
importing it (Inspect's `@modelapi` does). Its hooks register when the first model is made."""

from workbench.eval.inspect_model.provider import WorkbenchModel

__all__ = ["WorkbenchModel"]
