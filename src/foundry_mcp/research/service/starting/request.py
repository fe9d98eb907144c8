"""What a caller asks of one research: its question and options, in one request.

Each way to start a research (the tool's ``deep-research`` action, the ``research`` command,
the bench) builds a :class:`ResearchRequest` and hands it to ``ResearchService.start``, which
hands it on unchanged to ``ResearchStarter.start`` (``starter.py``); a new option is one field
here.

The values are kept as the caller gave them: the starter checks each one (``service.inputs``)
with an error that names the field and the fix, the same for every caller, so pydantic neither
coerces nor refuses them first. Only the configuration and pydantic are imported: the server
builds a request without loading the research code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from foundry_mcp.config.research_settings import LIMIT_BOUNDS, LimitArgs

_T = TypeVar("_T")


class _KeptAsGiven:
    """Pydantic takes the value as it is: the annotated type is for the reader and mypy."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.any_schema()


AsGiven = Annotated[_T, _KeptAsGiven]


class ResearchRequest(BaseModel):
    """One research's question and options, as its caller gave them (see the module)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: Any  # the research question
    system_prompt: AsGiven[str | None] = None  # extra context or instructions
    provider_id: AsGiven[str | None] = None  # 'provider' or 'provider:model': it runs every phase
    model: AsGiven[str | None] = None
    # The caller's limits; one left out, or None, is the effort's or the configuration's.
    limits: AsGiven[LimitArgs] = Field(default_factory=LimitArgs)
    mode: AsGiven[str | None] = None  # auto, simple, hierarchical, hypotheses
    source_types: Any = None  # web, academic, news, local: keeps those kinds of sources
    # Domains or address prefixes that rank higher and are never cut below a headline.
    preferred_sources: Any = None
    effort: Any = None  # quick, standard, deep: the limits, mode and checks not given
    max_time_s: AsGiven[float | None] = None  # the time ceiling, in seconds
    language: Any = None  # the report's (None: the question's, when recognised)
    clarify: Any = None  # auto, off, always: ask about a vague question first
    review_plan: AsGiven[bool] = False  # wait after planning until the plan is approved
    # include_domains, exclude_domains, published_after, published_before: bound the sources,
    # over the configured bounds.
    bounds: AsGiven[Mapping[str, Any] | None] = None
    output_schema: Any = None  # a JSON Schema the research also answers in, each value cited

    @classmethod
    def of(cls, query: Any, **options: Any) -> ResearchRequest:
        """The request of ``query`` with ``options`` given by name, each limit among them
        (``max_iterations=2``), as a script or a test gives them."""
        given = {name: options.pop(name) for name in LIMIT_BOUNDS if name in options}
        limits = cast(LimitArgs, {**options.pop("limits", {}), **given})
        return cls(query=query, limits=limits, **options)
