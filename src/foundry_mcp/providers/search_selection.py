"""Which search providers a research uses: the configured list, what each can run with, the
kinds of sources each serves, and the errors that say how to get one that is missing."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from foundry_mcp.config import MCP_PREFIX, PROVIDER_ENV, ProviderKind, Settings
from foundry_mcp.errors import ProviderNotConfiguredError
from foundry_mcp.providers.search.base import SourceType, native_bounds_of, served_types
from foundry_mcp.providers.search.bounds import SourceBounds

SEARCH_KINDS: frozenset[ProviderKind] = frozenset(
    {"tavily", "google", "semantic_scholar", "local", "ddgs", "mcp"}
)
# The kinds that need a key to run (Semantic Scholar only to leave the shared public rate limit).
KEYED_KINDS: frozenset[ProviderKind] = frozenset({"tavily", "google", "semantic_scholar"})

# How to get a usable provider for each kind of sources, for the error of a start that asks for
# a kind no usable provider serves.
SOURCE_TYPE_FIXES: dict[str, str] = {
    "web": (
        "Web search needs Tavily (TAVILY_API_KEY) or Google (GOOGLE_API_KEY and GOOGLE_CSE_ID), "
        "set in the MCP server's env block or in [providers.<name>] of ~/.foundry-mcp.toml, and "
        "listed in [research] deep_research_providers; or the web search with no key: list ddgs "
        "there."
    ),
    "news": (
        "News comes from Tavily's news search: set TAVILY_API_KEY in the MCP server's env block "
        "(or api_key in [providers.tavily] of ~/.foundry-mcp.toml) and keep tavily in "
        "[research] deep_research_providers; or from the web search with no key: list ddgs "
        "there."
    ),
    "academic": (
        "Academic papers come from Semantic Scholar, which needs no key: list semantic_scholar "
        "in [research] deep_research_providers."
    ),
    "local": (
        "Your own documents are searched once [research.local] paths names them, e.g. "
        'paths = ["~/notes"] in ~/.foundry-mcp.toml.'
    ),
}


def key_hint(name: str) -> str:
    """Where the API key of provider ``name`` goes."""
    variables = [variable for variable, key in PROVIDER_ENV.get(name, ()) if key == "api_key"]
    where = f"`api_key` in [providers.{name}] of ~/.foundry-mcp.toml"
    if variables:
        where = f"{variables[0]} in the MCP server's env block, or {where}"
    return f"Set {where}."


_NO_SEARCH_FIX = (
    f"{key_hint('tavily')} Or use Google (GOOGLE_API_KEY and GOOGLE_CSE_ID), Semantic Scholar "
    "(no key needed), the web search with no key (ddgs), or your own documents "
    "([research.local] paths). List the provider in [research] deep_research_providers."
)


class SearchSelection:
    """The search providers of one configuration; ``search_class`` gives an adapter's class."""

    def __init__(self, settings: Settings, search_class: Callable[[str], type]) -> None:
        self._settings = settings
        self._search_class = search_class

    def for_research(self, source_types: Sequence[str] = ()) -> tuple[list[str], list[str]]:
        """The search providers of a research that asks for ``source_types`` (none: every
        kind), in priority order, and warnings about the ones left out.

        The candidates are ``[research] deep_research_providers`` (see
        :meth:`usable`) as the user set it; an untrusted project file's list only narrows the
        result (:meth:`_narrowed`). From the default list, a provider that cannot run is
        left out quietly (the specification's "skip unavailable providers"); Semantic
        Scholar, which needs no key, takes part only with a key or when academic sources are
        asked for; and the keyless web search (``ddgs``, last) only while no provider has a
        key: once you configure one, your questions go to no service you did not choose. Those
        skipped providers are named in the warnings only when no outside provider is left. With
        ``source_types``, only providers serving one of them take part, and a kind that none
        serves raises ``ProviderNotConfiguredError`` saying what is missing and how to get it.
        """
        research = self._settings.research
        chosen_by_user = "deep_research_providers" in research.model_fields_set
        wanted = set(source_types)
        listed = self._listed(research.deep_research_providers)
        keyed = any(self._keyed(name) for name in listed)
        usable: list[str] = []
        problems: dict[str, str] = {}
        for name in listed:
            problem = self.problem(name)
            if problem is None and not chosen_by_user:
                problem = self._sits_out(name, wanted, keyed)
            if problem is None:
                usable.append(name)
            else:
                problems[name] = problem

        def relevant(name: str) -> bool:
            return not wanted or bool(wanted & set(self.types(name)))

        for kind in source_types:
            if not any(kind in self.types(name) for name in usable):
                raise self._unserved(kind, [n for n in listed if n in problems], problems)
        usable = [name for name in usable if relevant(name)]
        if not usable:
            detail = " ".join(problems.values()) or "deep_research_providers is empty."
            raise ProviderNotConfiguredError(
                f"No usable search provider. {detail}", remediation=_NO_SEARCH_FIX
            )
        skipped = [name for name in listed if name in problems and relevant(name)]
        if not chosen_by_user:
            outside = [n for n in usable if "local" not in self.types(n)]
            skipped = [] if outside else [n for n in skipped if n != "local"]
        usable, refusal = self._narrowed(usable, source_types)
        return usable, [problems[name] for name in skipped] + refusal

    def _narrowed(
        self, usable: list[str], source_types: Sequence[str]
    ) -> tuple[list[str], list[str]]:
        """``usable`` narrowed by an untrusted project file's ``deep_research_providers``,
        and the warning of a list that would not narrow it.

        The file may leave out services your own settings would ask, never bring in one they
        would not: a list naming none of ``usable`` (Semantic Scholar or the keyless web
        search in place of your Tavily key, say), or none serving a kind of sources the research
        asks for, is ignored, with a warning naming the key.
        """
        narrowing = self._settings.narrowing
        if narrowing.deep_research_providers is None:
            return usable, []
        wanted = self._listed(narrowing.deep_research_providers)
        narrowed = [name for name in usable if name in wanted]
        unserved = [k for k in source_types if not any(k in self.types(n) for n in narrowed)]
        if narrowed and not unserved:
            return narrowed, []
        listed = json.dumps(narrowing.deep_research_providers)
        if narrowed:
            outcome = f"{listed} leaves no provider for the {unserved[0]} sources asked for;"
        else:
            outcome = f"{listed} names none of the services your own settings search here;"
        outcome += f" they go to {', '.join(usable)}."
        return usable, [narrowing.refusal("deep_research_providers", outcome)]

    def usable(self, names: list[str]) -> tuple[list[str], list[str]]:
        """The named search providers that can run, in order, and warnings for the rest.

        Tavily and Google need their keys (Google also a search engine id), Semantic Scholar
        and ddgs need none, ``local`` needs ``[research.local] paths``. When local paths are
        set and no local provider is listed, ``local`` is added at the end. Raises
        ``ProviderNotConfiguredError`` when none is usable.
        """
        usable: list[str] = []
        warnings: list[str] = []
        for name in self._listed(names):
            problem = self.problem(name)
            if problem is None:
                usable.append(name)
            else:
                warnings.append(problem)
        if not usable:
            detail = " ".join(warnings) or "deep_research_providers is empty."
            raise ProviderNotConfiguredError(
                f"No usable search provider. {detail}", remediation=_NO_SEARCH_FIX
            )
        return usable, warnings

    def bounds_report(self, names: Sequence[str], bounds: SourceBounds) -> dict[str, Any]:
        """The ``bounds`` as a research's status shows them: for each outside search provider,
        the ones its service applies itself (the rest are checked on its results here), and the
        user's own sources, which no bound applies to."""
        by_service: dict[str, list[str]] = {}
        own = []
        for name in names:
            if self._settings.provider_kind(name) in ("local", "mcp"):
                own.append(name)
            else:
                native = native_bounds_of(self._search_class(name)) & bounds.given
                by_service[name] = sorted(native)
        return {
            **bounds.model_dump(mode="json", exclude_defaults=True),
            "applied_by_service": by_service,
            "not_bounded": own,
        }

    def types(self, name: str) -> tuple[SourceType, ...]:
        """The kinds of sources search provider ``name`` serves (none for an unknown kind)."""
        kind = self._settings.provider_kind(name)
        if kind not in SEARCH_KINDS:
            return ()
        return served_types(self._search_class(name))

    def _listed(self, names: Sequence[str]) -> list[str]:
        """``names`` normalised and without repeats, with ``local`` added when its paths are
        set and no local provider is listed, and every configured MCP source (``mcp.<name>``)
        unless the list names some: then only those."""
        listed: list[str] = []
        for raw in names:
            name = raw.strip().lower()
            if name and name not in listed:
                listed.append(name)
        local_paths = bool(self._settings.research.local.paths)
        if local_paths and not any(self._settings.provider_kind(n) == "local" for n in listed):
            listed.append("local")
        if any(name.startswith(MCP_PREFIX) for name in listed):
            return listed
        # The user's MCP sources take part as their documents do (source type local).
        listed += [
            f"{MCP_PREFIX}{n}"
            for n in self._settings.mcp_sources
            if f"{MCP_PREFIX}{n}" not in listed
        ]
        return listed

    def _keyed(self, name: str) -> bool:
        """Whether ``name`` is a search provider that can run and has its key."""
        kind = self._settings.provider_kind(name)
        has_key = self._settings.provider(name).key() is not None
        return kind in KEYED_KINDS and has_key and self.problem(name) is None

    def _sits_out(self, name: str, wanted: set[str], keyed: bool) -> str | None:
        """Why a keyless provider of the default list sits this research out, or None: a
        Semantic Scholar without a key that nobody asked for, or the keyless web search when
        some provider (``keyed``) has a key."""
        kind = self._settings.provider_kind(name)
        no_key = self._settings.provider(name).key() is None
        if kind == "semantic_scholar" and no_key and "academic" not in wanted:
            return (
                f"Search provider '{name}' (academic papers, no key needed) is used only "
                "when you list it in [research] deep_research_providers, set its api_key, "
                "or ask for source_types=['academic']; skipped."
            )
        if kind == "ddgs" and keyed:
            return (
                f"Search provider '{name}' (web search with no key) is used only while no "
                "search provider has a key, or when you list it in [research] "
                "deep_research_providers; skipped."
            )
        return None

    def _unserved(
        self, kind: str, skipped: list[str], problems: dict[str, str]
    ) -> ProviderNotConfiguredError:
        """The error of a start asking for a kind of sources no usable provider serves."""
        reasons = " ".join(problems[n] for n in skipped if kind in self.types(n))
        fix = SOURCE_TYPE_FIXES.get(kind, "")
        return ProviderNotConfiguredError(
            f"source_types asks for {kind} sources, which no usable search provider serves."
            + (f" {reasons}" if reasons else ""),
            remediation=f"{fix} Or leave '{kind}' out of source_types.".strip(),
            details={"field": "source_types"},
        )

    def problem(self, name: str) -> str | None:
        """Why search provider ``name`` cannot run (a warning with the fix), or None."""
        kind = self._settings.provider_kind(name)
        settings = self._settings.provider(name)
        if kind is None and name.startswith(MCP_PREFIX):
            return (
                f"Search provider '{name}' names no MCP source: add a [mcp_sources."
                f"{name.removeprefix(MCP_PREFIX)}] table to your own configuration, or take it "
                "out of deep_research_providers; skipped."
            )
        if kind not in SEARCH_KINDS:
            return (
                f"Search provider '{name}' is not supported (use tavily, google, "
                "semantic_scholar, ddgs or local, or declare [providers."
                f'{name}] with type = "tavily" / "google" / ...); skipped.'
            )
        if kind == "tavily" and settings.key() is None:
            return f"Search provider '{name}' has no API key; skipped. {key_hint(name)}"
        if kind == "google" and (settings.key() is None or not (settings.cse_id or "").strip()):
            missing = " and ".join(
                what
                for what, absent in (
                    ("an API key", settings.key() is None),
                    ("a search engine id", not (settings.cse_id or "").strip()),
                )
                if absent
            )
            where = (
                "GOOGLE_API_KEY and GOOGLE_CSE_ID in the MCP server's env block, or "
                if name == "google"
                else ""
            )
            return (
                f"Search provider '{name}' needs {missing}; skipped. Set {where}api_key and "
                f"cse_id in [providers.{name}] of ~/.foundry-mcp.toml."
            )
        if kind == "local" and not self._settings.research.local.paths:
            return (
                f"Search provider '{name}' has no folders to search; skipped. Set "
                '[research.local] paths = ["~/notes", ...] in ~/.foundry-mcp.toml.'
            )
        return None
