"""Opening and closing everything a research service needs, for the server and the CLI."""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.errors import ConfigError
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.jobs import JobRunner
from foundry_mcp.research.service import ResearchService
from foundry_mcp.research.store import ResearchStore
from foundry_mcp.research.workflow.supervisor import SupervisorHooks

log = logging.getLogger(__name__)


@asynccontextmanager
async def research_runtime(
    settings: Settings, hooks: SupervisorHooks | None = None, *, warm: bool = True
) -> AsyncIterator[ResearchService]:
    """A ready ``ResearchService``; on exit running research is interrupted and saved."""
    for warning in settings.trust_warnings():
        log.warning("%s", warning)
    if hooks is None and settings.research.supervisor_hooks:
        hooks = load_hooks(settings.research.supervisor_hooks)
    store = ResearchStore(settings.research.research_dir)
    providers = ProviderRegistry(settings)
    try:
        async with anyio.create_task_group() as task_group:
            if warm:
                # Import the SDKs in a thread now, so the first research does not stall the loop.
                task_group.start_soon(_warm_up, providers)
            service = ResearchService(settings, store, providers, JobRunner(task_group), hooks)
            chores = service.housekeeping()
            if any(chores.values()):
                log.info(
                    "start-up: %d research interrupted by stopped processes, %d deleted by "
                    "retention, %d resumed",
                    len(chores["interrupted"]),
                    chores["deleted"],
                    len(chores["resumed"]),
                )
            task_group.start_soon(service.heartbeat)
            try:
                yield service
            finally:
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await providers.aclose()
        store.close()


async def _warm_up(providers: ProviderRegistry) -> None:
    try:
        await anyio.to_thread.run_sync(providers.warm_up, abandon_on_cancel=True)
    except Exception:  # an SDK that fails to import is reported when it is first used
        log.debug("warming provider SDKs failed", exc_info=True)


def load_hooks(spec: str) -> SupervisorHooks:
    """Instantiate the hooks named ``"package.module:Name"`` in ``[research] supervisor_hooks``.

    ``Name`` is a ``SupervisorHooks`` subclass or a function returning an instance; it is called
    with no arguments.
    """
    module_name, _, attribute = spec.partition(":")
    remediation = (
        "Set [research] supervisor_hooks to 'package.module:Name', where Name is a "
        "SupervisorHooks subclass importable by the server's Python: installed in its "
        "environment or in a folder named by PYTHONPATH (the working directory is not "
        "searched; see docs/hooks.md)."
    )
    try:
        target = getattr(importlib.import_module(module_name.strip()), attribute.strip())
        hooks = target()
    except Exception as exc:
        raise ConfigError(
            f"[research] supervisor_hooks = {spec!r} cannot be loaded: "
            f"{type(exc).__name__}: {exc}.",
            remediation=remediation,
        ) from None
    if not isinstance(hooks, SupervisorHooks):
        raise ConfigError(
            f"[research] supervisor_hooks = {spec!r} did not produce a SupervisorHooks.",
            remediation=remediation,
        )
    return hooks
