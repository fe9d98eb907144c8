"""What a running research writes to the store besides its state: its journal of LLM answers
and its researchers' saved states, as the research's owner; and how a state is saved."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from foundry_mcp.research.models import LLMCallRecord, ResearchState
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.states import Snapshot, StateReading

log = logging.getLogger(__name__)


class OwnedRecords:
    """What one running research writes to the store besides its state, as its owner."""

    def __init__(self, io: AsyncStore, owner: Owner, research_id: str, deleted: set[str]) -> None:
        self._io = io
        self._owner = owner
        self._research_id = research_id
        self._deleted = deleted  # researches deleted while running: nothing more is written


class RunJournal(OwnedRecords):
    """The research's journal of LLM answers, for its ``ResearchLLM``.

    No call waits on the store for it. Whether the store holds any answer of the research is
    read once (``any_saved``: read with the run's other preparations, else at its first call):
    a fresh run's calls read nothing more (there is nothing to replay), a resumed run's read
    the answer of each request. An answer is queued on the writer thread and the call goes on:
    the queue keeps its order, so no save of a state that used the answer can reach the store
    before the answer does. This run's own answers are kept here as well, for a request it
    makes again.
    """

    def __init__(
        self,
        io: AsyncStore,
        owner: Owner,
        research_id: str,
        deleted: set[str],
        any_saved: bool | None = None,
    ) -> None:
        super().__init__(io, owner, research_id, deleted)
        self._any_saved = any_saved  # before this run; None: not read yet
        self._kept: dict[str, tuple[str, LLMCallRecord]] = {}

    async def get(self, key: str) -> tuple[str, LLMCallRecord] | None:
        kept = self._kept.get(key)
        if kept is not None:
            return kept
        if self._any_saved is None:
            saved = await self._io.read(
                lambda store: store.journal.count(self._research_id), patient=True
            )
            self._any_saved = saved > 0
        if not self._any_saved:
            return None
        entry = await self._io.read(
            lambda store: store.journal.get(self._research_id, key), patient=True
        )
        if entry is None:
            return None
        return entry.answer, LLMCallRecord.model_validate(entry.record)

    async def put(self, key: str, answer: str, record: LLMCallRecord) -> None:
        if self._research_id not in self._deleted:
            self._kept[key] = (answer, record)
            saved = record.model_dump(mode="json")
            self._io.write_soon(
                lambda store: store.journal.put(self._research_id, key, answer, saved, self._owner),
                f"keep an answer of {self._research_id}",
            )


class SaveQueue:
    """States saved on the store's writer thread, at most one save of a state waiting there.

    A save is asked on the loop, and reads its state there (:class:`StateReading`: the writer
    thread never reads a state the loop edits); a save asked while another of the same state
    still waits in the writer's queue joins that one, giving it the newer reading: it will hold
    this change too. Under load (many researches, each saving at every step of every phase) the
    writer writes each state once a turn, not once for every step that asked while it was
    busy with the others.

    A run's checkpoints do not wait for their saves (:meth:`save_soon`): the save is queued at
    once, so it keeps its place among the run's writes (an event asked after it is written
    after it), and the run goes on while the writer writes. Once a save is written, its
    snapshot is applied to the state on the loop (:meth:`Snapshot.apply`), whoever waits.
    """

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str | None], _Save] = {}
        self._failed: dict[tuple[str, str | None], BaseException] = {}

    async def save(
        self,
        io: AsyncStore,
        state: ResearchState,
        write: Callable[[Store, StateReading], Snapshot],
        *,
        join: bool = True,
        saved: Callable[[Snapshot], None] | None = None,
    ) -> Snapshot:
        """``write(store, reading)`` on the writer thread, ``reading`` taken now (or join the
        save of ``state`` waiting there, giving it a reading taken now);
        the snapshot written, once a save begun after this call is done (and applied).
        ``join`` False: a save of its own, written after every write queued before this call.
        ``saved`` is called with the snapshot once it is applied."""
        queued = self._queue(io, state, write, join=join, saved=saved)
        queued.awaited = True  # its failure is raised here, not kept for a later save
        written: Snapshot = await asyncio.shield(queued.future)
        return written

    def save_soon(
        self,
        io: AsyncStore,
        state: ResearchState,
        write: Callable[[Store, StateReading], Snapshot],
        *,
        saved: Callable[[Snapshot], None] | None = None,
    ) -> None:
        """Queue a save of ``state`` (or join the one waiting) without waiting for it.

        A queued save of ``state`` that failed since the last call is raised here: the run
        stops at its next save, as it would have stopped at that one.
        """
        failure = self._failed.pop(_key(state), None)
        if failure is not None:
            raise failure
        self._queue(io, state, write, join=True, saved=saved)

    def forget_failures(self, research_id: str) -> None:
        """Drop the failed saves of the research's states not raised yet: a new run of it
        starts from what the store holds, not from an earlier run's failure."""
        for key in [key for key in self._failed if key[0] == research_id]:
            del self._failed[key]

    async def written(self, research_id: str) -> None:
        """Return once every save of the research's states (its own and its researchers')
        queued so far is written, or has failed: a read of them now finds the last saved."""
        waiting = [q.future for key, q in self._waiting.items() if key[0] == research_id]
        if waiting:
            # Waits without taking their outcome (the save's own callback reads it), and a
            # cancel of this wait leaves the saves alone.
            await asyncio.wait(waiting)

    def _queue(
        self,
        io: AsyncStore,
        state: ResearchState,
        write: Callable[[Store, StateReading], Snapshot],
        *,
        join: bool,
        saved: Callable[[Snapshot], None] | None,
    ) -> _Save:
        key = _key(state)
        reading = StateReading.of(state)  # here, where the state is edited: one instant of it
        waiting = self._waiting.get(key)
        if join and waiting is not None:
            with waiting.lock:
                if not waiting.begun:
                    waiting.reading = reading  # it will write this change too
                    return waiting
        queued = _Save(reading)

        def run(store: Store) -> Snapshot:
            with queued.lock:  # from now on a change misses this save: no one joins it
                queued.begun = True
                taken = queued.reading
            return write(store, taken)

        queued.future = io.write_queued(run)
        self._waiting[key] = queued

        def done(future: asyncio.Future[Snapshot]) -> None:
            if self._waiting.get(key) is queued:
                del self._waiting[key]
            if future.cancelled():
                return
            failure = future.exception()
            if failure is None:
                snapshot = future.result()
                snapshot.apply()
                if saved is not None:
                    saved(snapshot)
            elif not queued.awaited:
                log.warning("a save of research %s failed: %s", state.id, failure)
                self._failed[key] = failure

        # Runs on the loop before any waiter wakes: the snapshot is applied when they do.
        queued.future.add_done_callback(done)
        return queued


class _Save:
    """A save queued on the writer thread, with the latest reading of its state."""

    future: asyncio.Future[Snapshot]
    begun = False  # the writer has begun it: a later change misses it
    awaited = False  # someone waits for it (and gets its failure)

    def __init__(self, reading: StateReading) -> None:
        self.reading = reading
        self.lock = threading.Lock()  # the loop's join against the writer's start


def _key(state: ResearchState) -> tuple[str, str | None]:
    return (state.id, state.branch)


class RunBranches(OwnedRecords):
    """The saved researcher states of one research, for its playbook.

    ``none_saved``: the store held no researcher state of the research when this run began (a
    fresh run). Then the store holds exactly the states this run queued, and the run holds
    them too: a load copies them (:meth:`ResearchState.detached`) instead of waiting for their
    saves to be written and reading them back with their pages. The researchers of a fresh run
    start at once, and its consolidation gathers what they hold.
    """

    def __init__(
        self,
        io: AsyncStore,
        owner: Owner,
        research_id: str,
        deleted: set[str],
        saves: SaveQueue | None = None,
        *,
        none_saved: bool = False,
    ) -> None:
        super().__init__(io, owner, research_id, deleted)
        self._saves = saves or SaveQueue()
        self._none_saved = none_saved
        self._queued: dict[str, ResearchState] = {}  # by branch: the states this run saved

    def save_soon(self, branch: ResearchState) -> None:
        """Queue a save of a researcher's state, as the runner queues the research's
        (:meth:`SaveQueue.save_soon`)."""
        if self._research_id not in self._deleted:
            if branch.branch is not None:
                self._queued[branch.branch] = branch
            self._saves.save_soon(
                self._io,
                branch,
                lambda store, reading: save_snapshot(store.save_branch, reading, self._owner),
            )

    async def load(self) -> dict[str, ResearchState]:
        """The saved researcher states, by branch, with the page text of their sources: in a
        fresh run, copies of those it saved; else read once the saves of them queued so far
        are written."""
        if self._none_saved:
            return {branch: state.detached() for branch, state in self._queued.items()}
        await self._saves.written(self._research_id)

        def read(store: Store) -> dict[str, ResearchState]:
            branches = store.load_branches(self._research_id)
            store.load_pages(*branches.values())
            return branches

        return await self._io.read(read, patient=True)


def save_snapshot(
    save: Callable[[Snapshot, Owner], None], reading: StateReading, owner: Owner
) -> Snapshot:
    """``save`` the snapshot of ``reading`` (on the writer thread: the state itself is not read
    there); the snapshot, to apply on the loop."""
    snapshot = Snapshot.of_reading(reading)
    save(snapshot, owner)
    return snapshot
