"""Inspect AI's `workbench` model provider: `inspect eval TASK --model workbench/chain -M
providers=FILE -M db=FILE` sends every generate of Inspect through a providers file's chain and
logs every attempt to a workbench DuckDB file (`workbench/<provider>:<model>` pins one model).

Needs the `inspect` extra; Inspect finds the provider through the `inspect_ai` entry point
(`_registry.py`), so installing the extra is all it takes.
"""
