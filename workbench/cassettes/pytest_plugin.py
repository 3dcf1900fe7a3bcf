"""The pytest plugin: a test's provider traffic from a cassette, replayed by default.

    @pytest.mark.cassette("cassettes/weather")      # beside the test file; optional
    async def test_weather(workbench_cassette):
        router = load_config("providers.toml").build_router()
        router.use_cassette(workbench_cassette)
        ...

Replay is the default, so CI needs no key and no network; `pytest --workbench-record` records
every cassette the run uses afresh, `--workbench-record-missing` adds only what they lack.
Without the marker a test's cassette is `cassettes/<module>/<test>` beside its file.

Registered by the package (`[project.entry-points.pytest11]`, under this module's name), so
installing workbench is all it takes; from a source tree that is not installed, `-p
workbench.cassettes.pytest_plugin`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.cassettes.cassette import Cassette, CassetteMode, cassette_file


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workbench", "workbench cassettes")
    group.addoption(
        "--workbench-record",
        action="store_true",
        help="record every workbench cassette the tests use afresh (sends to the providers)",
    )
    group.addoption(
        "--workbench-record-missing",
        action="store_true",
        help="replay workbench cassettes and record only the requests they lack",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path): the workbench cassette folder of the test (relative to its file); "
        "replayed unless --workbench-record or --workbench-record-missing",
    )


def cassette_mode(config: pytest.Config) -> CassetteMode:
    if config.getoption("--workbench-record"):
        return "record"
    if config.getoption("--workbench-record-missing"):
        return "record_missing"
    return "replay"


@pytest.fixture
def workbench_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """The test's cassette, open in the mode the command line chose; closed (and rewritten in
    its stable order, when it recorded) after the test."""
    here = Path(str(request.node.path)).parent
    marker = request.node.get_closest_marker("cassette")
    if marker is not None and marker.args:
        folder = here / str(marker.args[0])
    else:
        test = re.sub(r"[^\w.-]+", "_", request.node.name)
        folder = here / "cassettes" / Path(str(request.node.path)).stem / test
    mode = cassette_mode(request.config)
    if mode == "replay" and not cassette_file(folder).exists():
        pytest.fail(
            f"CASSETTE_MISSING: no cassette to replay at {cassette_file(folder)} — record it "
            "once: pytest --workbench-record",
            pytrace=False,
        )
    with Cassette(folder, mode) as cassette:
        yield cassette


__all__ = ["cassette_mode", "workbench_cassette"]
