"""The MCP prompts: slash commands that start a research or take one further."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import Field

from foundry_mcp.research.effort import Effort  # light: the research code stays unimported

EFFORTS = tuple(effort.value for effort in Effort)

DEEP_RESEARCH_PROMPT = """\
Research this question with the foundry-mcp `research` tool:

{question}

1. Call `research` with action="deep-research" and query set to the question above{effort}.
2. Call `research` with action="deep-research-status", the returned research_id and wait=true; \
repeat until the status is completed, failed, cancelled, timed_out or interrupted. If it is \
waiting, show the user its plan and, once they approve it (or change it), call \
action="deep-research-resume" (with plan set to the changed queries), then go on waiting.
3. If it completed, read the report with action="deep-research-report" (page on with \
offset=next_offset while next_offset is not null) and answer from it, citing its numbered \
sources. Otherwise say how it ended and give the status's next_action."""

FOLLOWUP_PROMPT = """\
Take foundry-mcp research {research_id} further with the `research` tool.

1. Call `research` with action="deep-research-status" and research_id="{research_id}".
2. If it is queued or running, repeat that call with wait=true until it ends.
3. If it ended cancelled, failed, timed_out or interrupted, resume it: action="deep-research-resume", \
research_id="{research_id}"; then follow its status as in step 2.
4. Once it is completed, read its report (action="deep-research-report", research_id=\
"{research_id}", paging with offset=next_offset) {task}"""

FOLLOWUP_QUESTION = """\
and answer this follow-up:

{question}

Ask it with action="deep-research-ask", research_id="{research_id}" and query set to the \
follow-up: it is answered from the sources the research read, with the report's numbered \
sources and the quotes behind them, without searching again. Answer from that and the report, \
citing the numbers. If its answerable is false, say so and offer what its next_action says \
(continuing the research on the follow-up, or starting a new one)."""

FOLLOWUP_SUMMARY = "and summarise what it found, citing the report's numbered sources."


def deep_research(
    question: Annotated[str, Field(description="The question to research.")],
    effort: Annotated[
        str | None, Field(description="How hard to look: quick, standard or deep.")
    ] = None,
) -> str:
    """Research a question in depth and answer it from a cited report."""
    effort = _effort(effort)
    clause = f' and effort="{effort}"' if effort else ""
    return DEEP_RESEARCH_PROMPT.format(question=question.strip(), effort=clause)


def research_followup(
    research_id: Annotated[str, Field(description="The research to take further.")],
    question: Annotated[
        str | None, Field(description="A follow-up question to answer from its report.")
    ] = None,
) -> str:
    """Continue a research, or answer a follow-up question from its report."""
    question = (question or "").strip()
    research_id = research_id.strip()
    task = (
        FOLLOWUP_QUESTION.format(question=question, research_id=research_id)
        if question
        else FOLLOWUP_SUMMARY
    )
    return FOLLOWUP_PROMPT.format(research_id=research_id, task=task)


def register_prompts(server: MCPServer[Any]) -> None:
    """Add the prompts to ``server``."""
    server.prompt(name="deep_research", title="Deep research")(deep_research)
    server.prompt(name="research_followup", title="Research follow-up")(research_followup)


def _effort(value: str | None) -> str | None:
    """The effort asked for (None when left empty); anything else is refused with its choices."""
    value = (value or "").strip().lower()
    if value and value not in EFFORTS:
        # MCPError reaches the client as is; the SDK would hide any other error's text.
        raise MCPError(code=INVALID_PARAMS, message=f"effort must be one of {', '.join(EFFORTS)}.")
    return value or None
