"""A real local Ray cluster (`num_cpus=2`) for the whole module, a real `redis-server` (the
session's, from tests/conftest.py) and real simulator processes.

The cluster is started once: `RayEngine` sees `ray.is_initialized()` and uses it as it is, so
every test pays for its workers, not for Ray's start.
"""

from __future__ import annotations

import logging
import os

import pytest

from workbench.sim.process import SimProcess

# One persona per behaviour a test needs; every answer is read from the prompt, so the same
# item gets the same answer from any worker, in any order.
FLEET = """\
seed = 7
description = "ray tests"

[[persona]]
id = "fast"
tool_style = "native"
latency_ms = 2
latency_jitter_ms = 0
ttft_ms = 0

[[persona]]
id = "slow"
tool_style = "native"
latency_ms = 60
latency_jitter_ms = 0
ttft_ms = 0

[[persona]]
id = "limited"
tool_style = "native"
latency_ms = 2
latency_jitter_ms = 0
ttft_ms = 0
"""


@pytest.fixture(scope="session")
def ray_cluster():
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI installs the `ray` extra (scripts/test does)")
        pytest.skip("the `ray` extra is not installed")
    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            object_store_memory=200 * 1024 * 1024,
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def sim_process():
    with SimProcess(fleet_toml=FLEET) as sim:
        yield sim


@pytest.fixture
def sim(sim_process):
    sim_process.reset()
    return sim_process
