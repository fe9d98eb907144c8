"""Bounds on the sources of a research: the domains it may or may not come from, and the days
its sources were published between.

Each search adapter sends the bounds it can in its service's own request terms and names them
in its ``native_bounds``; :func:`apply_bounds` then drops what the service let through. Domain
rules are always checked again here (cheap, and a service may match domains loosely); a date
bound is checked again only when the service did not apply it, since its own date filter knows
dates a result does not carry.

A result with no http(s) host (the user's documents as ``file://`` links, MCP sources as
``mcp://`` links, local paths) is never domain-filtered, and a result whose publication date is
unknown is never date-filtered: a bound excludes only what is known to lie outside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Literal, Protocol, TypeVar, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

BoundName = Literal["include_domains", "exclude_domains", "published_after", "published_before"]
BOUND_NAMES: frozenset[str] = frozenset(get_args(BoundName))
MAX_DOMAINS = 50


class Dated(Protocol):
    """What is known of when a source was published (``base.Publication``)."""

    @property
    def published(self) -> date | None: ...

    @property
    def year(self) -> int | None: ...


class Bounded(Protocol):
    """A search hit as the bounds see it (``base.SearchResult``)."""

    @property
    def url(self) -> str | None: ...

    @property
    def publication(self) -> Dated | None: ...


ResultT = TypeVar("ResultT", bound=Bounded)

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_DOMAIN_HINT = (
    "a domain name such as docs.python.org or example.com (no wildcard other than a leading "
    "'*.', at least two labels)"
)


def normalise_domain(value: str) -> str:
    """``value`` as a bare, lower-case domain: scheme, path, port, a leading ``www.`` or
    ``*.`` and a trailing dot removed; non-ASCII names in their ASCII (IDNA) form.

    Raises ``ValueError`` when what is left does not look like a domain name.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"an empty domain; expected {_DOMAIN_HINT}")
    text = value.strip()
    try:
        host = urlsplit(text if "://" in text else f"//{text}").hostname or ""
    except ValueError:
        host = ""
    host = host.rstrip(".")
    for prefix in ("*.", "www."):
        host = host.removeprefix(prefix)
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        host = ""
    labels = host.split(".")
    if (
        len(host) > 253
        or len(labels) < 2
        or not all(_LABEL.match(label) for label in labels)
        or labels[-1].isdigit()
    ):
        raise ValueError(f"{value!r} is not a domain; expected {_DOMAIN_HINT}")
    return host


def host_of(url: str | None) -> str | None:
    """The lower-case ASCII host of an http(s) URL, None for any other link or text."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    try:
        return host.rstrip(".").encode("idna").decode("ascii")
    except UnicodeError:
        return host.rstrip(".")


def _covers(domain: str, host: str) -> bool:
    """True when ``host`` is ``domain`` or one of its subdomains."""
    return host == domain or host.endswith("." + domain)


class SourceBounds(BaseModel):
    """Where a research's sources may come from and when they were published (inclusive)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    include_domains: list[str] = Field(default_factory=list, max_length=MAX_DOMAINS)
    exclude_domains: list[str] = Field(default_factory=list, max_length=MAX_DOMAINS)
    published_after: date | None = None
    published_before: date | None = None

    @field_validator("include_domains", "exclude_domains", mode="before")
    @classmethod
    def _domains(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):  # one domain given alone, or a comma-separated list
            value = [part for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError(f"expected a list of domains, each {_DOMAIN_HINT}")
        domains = list(dict.fromkeys(normalise_domain(item) for item in value))
        if len(domains) > MAX_DOMAINS:
            raise ValueError(f"{len(domains)} domains; expected at most {MAX_DOMAINS}")
        return domains  # each once, in the order given

    @model_validator(mode="after")
    def _consistent(self) -> SourceBounds:
        after, before = self.published_after, self.published_before
        if after is not None and before is not None and after > before:
            raise ValueError(
                f"published_after ({after.isoformat()}) is later than published_before "
                f"({before.isoformat()}); expected a range whose start is not after its end"
            )
        for included in self.include_domains:
            for excluded in self.exclude_domains:
                if _covers(excluded, included):
                    raise ValueError(
                        f"exclude_domains has {excluded!r}, which excludes the included "
                        f"{included!r} entirely; expected exclusions outside the included "
                        "domains, or subdomains of them"
                    )
        return self

    @property
    def empty(self) -> bool:
        """True when nothing is bounded."""
        return not (
            self.include_domains
            or self.exclude_domains
            or self.published_after
            or self.published_before
        )

    @property
    def given(self) -> frozenset[str]:
        """The names of the bounds set (of ``BOUND_NAMES``)."""
        return frozenset(name for name in BOUND_NAMES if getattr(self, name))

    def allows_url(self, url: str | None) -> bool:
        """Whether the domain rules allow ``url`` (a subdomain counts as its domain).

        A link with no http(s) host (``file://``, ``mcp://``, a local path) is always allowed:
        the user's documents and MCP sources are never domain-filtered.
        """
        host = host_of(url)
        if host is None:
            return True
        if any(_covers(domain, host) for domain in self.exclude_domains):
            return False
        return not self.include_domains or any(
            _covers(domain, host) for domain in self.include_domains
        )

    def allows_date(self, publication: Dated | None) -> bool:
        """Whether the date range allows a source published as ``publication`` says.

        The day is compared when known; when only the year is, the year is compared with the
        years of the bounds. A source whose date is unknown is allowed (nothing says it lies
        outside the range).
        """
        return _date_in(publication, self.published_after, self.published_before)

    def allows(self, result: Bounded) -> bool:
        """Whether ``result`` lies within every bound (domains and dates)."""
        return self.allows_url(result.url) and self.allows_date(result.publication)


def _date_in(publication: Dated | None, after: date | None, before: date | None) -> bool:
    if publication is None or (after is None and before is None):
        return True
    day = publication.published
    if day is not None:
        return (after is None or day >= after) and (before is None or day <= before)
    year = publication.year
    if year is not None:
        return (after is None or year >= after.year) and (before is None or year <= before.year)
    return True


def site_terms(included: Sequence[str], excluded: Sequence[str]) -> list[str]:
    """Domain rules as search-engine operators: ``site:a``, or ``(site:a OR site:b)`` for
    several, then ``-site:x`` for each excluded domain."""
    terms = []
    if len(included) == 1:
        terms.append(f"site:{included[0]}")
    elif included:
        terms.append("(" + " OR ".join(f"site:{domain}" for domain in included) + ")")
    return terms + [f"-site:{domain}" for domain in excluded]


def apply_bounds(
    results: Iterable[ResultT],
    bounds: SourceBounds | None,
    native: frozenset[str] = frozenset(),
) -> list[ResultT]:
    """The results within ``bounds``, in order.

    ``native`` names the bounds the service applied in its request: the domain rules are
    checked again anyway; a date bound in ``native`` is left to the service.
    """
    kept = list(results)
    if bounds is None or bounds.empty:
        return kept
    after = None if "published_after" in native else bounds.published_after
    before = None if "published_before" in native else bounds.published_before
    return [
        result
        for result in kept
        if bounds.allows_url(result.url) and _date_in(result.publication, after, before)
    ]
