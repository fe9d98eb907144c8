"""What the research service accepts: checks on a caller's input that name the field and the fix.

The bounds live in ``config`` (``MAX_QUERY_CHARS``, ``MAX_WAIT_SECONDS``, ``LIMIT_BOUNDS``), where
``server/arguments`` also finds them for the tool's schema; the service checks its input
itself, so the CLI and direct callers get the same errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from foundry_mcp.config import (
    LIMIT_BOUNDS,
    MAX_QUERY_CHARS,
    WHOLE_PAGES,
    ResearchSettings,
    check_reading_budget,
)
from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.providers.search.base import SOURCE_TYPES
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.research.models import (
    BranchStatus,
    Clarify,
    ExplorationMode,
    HypothesisMode,
    ModeOptions,
    ResearchLimits,
    ResearchMode,
    ResearchState,
    Status,
    SubQuestion,
)


def check_range(name: str, value: Any, low: float, high: float, *, integer: bool = True) -> Any:
    """``value`` if it is a number within [low, high]; ``InputError`` naming the field if not."""
    kind = "an integer" if integer else "a number"
    valid_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not valid_type:
        raise InputError(
            f"{name} must be {kind} between {low:g} and {high:g} (got {value!r}).",
            details={"field": name},
        )
    if not low <= value <= high:
        raise InputError(
            f"{name} must be between {low:g} and {high:g} (got {value}).",
            remediation=f"Pass {name} within {low:g}..{high:g}, or leave it out for the default.",
            details={"field": name},
        )
    return value


def check_query(query: Any) -> str:
    """The research question, stripped; ``InputError`` if it is missing, empty or too long."""
    if query is None or (isinstance(query, str) and not query.strip()):
        raise InputError(
            "query is required to start a deep research and must not be empty.",
            remediation="Pass the research question as query='...'.",
            details={"field": "query"},
        )
    if not isinstance(query, str):
        raise InputError("query must be a string.", details={"field": "query"})
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(
            f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}.",
            remediation="Shorten the question; put long background in system_prompt or "
            "summarise it.",
            details={"field": "query"},
        )
    return query.strip()


def parse_statuses(raw: str | None) -> list[Status]:
    """``"running,failed"`` as statuses; ``InputError`` naming the bad value."""
    if raw is None or not raw.strip():
        return []
    statuses = []
    for part in raw.split(","):
        name = part.strip().lower()
        try:
            statuses.append(Status(name))
        except ValueError:
            raise InputError(
                f"status {name!r} is not a research status.",
                remediation=f"Use one or more of: {', '.join(s.value for s in Status)}.",
                details={"field": "status"},
            ) from None
    return statuses


MAX_SEARCH_WORDS = 10
MAX_SEARCH_WORD_CHARS = 100


def search_words(raw: str | None) -> list[str]:
    """The words a research list is searched by (each must be in the question)."""
    if raw is None:
        return []
    if not isinstance(raw, str):
        raise InputError("query must be a string.", details={"field": "query"})
    words = list(dict.fromkeys(raw.split()))
    if len(words) > MAX_SEARCH_WORDS or any(len(w) > MAX_SEARCH_WORD_CHARS for w in words):
        raise InputError(
            f"query: a research list is searched by at most {MAX_SEARCH_WORDS} words of at "
            f"most {MAX_SEARCH_WORD_CHARS} characters.",
            remediation="Keep the few words that tell the research apart.",
            details={"field": "query"},
        )
    return words


MAX_PREFERRED_SOURCES = 20
MAX_PATTERN_CHARS = 200
_DOMAIN = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}$")


def check_preferred_sources(value: Any) -> list[str]:
    """The sites a research should favour: domains (``python.org``, also its subdomains) or
    ``http(s)://`` address prefixes, lower-cased, without repeats (none given: none).

    A list, or one comma-separated text; ``InputError`` saying what is wrong otherwise.
    """
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    example = "['docs.python.org', 'https://peps.python.org/pep-0703/']"
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise InputError(
            f"preferred_sources must be a list of domains or addresses (got {value!r}).",
            remediation=f"Pass preferred_sources as a list, e.g. {example}.",
            details={"field": "preferred_sources"},
        )
    patterns = list(dict.fromkeys(i.strip().lower() for i in items if i.strip()))
    if len(patterns) > MAX_PREFERRED_SOURCES:
        raise InputError(
            f"preferred_sources has {len(patterns)} entries; at most "
            f"{MAX_PREFERRED_SOURCES} are allowed.",
            remediation="Keep the sites that matter most, or name their common domain.",
            details={"field": "preferred_sources"},
        )
    bad = [
        p
        for p in patterns
        if len(p) > MAX_PATTERN_CHARS
        or not (p.startswith(("http://", "https://")) or _DOMAIN.match(p))
    ]
    if bad:
        raise InputError(
            f"preferred_sources has {', '.join(repr(p[:80]) for p in bad)}, which "
            f"{'is' if len(bad) == 1 else 'are'} neither a domain nor an http(s) address.",
            remediation=(
                "Give domains such as 'python.org' (its subdomains count too) or address "
                f"prefixes starting with https://, e.g. {example}."
            ),
            details={"field": "preferred_sources"},
        )
    return patterns


def check_source_types(value: Any) -> list[str]:
    """The kinds of sources a research asks for, without repeats (none given: every kind).

    A list, or one comma-separated text; ``InputError`` naming the allowed kinds otherwise.
    """
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    allowed = ", ".join(SOURCE_TYPES)
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise InputError(
            f"source_types must be a list of kinds of sources (got {value!r}).",
            remediation=f"Pass source_types as a list of: {allowed}; e.g. ['academic'].",
            details={"field": "source_types"},
        )
    kinds = [item.strip().lower() for item in items if item.strip()]
    unknown = [kind for kind in kinds if kind not in SOURCE_TYPES]
    if unknown:
        raise InputError(
            f"source_types has {', '.join(repr(k) for k in unknown)}, which "
            f"{'is not a kind' if len(unknown) == 1 else 'are not kinds'} of sources.",
            remediation=(
                f"Use one or more of: {allowed} (web: Tavily or Google; academic: Semantic "
                "Scholar; news: Tavily's news search; local: your documents); or leave "
                "source_types out to search with every configured provider."
            ),
            details={"field": "source_types"},
        )
    return list(dict.fromkeys(kinds))


def resolve_mode(research: ResearchSettings, mode: str | None) -> ModeOptions:
    """The research's mode and the modes' settings; ``mode`` overrides ``[research] mode``."""
    requested = research.mode if mode is None else mode
    try:
        chosen = ResearchMode(requested)
    except ValueError:
        raise InputError(
            f"mode must be one of {', '.join(m.value for m in ResearchMode)} (got {mode!r}).",
            remediation="Pass mode='auto' (the default), 'simple', 'hierarchical' or "
            "'hypotheses', or leave it out.",
            details={"field": "mode"},
        ) from None
    return ModeOptions(
        requested=chosen,
        min_sub_questions=research.min_sub_questions,
        max_sub_questions=research.max_sub_questions,
        sub_question_min_iterations=research.sub_question_min_iterations,
        sub_question_max_iterations=research.sub_question_max_iterations,
        sub_question_max_queries=research.sub_question_max_queries,
        max_hypotheses_per_task=research.max_hypotheses_per_task,
        hypothesis_mode=HypothesisMode(research.hypothesis_mode),
        exploration_mode=ExplorationMode(research.exploration_mode),
        min_confidence_threshold=research.min_confidence_threshold,
    )


def research_limits(
    research: ResearchSettings, base: ResearchLimits | None, given: LimitArgs
) -> ResearchLimits:
    """``base`` (or the ``[research]`` defaults) with the limits the caller gave, each checked
    (a reading budget of :data:`~foundry_mcp.config.WHOLE_PAGES` reads whole pages)."""
    limits = base.model_copy() if base else ResearchLimits(**research.default_limits())
    for name, value in given.items():
        if name == "reading_budget" and value is not None:
            limits.reading_budget = _reading_budget(value)
        elif value is not None:
            low, high = LIMIT_BOUNDS[name]
            checked = check_range(name, value, low, high, integer=name != "task_timeout")
            setattr(limits, name, float(checked) if name == "task_timeout" else checked)
    return limits


def _reading_budget(value: Any) -> int | None:
    """A caller's reading budget checked (the rule of ``[research]`` too): None for
    :data:`WHOLE_PAGES` (no budget)."""
    try:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"a reading budget is an integer number of tokens (got {value!r})")
        check_reading_budget(value)
    except ValueError as error:
        low, high = LIMIT_BOUNDS["reading_budget"]
        raise InputError(
            f"reading_budget: {error}.",
            remediation=f"Pass reading_budget={WHOLE_PAGES} for whole pages, or {low:g} to "
            f"{high:g} tokens, or leave it out for the effort's budget.",
            details={"field": "reading_budget"},
        ) from None
    return None if value == WHOLE_PAGES else value


def stopped_parts(state: ResearchState) -> list[SubQuestion]:
    """The sub-questions of a hierarchical research that were stopped before they were
    answered (modes/watch.py): a resume researches them again."""
    return [sq for sq in state.sub_questions if sq.status is BranchStatus.FAILED]


def check_can_continue(state: ResearchState, max_iterations: int | None) -> None:
    """Refuse to continue a completed research unless more iterations can still help it, or
    it has sub-questions that were stopped."""
    if state.mode is ResearchMode.HIERARCHICAL and stopped_parts(state):
        return
    if state.mode is not ResearchMode.SIMPLE:
        raise InvalidStateError(
            f"Research {state.id} is a completed {state.mode.value} research; only a simple "
            "research can be continued with more iterations.",
            remediation=(
                "Read it with action='deep-research-report'. To go deeper, start a new "
                "research on the part you need (a sub-question or a hypothesis), or raise "
                "sub_question_max_iterations / max_hypotheses_per_task for the next one."
            ),
        )
    if max_iterations is None or max_iterations <= state.iteration:
        raise InvalidStateError(
            f"Research {state.id} is already completed "
            f"(iteration {state.iteration} of {state.limits.max_iterations}).",
            remediation=(
                "Read it with action='deep-research-report'. To research further, resume "
                f"with max_iterations above {state.iteration}, or start a new research."
            ),
        )
    if not state.unaddressed_gaps():
        raise InvalidStateError(
            f"Research {state.id} is completed and has no open gap left to research.",
            remediation="Start a new research with a more specific question.",
        )


def check_clarify(value: Any, configured: str) -> Clarify:
    """When to clarify the question: ``value`` (auto, off, always) or the configuration's."""
    if value is None:
        return Clarify(configured)
    try:
        return Clarify(str(value).strip().lower())
    except ValueError:
        raise InputError(
            f"clarify must be auto, off or always (got {value!r}).",
            remediation="Give clarify as auto (ask about a vague question when the user can "
            "be asked), always or off; or leave it out.",
            details={"field": "clarify"},
        ) from None


BOUND_EXAMPLE = (
    "include_domains=['docs.python.org'], exclude_domains=['example.com'], "
    "published_after='2024-01-01'"
)


def check_bounds(given: Mapping[str, Any], configured: ResearchSettings) -> SourceBounds | None:
    """A research's source bounds: the call's (``given``: include_domains, exclude_domains,
    published_after, published_before) over ``[research]``'s. The call's included domains
    replace the configured ones, its excluded ones are added, its days replace the configured
    days. None when nothing bounds it; ``InputError`` naming the value to change otherwise."""
    wanted = {key: value for key, value in given.items() if value not in (None, [], "")}
    merged: dict[str, Any] = {
        "include_domains": wanted.get("include_domains", configured.include_domains),
        "exclude_domains": [
            *configured.exclude_domains,
            *_as_list(wanted.get("exclude_domains", [])),
        ],
        "published_after": wanted.get("published_after", configured.published_after),
        "published_before": wanted.get("published_before", configured.published_before),
    }
    try:
        bounds = SourceBounds.model_validate(merged)
    except PydanticValidationError as exc:
        error = exc.errors()[0]
        said = error["msg"].removeprefix("Value error, ")
        field = str(error["loc"][0]) if error["loc"] else "bounds"
        if field != "bounds":
            from_file = field not in wanted
            said = f"{field}{' ([research] in your configuration)' if from_file else ''}: {said}"
        raise InputError(
            said,
            remediation=f"Give domains and ISO days (YYYY-MM-DD), e.g. {BOUND_EXAMPLE}.",
            details={"field": field},
        ) from None
    return None if bounds.empty else bounds


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [part for part in value.split(",") if part.strip()]
    return list(value) if isinstance(value, list | tuple) else [value]
