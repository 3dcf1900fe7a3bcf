"""Four processes, one Redis, one free tier whose limit is in no providers file: what one
process learns and sends, every process counts, so the 429s stay bounded as for one process.

Bounds, and why:
- OpenAI style (headers state the minute on every answer): at most one per process. Requests
  are numbered in Redis when they are let through, and may reach the provider in another
  order: a reading can miss one request numbered before it.
- Gemini style (nothing on success; the limit is only in a refusal): at most the requests in
  flight across the processes when the first window filled (4 × C), plus one per process for
  the guessed window length. Without sharing, each process would learn alone and pace only
  its own requests: every window would be over-asked.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pace_drive import drive, fleet_toml, persona, provider, refusals

from workbench.routing.router import Router
from workbench.sim.process import SimProcess

PROCESSES, C, N = 4, 2, 6  # 24 requests against 10 a second
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def shared_tier() -> Iterator[SimProcess]:
    personas = [persona(style, "rpm", 10) for style in ("openai", "gemini")]
    personas.append(persona("gemini", "rpm", 5, id="gemini-again"))
    with SimProcess(fleet_toml=fleet_toml(*personas)) as sim:
        yield sim


@pytest.mark.parametrize(
    ("style", "bound"), [("openai", PROCESSES), ("gemini", PROCESSES * (C + 1))]
)
def test_four_processes_share_what_the_provider_said(
    shared_tier: SimProcess, redis_url: str, style: str, bound: int
) -> None:
    model = f"{style}-rpm"
    start = time.time() + 1.5  # after every interpreter has started
    args = [style, shared_tier.base_url, model, redis_url, str(N), str(C), str(start)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "pace_drive.py"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    answered = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err[-2000:]
            answered.append(int(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:  # a process that hung is not left behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert answered == [N] * PROCESSES
    log = shared_tier.requests()
    assert (
        sum(1 for r in log if r.get("persona") == model and r.get("status") == 200) == N * PROCESSES
    )
    assert refusals(log, model) <= bound


async def test_a_router_started_later_paces_by_what_an_earlier_one_learnt(
    shared_tier: SimProcess, redis_url: str
) -> None:
    """Gemini states its limit only in a refusal: the first router pays for learning it (at
    most C 429s); a second one on the same Redis (the next run, another process) pays none."""
    model = "gemini-again"
    seen = []
    for _ in range(2):
        router = Router(
            [provider("gemini", shared_tier.base_url, model)],
            redis_url=redis_url,
            adaptive_concurrency=C,
            cooldown_jitter_s=0,
        )
        try:
            answers = await drive(router, 7, C)
        finally:
            await router.close()
        assert len(answers) == 7
        seen.append(refusals(shared_tier.requests(), model))
    first, both = seen
    assert 1 <= first <= C
    assert both == first  # the second router was refused nothing
