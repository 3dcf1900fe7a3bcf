"""Where a run's jobs are made: in this process (the local engine) or spread over Ray actors.

Both are an `Engine`: `run_prompt_set` asks it for the configurations' names before the run is
recorded (everything that can refuse the run refuses then), hands it the jobs, and closes it
whatever ends the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from workbench.config.providers_file import ProvidersConfig
    from workbench.eval.run.jobs import Job, JobSettings
    from workbench.eval.run.options import RunConfig
    from workbench.eval.store.database import OutputRow, Store
    from workbench.routing import Router


class Engine(Protocol):
    def describe(self) -> Any:
        """What the run's row records as its engine."""
        ...

    async def prepare(
        self, entries: Sequence[Router | ProvidersConfig], config: RunConfig
    ) -> list[str]: ...

    async def run(
        self,
        jobs: list[Job],
        entries: Sequence[Router | ProvidersConfig],
        store: Store,
        settings: JobSettings,
        finished: Callable[[OutputRow], Any],
    ) -> list[dict[str, Any]]: ...

    async def close(self) -> None: ...
