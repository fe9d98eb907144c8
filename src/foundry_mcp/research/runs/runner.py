"""The background body of one research: lease, supervisor, timeouts, final status, audit trail."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from foundry_mcp.config.provider_settings import MCP_PREFIX
from foundry_mcp.context.reading.elsewhere import prepare_reading
from foundry_mcp.errors import FoundryError, ProviderError
from foundry_mcp.logs import research_context
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.providers.search.scope import serving
from foundry_mcp.research.llm.calls import CallLog, LLMRoute, ResearchLLM
from foundry_mcp.research.models import ResearchState, Status, utcnow
from foundry_mcp.research.pricing import PriceTable
from foundry_mcp.research.runs.ending import SERVER_STOPPED, abort, built
from foundry_mcp.research.runs.jobs import Job
from foundry_mcp.research.runs.records import RunBranches, RunJournal, SaveQueue, save_snapshot
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.archive import RunArchive
from foundry_mcp.research.store.owners import LeaseLostError, Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.states import Snapshot, StateReading

if TYPE_CHECKING:
    from foundry_mcp.research.workflow.supervisor import SupervisorHooks

log = logging.getLogger(__name__)

# How long a run waits before its first step. The call that started it is answered once it
# returns, by the transport's writer in a couple of worker-thread hops (well under 1 ms on an
# idle loop); a run that began at once would put its state load, its first save and the
# planner's prompt building on the event loop between the call and its answer.
ANSWER_FIRST_SECONDS = 0.005


class ResearchRunner:
    """Runs researches this process has claimed; every write is fenced by the lease.

    Every store call goes through ``io`` (:class:`AsyncStore`), off the event loop; the run's
    events and journal entries are queued there in order, its saves awaited. Its reads are
    patient, as its writes are: a short outage of the database delays the run, not fails it.
    """

    def __init__(
        self,
        io: AsyncStore,
        providers: ProviderRegistry,
        owner: Owner,
        hooks: SupervisorHooks | None,
    ) -> None:
        self.io = io
        self.providers = providers
        self.owner = owner
        self.hooks = hooks
        self.call_logs: dict[str, CallLog] = {}
        # Research deleted (the delete done) while a run of theirs may still go on: it writes
        # nothing more.
        self.deleted: set[str] = set()
        # Each running research's status, phase and iteration at its last save: a save that
        # moves them ends the status waits on it at once (``saved_here``).
        self._positions: dict[str, tuple[str, str, int]] = {}
        self._saves = SaveQueue()  # a save asked while one of the same state waits joins it

    async def run(self, job: Job) -> None:
        # The answer to the call that started the run goes first (see ANSWER_FIRST_SECONDS);
        # a cancel meanwhile is obeyed just after, as if it came at the first step.
        with anyio.CancelScope(shield=True):
            await anyio.sleep(ANSWER_FIRST_SECONDS)
            state = await self.io.read(lambda store: store.load(job.research_id), patient=True)
        state.attach(lambda kind, data: self.event(state.id, kind, data))
        prepare_reading(state.llm_model)  # its first reading is seconds away: get ready now
        # Every line the run logs, down to the providers, names the research and its principal;
        # every search serves it (providers keep their per-research work in its scope).
        with research_context(state.id, state.principal), serving(state.id, state.warn):
            try:
                await self._run(job, state)
            except LeaseLostError:
                if state.id in self.deleted:
                    log.info("research %s was deleted; this run stops", state.id)
                else:
                    log.warning(
                        "research %s is now owned by another process; this run stops", state.id
                    )
            finally:
                state.attach(None)
                self._positions.pop(state.id, None)
                with anyio.CancelScope(shield=True):
                    await self.io.write(lambda store: store.release(state.id, self.owner))

    async def _run(self, job: Job, state: ResearchState) -> None:
        # The research engine is imported by the first run, not by a process that only reads
        # research (a CLI command, a server answering its handshake); runtime.warm_up imports
        # it ahead of a server's first research.
        from foundry_mcp.research.revision.versions import record_research_version
        from foundry_mcp.research.workflow.review import AwaitingApproval
        from foundry_mcp.research.workflow.supervisor import PhaseTimeoutError

        if job.cancel_requested:  # cancelled before it started: nothing to stop
            abort(state, Status.CANCELLED, "cancelled")
            with anyio.CancelScope(shield=True):  # the cancel is what this save records
                await self._save(state)
            self.event(state.id, "run_ended", {"status": state.status.value})
            return
        calls = self.call_logs.setdefault(state.id, CallLog())
        self._saves.forget_failures(state.id)  # an earlier run's, left unraised
        state.status = Status.RUNNING
        state.started_at = utcnow()
        state.error = None
        state.error_code = None
        # Saved whole even if a cancel comes meanwhile: the handlers below, which record it,
        # begin after this save; a cancel in it would leave the research "running", unowned.
        with anyio.CancelScope(shield=True):
            await self._save(state)
        self.event(
            state.id,
            "run_started",
            {"phase": state.phase.value, "iteration": state.iteration, "pid": self.owner.pid},
        )
        log.info(
            "research %s started: %s, iteration %d", state.id, state.phase.value, state.iteration
        )

        async def checkpoint() -> None:
            self._save_soon(state)  # the run goes on while the writer saves

        try:
            try:
                await self._research(state, calls, checkpoint)
            finally:
                # A queued checkpoint's snapshot holds what the state says when the writer
                # takes it: the run's end (its status, below) is recorded once they are written,
                # so no save shows it before the run's last event and save.
                with anyio.CancelScope(shield=True):
                    await self._saves.written(state.id)
        except AwaitingApproval:
            state.status = Status.WAITING  # no process works on it until it is approved
            state.emit("waiting", {"for": "plan_approval", "phase": state.phase.value})
        except TimeoutError:
            abort(state, Status.TIMED_OUT, "timeout")
            state.error = (
                f"The research exceeded its task_timeout of {state.limits.task_timeout:g} s "
                f"during {state.phase.value}. Resume it, with a larger task_timeout if needed."
            )
        except PhaseTimeoutError as exc:
            abort(state, Status.TIMED_OUT, "timeout")
            state.metadata["timeout_phase"] = exc.phase.value
            state.error = str(exc)
        except anyio.get_cancelled_exc_class():
            if job.cancel_requested:
                abort(state, Status.CANCELLED, "cancelled")
            else:
                abort(state, Status.INTERRUPTED, "interrupted")
                state.error = SERVER_STOPPED
            with anyio.CancelScope(shield=True):  # saved in full even while cancelled
                await self._finish(state)
            raise
        except LeaseLostError:
            raise
        except ProviderError as exc:
            if exc.kind == "budget":
                self._stop_at_cost_ceiling(state, exc)
            else:
                abort(state, Status.FAILED, "failed")
                state.error = f"{exc.message} {exc.remediation}".strip()
                state.error_code = exc.error_code
                state.metadata["failed_provider"] = exc.provider
        except FoundryError as exc:
            abort(state, Status.FAILED, "failed")
            state.error = f"{exc.message} {exc.remediation}".strip()
            state.error_code = exc.error_code
        except Exception:
            log.exception("research %s failed unexpectedly", state.id)
            abort(state, Status.FAILED, "failed")
            state.error = "An internal error stopped the research; see the server log."
            state.error_code = FoundryError.error_code
        else:
            state.status = Status.COMPLETED
            state.completed_at = utcnow()
            record_research_version(state)  # a further round's report, once versions are kept
        await self._finish(state)

    async def _research(
        self, state: ResearchState, calls: CallLog, checkpoint: Callable[[], Awaitable[None]]
    ) -> None:
        """The research itself: its tools built, then its playbook (or revision) run."""
        from foundry_mcp.providers.search.local import LocalDocuments
        from foundry_mcp.research.llm.fanout import as_itself
        from foundry_mcp.research.modes import ResearchKit, playbook_for
        from foundry_mcp.research.modes.allocation import with_named_sources
        from foundry_mcp.research.revision.run import revise
        from foundry_mcp.research.workflow.agents.privacy import guard_for
        from foundry_mcp.research.workflow.agents.structurer import shape_answer_in_time
        from foundry_mcp.research.workflow.reading.readings import Readings
        from foundry_mcp.research.workflow.supervisor import Supervisor

        # The page text of its sources, kept apart from the state (read in a worker thread:
        # megabytes of it must not stall the loop), whether a researcher state of it was saved
        # before this run (RunBranches: a fresh run's researchers load none), and whether an
        # answer of it was (its journal: a fresh run's calls look for none).
        def prepare(store: Store) -> tuple[bool, bool]:
            store.load_pages(state)
            return not store.load_branches(state.id), store.journal.count(state.id) > 0

        none_saved, answers_saved = await self.io.read(prepare, patient=True)
        llm = await self.research_llm(state, calls, answers_saved=answers_saved)
        search = [
            self.providers.resilience.wrap_search(await built(self.providers.search, name))
            for name in state.search_providers
        ]
        fetcher = await built(self.providers.fetcher)
        own = frozenset(  # the user's own sources: their documents and MCP sources
            name
            for name in state.search_providers
            if self.providers.settings.provider_kind(name) in ("local", "mcp")
        )
        kit = ResearchKit(
            llm=llm,
            search=search,
            calls=calls,
            checkpoint=checkpoint,
            fetcher=fetcher,
            hooks=self.hooks,
            branches=RunBranches(
                self.io, self.owner, state.id, self.deleted, self._saves, none_saved=none_saved
            ),
            local_providers=own,
            local_sample=with_named_sources(
                next((p.sample for p in search if isinstance(p, LocalDocuments)), None),
                self._described_sources(state),
            ),
            readings=Readings(state),
            private=guard_for(
                state, own, [name for name in state.search_providers if name not in own]
            ),
        )
        with anyio.fail_after(state.limits.task_timeout):
            if state.revision is not None:  # its report rewritten, deepened or refreshed
                await as_itself(revise(kit, state))
            else:
                playbook = playbook_for(state, kit)
                await as_itself(Supervisor(state, llm, playbook, checkpoint, self.hooks).run())
                if state.options.output_schema is not None and state.report is not None:
                    await shape_answer_in_time(llm, state)  # the answer in the caller's shape
                    await checkpoint()

    async def research_llm(
        self,
        state: ResearchState,
        calls: CallLog,
        *,
        journaled: bool = True,
        answers_saved: bool | None = None,
    ) -> ResearchLLM:
        """The research's LLMs: its own provider, the per-phase lists, prices and ceiling.

        A research started with an explicit ``provider_id`` sends every call to it: the
        per-phase lists (and summarization providers) apply only when the caller named none.
        ``journaled``: answers are kept in the research's journal, replayed by a resumed run
        (only a run, which holds the research's lease, keeps one); ``answers_saved``: whether
        the journal held any before this run (None: its first call reads it).
        """
        providers = self.providers
        own = await built(providers.llm, state.llm_provider)
        routes: dict[str, list[LLMRoute]] = {}
        configured = {} if state.options.pinned_provider else providers.resolve_routes()
        for group, pairs in configured.items():
            routes[group] = [
                LLMRoute(await built(providers.llm, name), model) for name, model in pairs
            ]
        settings = providers.settings
        return ResearchLLM(
            own,
            state.llm_model,
            state,
            calls,
            routes=routes,
            prices=PriceTable.from_settings(settings),
            max_cost_usd=settings.research.max_cost_usd,
            journal=(
                RunJournal(self.io, self.owner, state.id, self.deleted, answers_saved)
                if journaled
                else None
            ),
            archive=self._archive(state),
        )

    def _described_sources(self, state: ResearchState) -> dict[str, str]:
        """The research's MCP sources (``mcp.<name>``) and what each holds, for the planner."""
        configured = self.providers.settings.mcp_sources
        return {
            name: configured[name.removeprefix(MCP_PREFIX)].description
            for name in state.search_providers
            if name.startswith(MCP_PREFIX) and name.removeprefix(MCP_PREFIX) in configured
        }

    def _archive(self, state: ResearchState) -> RunArchive | None:
        """The research's content archive, in the store (every server restores from it),
        reached as the run's other calls are: through ``io``, patiently."""
        options = state.options.token_budget
        if not options.archive_enabled or not options.archive_dir:
            return None
        return RunArchive(
            self.io,
            state.id,
            Path(options.archive_dir),
            options.archive_ttl_hours,
            self.owner,
        )

    @staticmethod
    def _stop_at_cost_ceiling(state: ResearchState, exc: ProviderError) -> None:
        """The cost ceiling ends a run cleanly: with its report if it has one."""
        state.llm_usage.cost_ceiling_reached = True
        state.metadata["cost_ceiling_reached"] = True
        if state.report is not None:
            state.status = Status.COMPLETED
            state.completed_at = utcnow()
            state.warn(
                "Cost ceiling reached: the research stopped before finishing; the report is the "
                "last one written."
            )
            return
        abort(state, Status.FAILED, "failed")
        state.error = f"{exc.message} No report was written before the ceiling. {exc.remediation}"

    async def _finish(self, state: ResearchState) -> None:
        # The trail's last event is written before the save that ends the research: the
        # save is one of its own, queued behind the event (a save of this state waiting in
        # the queue would be written before it). Whoever sees the research ended finds its
        # whole trail.
        self.event(state.id, "run_ended", {"status": state.status.value, "error": state.error})
        await self._save(state, join=False)
        log.info("research %s ended %s", state.id, state.status.value)

    async def _save(self, state: ResearchState, *, join: bool = True) -> None:
        """Save a run's state (fenced), unless the research was deleted while it ran.

        The state is saved on the store's writer thread while the run goes on editing it on
        the loop. So it is read here, on the loop (``StateReading``: a change the run makes
        lands wholly in this save or wholly in the next), and the writer writes that reading;
        what the save set (its time, the hashes of new page texts) is recorded on the state on
        the loop, once the write returns.
        """
        if state.id not in self.deleted:
            await self._saves.save(
                self.io, state, self._write_snapshot, join=join, saved=self._saved
            )

    def _save_soon(self, state: ResearchState) -> None:
        """Queue a save of a run's state, as :meth:`_save` saves it, and go on: a checkpoint.
        A queued save of it that failed since is raised here."""
        if state.id not in self.deleted:
            self._saves.save_soon(self.io, state, self._write_snapshot, saved=self._saved)

    def _write_snapshot(self, store: Store, reading: StateReading) -> Snapshot:
        """Save a run's state as ``reading`` read it (on the writer thread)."""
        return save_snapshot(store.save, reading, self.owner)

    def _saved(self, snapshot: Snapshot) -> None:
        position = (snapshot.status, snapshot.phase, snapshot.iteration)
        research_id = snapshot.state.id
        if self._positions.get(research_id) != position:  # a waiting status has news
            self._positions[research_id] = position
            self.io.saved_here(research_id)

    def forget(self, research_id: str) -> None:
        """The research was deleted (the delete done): a run of it still going writes nothing
        more, and its call log goes."""
        self.deleted.add(research_id)
        self.call_logs.pop(research_id, None)

    def event(
        self, research_id: str, kind: str, data: dict[str, Any], *, owned: bool = True
    ) -> None:
        """Append to the audit trail, queued in order behind this process's other writes; a
        failure to log never stops the research.

        ``owned``: written as the research's owner, fenced by the lease (a run's events, and a
        start's or resume's); False for what any server may say of a research it does not run
        (a cancel request, a dead owner's research interrupted, a restore).
        """
        if research_id not in self.deleted:
            owner = self.owner if owned else None
            self.io.write_soon(
                lambda store: store.append_event(research_id, kind, data, owner),
                f"record the {kind} event of {research_id}",
            )
