"""Page text, kept once per store outside the research state: what both backends share.

A state is saved after every sub-query, batch and phase; a page of text can weigh megabytes.
So a source's text (``Source.content``) never enters the state's JSON: the state carries its
SHA-256 (``Source.content_hash``: ``sha256:<hex>``, as token management names an original) and
the store keeps the text in a page table keyed by that hash, once whatever number of research
read it, with one link row per (research, page). A save first stores, in the same transaction
as the state, the texts its sources got since the last one (worked out, with their hashes, by
:class:`~foundry_mcp.research.store.states.Snapshot`); a save of an unchanged state writes
no page. Reading a state never reads page text (status, lists and
reports do not need it); a run asks for it (``Store.load_pages``), in one query. Deleting a
research deletes its links and every page no other research links to.

A state written before pages had their own table holds its texts inline; they are read as
usual and move to the page table on the state's next save.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from foundry_mcp.research.models import ResearchState, Source

log = logging.getLogger(__name__)


def wanted_pages(*states: ResearchState) -> list[str]:
    """The hashes of the pages ``states`` refer to and do not hold in memory."""
    return sorted(
        {
            source.content_hash
            for source in _sources(states)
            if source.content is None and source.content_hash is not None
        }
    )


def fill_pages(texts: dict[str, str], *states: ResearchState) -> None:
    """Give the sources of ``states`` their text read back from the page table (``texts`` by
    hash). A page missing from the table (deleted by hand) leaves its source with its snippet."""
    missing = 0
    for source in _sources(states):
        if source.content is not None or source.content_hash is None:
            continue
        text = texts.get(source.content_hash)
        if text is None:
            missing += 1
            continue
        source.content = text
        source.keep_text(text)
    if missing:
        research_id = states[0].id if states else "?"
        log.warning(
            "%d page text(s) of research %s are missing from the store", missing, research_id
        )


def _sources(states: Iterable[ResearchState]) -> Iterator[Source]:
    for state in states:
        yield from state.sources
