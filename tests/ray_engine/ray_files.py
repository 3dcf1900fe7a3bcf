"""What the Ray engine's tests write: providers files and prompt sets."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.sim.process import SimProcess


def providers_file(
    tmp_path: Path,
    sim: SimProcess,
    models: list[str | dict],
    *,
    redis_url: str | None,
    name: str = "ray",
    extra: str = "",
) -> Path:
    """A providers TOML pointing at the simulator process (no key: it asks for none)."""
    entries = ", ".join(
        json.dumps(m)
        if isinstance(m, str)
        else "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in m.items()) + " }"
        for m in models
    )
    router = f'[router]\nname = "{name}"\n'
    if redis_url:
        router += f'redis_url = "{redis_url}"\n'
    text = (
        f'{router}attempt_timeout_s = 10\n{extra}\n[[providers]]\nid = "simp"\n'
        f'base_url = "{sim.openai_url}"\nmodels = [{entries}]\n'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def pong_items(tmp_path: Path, count: int) -> Path:
    """`count` items every persona passes (the simulator echoes what it is told to say)."""
    path = tmp_path / f"pong-{count}.jsonl"
    lines = [
        json.dumps(
            {
                "id": f"pong-{n:03d}",
                "prompt": f"Reply with exactly: pong{n}",
                "expect": {"contains": f"pong{n}"},
            }
        )
        for n in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def wait_for_cpus(ray, count: int, timeout_s: float = 30.0) -> float:
    """Ray gives a stopped actor's CPU back a moment after it is killed: wait for it."""
    import time

    deadline = time.monotonic() + timeout_s
    while (free := ray.available_resources().get("CPU", 0)) < count:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return free
