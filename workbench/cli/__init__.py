"""The `workbench` command: `main` parses the verb and hands it to its module."""

from workbench.cli.main import main

__all__ = ["main"]
