"""Is every provider usable? Keys, and one cheap live call per provider, run concurrently.

Used by ``research(action="health")`` and ``foundry-mcp doctor``. An LLM is asked for a
one-token completion, a search provider for one result; each probe has a short timeout and
bypasses the retries of the resilience policy (a health check reports, it does not insist).
API keys are never part of the report: only whether one is present.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from foundry_mcp.config import KNOWN_PROVIDER_KINDS, Settings
from foundry_mcp.errors import FoundryError, ProviderError
from foundry_mcp.providers import registry as registry_module
from foundry_mcp.providers.detection import ASSISTANT_CLIS, cli_path
from foundry_mcp.providers.http.errors import scrub_secrets
from foundry_mcp.providers.llm.base import LLMRequest
from foundry_mcp.providers.registry import LLM_ROUTE_GROUPS, ProviderRegistry, parse_provider_spec
from foundry_mcp.providers.search_selection import SEARCH_KINDS

HEALTH_TIMEOUT_SECONDS = 15.0
SEARCH_KIND_NAMES = frozenset({"tavily", "google", "semantic_scholar", "local"})
PROBE_QUERY = "foundry-mcp health check"
PROGRAMS = {name: program for name, program, _ in ASSISTANT_CLIS}


async def check_providers(
    registry: ProviderRegistry, *, timeout: float = HEALTH_TIMEOUT_SECONDS
) -> dict[str, Any]:
    """The state of every known or configured provider, probed concurrently."""
    settings = registry.settings
    uses = _uses(registry)
    names = sorted(
        {*KNOWN_PROVIDER_KINDS, *settings.providers, *uses},
        key=lambda name: (name not in uses, name),
    )
    entries = [_describe(registry, name, uses.get(name, [])) for name in names]
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for entry in entries:
            if entry.pop("_probe", None) is not None:
                group.start_soon(_probe, registry, entry, timeout)
    policies = registry.resilience.snapshot()
    problems: list[str] = []
    for entry in entries:
        if entry["name"] in policies:
            entry["circuit"] = policies[entry["name"]]["circuit"]["state"]
        if entry["in_use"] and entry["status"] != "ok":
            problems.append(problem_line(entry))
    secrets = [settings.provider(name).key() for name in settings.providers]
    report: dict[str, Any] = {
        "ok": not problems,
        "providers": entries,
        "problems": problems,
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    scrubbed: dict[str, Any] = _scrub(report, secrets)
    return scrubbed


def _uses(registry: ProviderRegistry) -> dict[str, list[str]]:
    """What each provider is used for, by provider name."""
    research = registry.settings.research
    uses: dict[str, list[str]] = {}
    default, _ = parse_provider_spec(research.default_provider)
    uses.setdefault(default, []).append("default LLM")
    for group in LLM_ROUTE_GROUPS:
        for position, spec in enumerate(registry.route_specs(group)):
            name, _ = parse_provider_spec(spec)
            uses.setdefault(name, []).append(group if position == 0 else f"{group} fallback")
    try:  # the search providers a research started now would use
        searching, _ = registry.search_providers(announce=False)
    except FoundryError:  # none can run: the listed ones that cannot, each with its fix
        listed = (raw.strip().lower() for raw in research.deep_research_providers)
        searching = [name for name in listed if registry.search_problem(name)]
    for name in searching:
        uses.setdefault(name, []).append("search")
    settings = registry.settings
    if research.local.paths and not any(settings.provider_kind(n) == "local" for n in uses):
        uses.setdefault("local", []).append("search")  # local documents are searched too
    return uses


def _probe_model(registry: ProviderRegistry, name: str) -> str | None:
    """The model a research would use with this provider first."""
    research = registry.settings.research
    specs = [research.default_provider]
    for group in LLM_ROUTE_GROUPS:
        specs += registry.route_specs(group)
    for spec in specs:
        if parse_provider_spec(spec)[0] == name:
            return registry.resolve_llm(spec, None)[1]
    return registry.resolve_llm(name, None)[1]


def _describe(registry: ProviderRegistry, name: str, used_for: list[str]) -> dict[str, Any]:
    """A provider's entry before probing; ``_probe`` is set when a live call should be made."""
    settings: Settings = registry.settings
    provider = settings.provider(name)
    kind = settings.provider_kind(name)
    entry: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "role": _role(kind),
        "in_use": bool(used_for),
        "used_for": used_for,
        "key_present": provider.key() is not None,
        "base_url": _safe_url(provider.base_url),
        "model": None,
        "status": "not_configured",
        "latency_s": None,
        "error_kind": None,
        "problem": None,
        "fix": None,
        "note": None,
    }
    if kind is None:
        entry["problem"] = f"'{name}' is not a provider foundry-mcp knows, and has no type."
        entry["fix"] = (
            f'Set type = "openai" (or another kind) in [providers.{name}], or remove the name '
            "from the configuration."
        )
        return entry
    if entry["role"] == "llm":
        try:
            entry["model"] = _probe_model(registry, name)
        except FoundryError as exc:
            entry["problem"] = exc.message
            entry["fix"] = exc.remediation
            return entry
    elif kind in SEARCH_KINDS:
        problem = _search_problem(registry, name)
        if problem is not None:
            entry["problem"], entry["fix"] = problem
            return entry
    else:
        entry["status"] = "unsupported"
        entry["problem"] = f"The {kind} provider is not supported by this version."
        entry["fix"] = f"Remove '{name}' from the configuration."
        return entry
    if not (entry["in_use"] or entry["key_present"]):
        # Usable without a key but not used: no call is made on its behalf.
        entry["status"] = "not_checked"
        entry["note"] = _unchecked_note(registry.settings, name)
        return entry
    entry["status"] = "unchecked"
    entry["_probe"] = True
    return entry


def _unchecked_note(settings: Settings, name: str) -> str:
    """Why a provider was not called, and what was looked at instead."""
    program = PROGRAMS.get(name)
    if program is None:
        return "Usable without a key; not called, as no research would use it now."
    found = cli_path(settings, name, program)
    where = (
        f"found at {found}"
        if found
        else f"not found on PATH (install it, or set [providers.{name}] command)"
    )
    return f"The {program} program is {where}; not called, as no research would use it now."


def _search_problem(registry: ProviderRegistry, name: str) -> tuple[str, str] | None:
    """(problem, fix) when search provider ``name`` cannot run, else None."""
    fallback_fix = "List a usable provider in [research] deep_research_providers."
    try:
        usable, warnings = registry.usable_search_providers([name])
    except FoundryError as exc:
        usable, warnings = [], [exc.message.removeprefix("No usable search provider. ")]
        fallback_fix = exc.remediation
    if name in usable:
        return None
    text = next((w for w in warnings if f"'{name}'" in w), None) or (
        warnings[0] if warnings else f"Search provider '{name}' cannot run."
    )
    problem, _, fix = text.partition("skipped.")
    return problem.strip().rstrip(";") + ".", fix.strip() or fallback_fix


async def _probe(registry: ProviderRegistry, entry: dict[str, Any], timeout: float) -> None:
    """One live call; fills in status, latency and, on failure, the problem and the fix."""
    name = entry["name"]
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout):
            if entry["role"] == "llm":
                adapter = await anyio.to_thread.run_sync(registry.llm_adapter, name)
                await adapter.complete(
                    LLMRequest(
                        system="You are a health check.",
                        user="Answer with the single word OK.",
                        model=entry["model"],
                        max_tokens=1,
                        temperature=None,
                        purpose="health",
                    )
                )
            else:
                search = await anyio.to_thread.run_sync(registry.search, name)
                await search.search(PROBE_QUERY, 1)
    except TimeoutError:
        entry.update(
            status="error",
            error_kind="transient",
            problem=f"{name} did not answer within {timeout:g} s.",
            fix=f"Check [providers.{name}] base_url, your network and the provider's status page.",
        )
    except ProviderError as exc:
        fix = for_a_check(exc.remediation)
        entry.update(status="error", error_kind=exc.kind, problem=exc.message, fix=fix)
    except FoundryError as exc:
        entry.update(status="error", problem=exc.message, fix=for_a_check(exc.remediation))
    except Exception as exc:  # a health check reports, it never fails
        entry.update(
            status="error",
            problem=f"The check of {name} failed unexpectedly ({type(exc).__name__}).",
            fix="See the server log; this may be a bug in foundry-mcp.",
        )
    else:
        entry["status"] = "ok"
    entry["latency_s"] = round(time.perf_counter() - started, 3)


def problem_line(entry: dict[str, Any]) -> str:
    """``name: problem Fix: fix``, without naming the provider twice when its problem starts
    with its name ("ddgs: cannot reach ...", "openai rejected the API key ...")."""
    name, problem = entry["name"], entry["problem"] or "unknown problem."
    for separator in (": ", " "):
        problem = problem.removeprefix(f"{name}{separator}")
    named = f"{name}: {problem}"
    return f"{named} Fix: {entry['fix']}" if entry.get("fix") else named


# "then resume the research" and its kin: a provider error's advice that a check has no use for.
_RESUME = re.compile(r"(?:[;,]\s*|\s+)(?:then\s+)?resume the research(?: by its id)?(?=[.;:,]|$)")


def for_a_check(remediation: str) -> str:
    """A provider error's fix as advice after a health check: nothing is to be resumed."""
    return _RESUME.sub("", remediation)


def _role(kind: str | None) -> str | None:
    if kind in registry_module.LLM_KINDS:
        return "llm"
    if kind in SEARCH_KIND_NAMES or kind in SEARCH_KINDS:
        return "search"
    return None


def _safe_url(url: str | None) -> str | None:
    """A base_url without any user:password part."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _scrub(value: Any, secrets: list[str | None]) -> Any:
    if isinstance(value, str):
        return scrub_secrets(value, *secrets)
    if isinstance(value, list):
        return [_scrub(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item, secrets) for key, item in value.items()}
    return value
