"""One plain and one `--tools` SmolLM2 server for the whole session, started only when a test
asks for it (each is a child process that loads the model, ~1 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_model():
    from workbench.local.server import LocalModel

    with LocalModel(n_ctx=1024) as lm:
        yield lm


@pytest.fixture(scope="session")
def local_tools_model():
    from workbench.local.server import LocalModel

    with LocalModel(n_ctx=1024, tools=True) as lm:
        yield lm
