"""`LocalEngine`: a run's jobs made in this process, `concurrency` at a time, each row logged
straight to the store."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from workbench.config.providers_file import ProvidersConfig
from workbench.eval.run.jobs import Configuration, Job, JobSettings, build_configs, run_jobs
from workbench.eval.run.options import RunConfig
from workbench.eval.store.database import OutputRow, Store
from workbench.routing import Router
from workbench.tools.demo import demo_executors
from workbench.tools.pending import PendingActions


class LocalEngine:
    """The default engine. Its routers are built in `prepare`, before the run is recorded, so a
    configuration that cannot be built leaves no run behind; they observe into the store's
    capabilities and cache into its response cache."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._configs: list[Configuration] = []

    def describe(self) -> str:
        return "local"

    async def prepare(
        self, entries: Sequence[Router | ProvidersConfig], config: RunConfig
    ) -> list[str]:
        store = self._store
        self._configs = build_configs(
            entries, store.capabilities, store.cache, config.cache_ttl_s, config.concurrency
        )
        if config.batch:  # a configuration without a batch API is refused before any request
            from workbench.eval.run.batch_mode import check_batchable

            check_batchable(self._configs)
        return [c.name for c in self._configs]

    async def run(
        self,
        jobs: list[Job],
        entries: Sequence[Router | ProvidersConfig],
        store: Store,
        settings: JobSettings,
        finished: Callable[[OutputRow], Any],
    ) -> list[dict[str, Any]]:
        """Make every job here (through the providers' batch APIs with `batch`); no workers
        to report on."""
        actions = PendingActions(store.actions, demo_executors(), run_id=settings.run_id)
        if settings.config.batch:
            from workbench.eval.run.batch_mode import run_batched

            await run_batched(jobs, self._configs, store, settings, finished, actions)
            return []
        pending = iter(jobs)

        def next_job() -> Job | None:
            return next(pending, None)

        await run_jobs(next_job, self._configs, store, settings, finished, actions)
        return []

    async def close(self) -> None:
        for config in self._configs:
            with contextlib.suppress(Exception):
                await config.router.close()
