"""The report's cost footer: what the research's LLM calls read, wrote and cost, by phase.

The report as served (the report action, the ``research://{id}/report`` resource and the
markdown and JSON exports) ends with one line under a rule::

    ---
    *Cost: 84,781 prompt and 9,012 completion tokens in 31 calls, about $0.0421 (estimated):
    planning 1,122 + 476 ($0.0011); analysis 71,233 + 5,100 ($0.0300); ...*

Prompt and completion tokens are the providers' counts where they give them; the cost is
estimated from the model prices foundry-mcp knows (``[providers.*.prices]``), and a call to a
model without a known price is said to be unpriced rather than counted as free. The stored
report stays as the writer left it; the footer is added when the report is read, so it always
tells the research's whole cost, resumed runs and revisions included. A version made by a
revision (a rewrite, deepen or refresh) adds a line with that version's own cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the MCP surface imports this room before any research code is needed
    from foundry_mcp.research.models import ResearchState, UsageTotals

PHASE_ORDER = ("planning", "gathering", "analysis", "synthesis", "refinement")
RULE = "\n\n---\n"


def with_cost_footer(state: ResearchState, appendix: str = "") -> str:
    """``state``'s report followed by its footer: what was asked of the user before researching
    (or assumed), and the cost ("" when there is no report). ``appendix``, a section of the
    report's export (its follow-up questions), goes between the report and the footer."""
    report = state.report or ""
    if report and appendix.strip():
        report = f"{report.rstrip()}\n\n{appendix.strip()}\n"
    lines = (clarification_note(state), cost_footer(state), version_cost_note(state))
    footer = "\n\n".join(line for line in lines if line)
    return f"{report.rstrip()}{RULE}{footer}\n" if report and footer else report


WHY_UNANSWERED = {
    "declined": "the user declined to answer",
    "dismissed": "the questions were closed unanswered",
    "timed_out": "no answer came in time",
    "answered": "",
}


def clarification_note(state: ResearchState) -> str:
    """What was asked before researching and answered, or assumed ("" when nothing was)."""
    told = state.clarification
    if told is None or told.outcome == "clear":
        return ""
    if told.outcome == "not_asked":
        if not told.assumptions:
            return ""
        return (
            "*The question could be read in several ways and the user could not be asked; the "
            f"research assumed: {'; '.join(told.assumptions)}.*"
        )
    asked = []
    for question in told.questions:
        answer = told.answers.get(question.id)
        if answer:
            asked.append(f"{question.question} {answer}.")
        else:
            assumed = f"; assumed {question.assumption}" if question.assumption else ""
            asked.append(f"{question.question} (no answer{assumed}).")
    why = WHY_UNANSWERED.get(told.outcome, "")
    return f"*Asked before researching{f' ({why})' if why else ''}: {' '.join(asked)}*"


def cost_footer(state: ResearchState) -> str:
    """The footer line (see the module); "" for a research that made no LLM call."""
    usage = state.llm_usage
    total = usage.total
    if total.calls == 0:
        return ""
    phases = sorted(
        usage.by_phase.items(),
        key=lambda item: (PHASE_ORDER.index(item[0]) if item[0] in PHASE_ORDER else 99, item[0]),
    )
    parts = "; ".join(f"{phase} {_tokens(totals)} ({_cost(totals)})" for phase, totals in phases)
    return (
        f"*Cost: {total.input_tokens:,} prompt and {total.output_tokens:,} completion tokens "
        f"in {total.calls:,} call{'s' if total.calls != 1 else ''}, {_cost(total, about=True)}: "
        f"{parts}.*"
    )


def version_cost_note(state: ResearchState) -> str:
    """What the version shown cost on its own, when a revision made it ("" otherwise)."""
    shown = next((v for v in reversed(state.versions) if v.report == state.report), None)
    if shown is None or shown.number == 1:
        return ""
    total, searches = shown.cost.total, shown.cost.search_calls
    calls = f"{total.calls:,} call{'s' if total.calls != 1 else ''}"
    spent = (
        f"{total.input_tokens:,} prompt and {total.output_tokens:,} completion tokens in {calls}"
        f" ({_cost(total)})"
        if total.calls
        else "no LLM call"
    )
    return (
        f"*Version {shown.number} ({shown.kind.value}): {spent} and {searches:,} "
        f"search{'es' if searches != 1 else ''}; the cost above is the research's, every version "
        "included.*"
    )


def _tokens(totals: UsageTotals) -> str:
    return f"{totals.input_tokens:,} + {totals.output_tokens:,}"


def _cost(totals: UsageTotals, *, about: bool = False) -> str:
    if totals.unpriced_calls == totals.calls:
        return "cost unknown (no price known for the model)"
    figure = f"{'about ' if about else ''}${totals.cost_usd:.4f}"
    if about:
        figure += " (estimated)"
    if totals.unpriced_calls:
        figure += f", {totals.unpriced_calls} unpriced call(s) not counted"
    return figure
