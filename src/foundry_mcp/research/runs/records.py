"""What a running research writes to the store besides its state: its journal of LLM answers
and its researchers' saved states, as the research's owner; and how a state is saved."""

from __future__ import annotations

from collections.abc import Callable

from foundry_mcp.research.models import LLMCallRecord, ResearchState
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.states import Snapshot


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
    read once: a fresh run's calls read nothing more (there is nothing to replay), a resumed
    run's read the answer of each request. An answer is queued on the writer thread and the
    call goes on: the queue keeps its order, so no save of a state that used the answer can
    reach the store before the answer does. This run's own answers are kept here as well, for
    a request it makes again.
    """

    def __init__(self, io: AsyncStore, owner: Owner, research_id: str, deleted: set[str]) -> None:
        super().__init__(io, owner, research_id, deleted)
        self._any_saved: bool | None = None  # before this run; None: not read yet
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


class RunBranches(OwnedRecords):
    """The saved researcher states of one research, for its playbook."""

    async def save(self, branch: ResearchState) -> None:
        """Save a researcher's state, as the runner saves the research's."""
        if self._research_id not in self._deleted:
            saved = await self._io.write(
                lambda store: save_snapshot(store.save_branch, branch, self._owner)
            )
            saved.apply()

    async def load(self) -> dict[str, ResearchState]:
        """The saved researcher states, with the page text of their sources."""

        def read(store: Store) -> dict[str, ResearchState]:
            branches = store.load_branches(self._research_id)
            store.load_pages(*branches.values())
            return branches

        return await self._io.read(read, patient=True)


def save_snapshot(
    save: Callable[[Snapshot, Owner], None], state: ResearchState, owner: Owner
) -> Snapshot:
    """``save`` a snapshot of ``state`` taken now (on the writer thread, reading the state and
    never writing to it); the snapshot, to apply on the loop."""
    snapshot = Snapshot.of(state)
    save(snapshot, owner)
    return snapshot
