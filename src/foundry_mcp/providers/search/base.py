"""The protocol every search adapter implements, the results it returns (with what is known of
each as a publication), and the kinds of sources a search can be for."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import date, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from foundry_mcp.providers.search.bounds import SourceBounds

# The kinds of sources a research can ask for (the ``source_types`` of ``deep-research``).
SourceType = Literal["web", "academic", "news", "local"]
SOURCE_TYPES: tuple[SourceType, ...] = get_args(SourceType)


class Publication(BaseModel):
    """What a search API says of a hit as a publication, for citing it (BibTeX, RIS).

    Only what the API returned is filled; a source carries None when it said nothing.
    """

    authors: list[str] = Field(default_factory=list)  # as written, "First Last", in order
    year: int | None = None
    venue: str | None = None  # the journal or conference
    doi: str | None = None
    arxiv_id: str | None = None
    published: date | None = None  # the day of publication (news articles)

    def known_fields(self) -> int:
        """How many of the fields are filled: the richer of two records has more."""
        fields = (self.authors, self.year, self.venue, self.doi, self.arxiv_id, self.published)
        return sum(bool(value) for value in fields)


def published_on(value: object) -> Publication | None:
    """The day in a publication date as search APIs write it (ISO 8601, or RFC 2822 as in
    "Wed, 20 Nov 2024 02:37:41 GMT"), or None when there is none or it is not a date."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        day = datetime.fromisoformat(value.strip()).date()
    except ValueError:
        try:
            day = parsedate_to_datetime(value.strip()).date()
        except (TypeError, ValueError):
            return None
    return Publication(year=day.year, published=day)


def richer(kept: Publication | None, other: Publication | None) -> Publication | None:
    """The record that says more about one publication (``kept`` on a tie)."""
    if other is None or (kept is not None and kept.known_fields() >= other.known_fields()):
        return kept
    return other


class SearchResult(BaseModel):
    """One hit from a search provider, with page text when the provider supplies it."""

    title: str
    url: str | None = None
    snippet: str = ""
    content: str | None = None
    score: float | None = None
    provider: str = ""
    publication: Publication | None = None


class SearchProvider(Protocol):
    """A search API behind one method.

    An adapter class says which kinds of sources it serves in a ``source_types`` class
    attribute (a tuple of ``SOURCE_TYPES``, its main kind first; ``("web",)`` when absent),
    and which source bounds its service applies itself in a ``native_bounds`` class attribute
    (a frozenset of ``bounds.BOUND_NAMES``; empty when absent, see ``native_bounds_of``).
    """

    name: str

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        """Search; raise ``ProviderError`` (from ``foundry_mcp.errors``) on failure.

        ``source_type`` is the kind of sources wanted, one the adapter serves; it is passed
        only to an adapter that serves several (None: its main kind). ``bounds`` limits the
        sources: the adapter sends what its service can apply in the request and returns only
        results within the bounds (``bounds.apply_bounds``). The user's own documents and MCP
        sources are never bounded.
        """
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...


def search_as_asked(
    provider: SearchProvider,
    query: str,
    max_results: int,
    source_type: SourceType | None = None,
    bounds: SourceBounds | None = None,
) -> Awaitable[list[SearchResult]]:
    """``provider.search`` called as the gatherer calls it: the kind only when one is asked
    for (an adapter of one kind takes none), the bounds only when given. For wrappers that pass
    a search on."""
    extra: dict[str, Any] = {"bounds": bounds} if bounds is not None else {}
    if source_type is None:
        return provider.search(query, max_results, **extra)
    return provider.search(query, max_results, source_type, **extra)


def native_bounds_of(provider: object) -> frozenset[str]:
    """The source bounds a search adapter's service applies itself (empty when it says none)."""
    declared = getattr(provider, "native_bounds", None)
    return declared if isinstance(declared, frozenset) else frozenset()


def served_types(provider: object) -> tuple[SourceType, ...]:
    """The kinds of sources a search adapter (or its class) serves, its main kind first."""
    declared = getattr(provider, "source_types", None)
    if isinstance(declared, tuple) and declared:
        return declared
    return ("web",)
