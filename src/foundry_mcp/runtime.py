"""Opening and closing everything a research service needs, for the server and the CLI."""

from __future__ import annotations

import gc
import importlib
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.context.limits import model_limits
from foundry_mcp.context.reading.elsewhere import use_reading_processes
from foundry_mcp.context.runtime import summary_cache
from foundry_mcp.context.tokens import counter_for_model
from foundry_mcp.errors import ConfigError
from foundry_mcp.providers.detection import apply_choice, choose_llm
from foundry_mcp.providers.mcp_sources.sources import McpSources
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.providers.warming import default_llms, quietly, warm_defaults, warm_others
from foundry_mcp.research.pricing import shipped_prices
from foundry_mcp.research.runs.jobs import JobRunner
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.service.takeover import Takeover, takeover_enabled
from foundry_mcp.research.store.opening import open_async_store

if TYPE_CHECKING:
    from foundry_mcp.research.workflow.supervisor import SupervisorHooks

log = logging.getLogger(__name__)


@asynccontextmanager
async def research_runtime(
    settings: Settings,
    hooks: SupervisorHooks | None = None,
    *,
    warm: bool = True,
    serving: bool = True,
) -> AsyncIterator[ResearchService]:
    """A ready ``ResearchService``; on exit running research is interrupted and saved.

    ``serving``: a server, which resumes research by itself (``auto_resume``) and takes over a
    stopped worker's (``take_over_orphans``); a CLI command lives too briefly for either and
    would leave what it took interrupted again.
    """
    for warning in settings.trust_warnings():
        log.warning("%s", warning)
    if hooks is None and settings.research.supervisor_hooks:
        hooks = load_hooks(settings.research.supervisor_hooks)
    # Configuration wins; else what this machine has (PATH lookups, maybe a local port probe:
    # off the event loop).
    choice = await anyio.to_thread.run_sync(choose_llm, settings)
    if choice.detected:
        log.info("%s", choice.statement)
    settings = apply_choice(settings, choice)
    io = await anyio.to_thread.run_sync(open_async_store, settings.research)
    providers = ProviderRegistry(settings, choice)
    readers = use_reading_processes(settings.research.reading_processes)
    # Ready the first research's path in a thread now, so that it does not stall the loop.
    stop_warming = start_warm_up(providers) if warm else None
    try:
        async with anyio.create_task_group() as task_group:
            # The MCP sources' connections, each opened when a research first searches it.
            mcp_sources = McpSources(settings, task_group)
            providers.attach_mcp_sources(mcp_sources)
            service = ResearchService(settings, io, providers, JobRunner(task_group), hooks)
            chores = await service.housekeeping(resume=serving)
            if any(chores.values()):
                log.info(
                    "start-up: %d research interrupted by stopped processes, %d deleted by "
                    "retention, %d resumed",
                    len(chores["interrupted"]),
                    chores["deleted"],
                    len(chores["resumed"]),
                )
            task_group.start_soon(service.heartbeat)
            if serving:
                task_group.start_soon(io.listen)
            if serving and takeover_enabled(settings.research):
                task_group.start_soon(Takeover(service).loop)
            try:
                yield service
            finally:
                with anyio.CancelScope(shield=True):
                    await mcp_sources.close()
                task_group.cancel_scope.cancel()
    finally:
        if stop_warming is not None:
            stop_warming.set()
        with anyio.CancelScope(shield=True):
            await providers.aclose()
            await anyio.to_thread.run_sync(io.close)  # the writes queued are finished first
            await anyio.to_thread.run_sync(readers.close)


def start_warm_up(providers: ProviderRegistry) -> threading.Event:
    """Run :func:`warm_up` in a daemon thread; setting the returned event stops it early.

    A daemon thread, not a worker of the event loop: a process that is done (a CLI command, a
    server whose client left) exits without waiting for an SDK it will never use.
    """
    stop = threading.Event()
    threading.Thread(
        target=warm_up, args=(providers, stop), name="foundry-mcp-warm-up", daemon=True
    ).start()
    return stop


def warm_up(providers: ProviderRegistry, stop: threading.Event | None = None) -> None:
    """Do now, in the calling thread, what the first research would do on its path.

    In the order that research needs them: the research engine (:data:`RESEARCH_ENGINE`), the
    default and per-phase LLMs (SDK imported, client built, first call rehearsed in memory),
    the search providers and page fetcher (``providers.warming``), the model limits of those
    LLMs, the price table and the summary cache; then the other LLM providers that have keys.
    Their token counters load meanwhile in a thread of their own, as a tiktoken encoding may
    have to be downloaded once (the first research would download it too); no other request
    leaves the machine. A step that fails is logged at debug level and left to the real call
    path; once ``stop`` is set, the steps left are skipped. At the end it settles the heap
    (:func:`settle_heap`) and sets ``providers.warmed``.
    """
    try:
        quietly("the research engine", _import_engine, stop=stop)
        pairs = default_llms(providers)
        counters = threading.Thread(
            target=_warm_counters, args=(pairs, stop), name="foundry-mcp-warm-up", daemon=True
        )
        counters.start()
        warm_defaults(providers, pairs, stop)
        for name, model in pairs:
            quietly(f"the limits of {model}", model_limits, model, name, stop=stop)
        quietly("the price table", shipped_prices, stop=stop)
        research = providers.settings.research
        if research.summarization_cache_enabled:  # named as a research's options name it
            quietly("the summary cache", summary_cache, Path(str(research.research_dir)), stop=stop)
        counters.join()
        warm_others(providers, stop)
    finally:
        settle_heap()
        providers.warmed.set()


# What a process's first research imports (the runner's run, the clarifier's JSON reader; a
# revision's, a follow-up's and an export's own), not at start-up: a process that only reads
# research never needs it.
RESEARCH_ENGINE = (
    "foundry_mcp.research.modes",
    "foundry_mcp.research.revision.run",
    "foundry_mcp.research.revision.starting",
    "foundry_mcp.research.workflow.agents.structurer",
    "foundry_mcp.research.workflow.agents.follow_up",
    "foundry_mcp.research.llm.answers",
    "foundry_mcp.research.export.document",
    "foundry_mcp.providers.search.local",
)


def _import_engine() -> None:
    for module in RESEARCH_ENGINE:
        importlib.import_module(module)


_settled = threading.Lock()
_heap_settled = False

# Full collections wait for this many collections of the middle generation (Python's default:
# 10). See settle_heap.
MIDDLE_COLLECTIONS_PER_FULL = 100


def settle_heap() -> None:
    """Put what start-up built out of the garbage collector's sight, and make full collections
    rarer, once per process.

    A full collection walks every object the process tracks, on the event loop. With an LLM SDK
    imported that is 70-110 ms here (more on a slower machine), and the first research allocates
    enough to set one off within its first second, stalling whatever the loop serves then (the
    start answer, a status call). Frozen objects (``gc.freeze``: the modules, clients and
    settings start-up made, which live as long as the process anyway) are never walked again.
    Freezing only moves lists, so it costs nothing itself.

    What is left to walk is the research in memory: a team worker running a hundred research
    spent 20-45 ms on each full collection, every 7-10 s (``docs/benchmarks.md``, "Team
    server"). Waiting for ten times as many middle-generation collections first makes those
    pauses ten times rarer; the cost is that garbage in reference cycles, which is rare here
    (a few hundred objects a collection), is freed later.
    """
    global _heap_settled
    with _settled:
        if not _heap_settled:
            gc.freeze()
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, MIDDLE_COLLECTIONS_PER_FULL)
            _heap_settled = True


def _warm_counters(pairs: list[tuple[str, str]], stop: threading.Event | None) -> None:
    for _, model in pairs:
        quietly(f"the token counter of {model}", counter_for_model, model, stop=stop)


def load_hooks(spec: str) -> SupervisorHooks:
    """Instantiate the hooks named ``"package.module:Name"`` in ``[research] supervisor_hooks``.

    ``Name`` is a ``SupervisorHooks`` subclass or a function returning an instance; it is called
    with no arguments.
    """
    from foundry_mcp.research.workflow.supervisor import SupervisorHooks

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
