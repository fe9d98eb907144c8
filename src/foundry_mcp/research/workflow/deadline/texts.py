"""What the time ceiling says: its decisions and warnings, and what the report tells its reader
about the deadline (see :mod:`foundry_mcp.research.workflow.deadline.ceiling`).

Every text names its figures: the deadline, the time used, when writing had to start and the
estimate behind it, and what the deadline left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foundry_mcp.research.models import AgentDecision, BranchStatus, Phase, ResearchState

if TYPE_CHECKING:
    from foundry_mcp.research.workflow.deadline.pace import Pace, WritingTime

TIME_LIMIT_HEADING = "## Time Limit"


def stop_texts(
    max_time_s: float,
    iteration: int,
    phase: Phase,
    figures: Mapping[str, Any],
    writing: WritingTime,
    pace: Pace,
    *,
    hopeless: bool,
    write: bool,
    begun: bool,
) -> tuple[str, str]:
    """The rationale of a ``time_ceiling`` decision that stopped ``phase`` (``begun``) or did
    not begin it (its ``figures``, the ``writing`` it kept time for at ``pace``), and its
    warning."""
    findings = int(figures["findings"])
    if findings:
        what = f"{findings} finding(s)"
    elif (figures.get("in_flight") or {}).get("analysis"):
        what = "the first findings of the analysis in flight"
    else:
        what = "a report without findings"
    used, reserve = float(figures["used_s"]), float(figures["reserve_s"])
    left = _left_out(figures)
    when = (
        "no analysis call in flight could answer in time"
        if hopeless
        else f"writing had to start by {figures['write_by_s']:.1f} s"
    )
    rationale = (
        f"Deadline {max_time_s:g} s (max_time_s), {used:.1f} s used: {when} to write and check "
        f"{what} in about {reserve:.1f} s ({writing.describe()}, plus assembling and saving), "
        f"at the pace of {pace.describe()}. {phase.value.capitalize()} was "
        f"{'stopped' if begun else 'not begun'}{'; left out: ' + left if left else ''}; "
        + (
            "the report is written from what was found."
            if write
            else "the report already written stands."
        )
    )
    warning = (
        f"Time ceiling reached (max_time_s = {max_time_s:g}): {phase.value} of iteration "
        f"{iteration} was {'stopped' if begun else 'not begun'} at {used:.1f} s, when writing "
        "had to start (writing and "
        f"checking {what} estimated at {reserve:.1f} s from this research's measured LLM "
        f"latency){'; left out: ' + left if left else ''}; no further round was run."
    )
    return rationale, warning


def round_texts(
    max_time_s: float,
    iteration: int,
    figures: Mapping[str, Any],
    parts: Mapping[str, float],
    pace: Pace,
) -> tuple[str, str]:
    """The rationale and warning of a further round refused because it cannot end in time."""
    needs = sum(parts.values())
    used, write_by = float(figures["used_s"]), float(figures["write_by_s"])
    detail = (
        f"refinement {parts['refinement_s']:.1f} s, a search {parts['search_s']:.1f} s, an "
        f"analysis call {parts['analysis_s']:.1f} s"
    )
    left = max(0.0, write_by - used)
    rationale = (
        f"Deadline {max_time_s:g} s (max_time_s), {used:.1f} s used: a further round needs "
        f"about {needs:.1f} s ({detail}) before its findings are in hand, but only {left:.1f} s "
        f"remain before writing them up must start (at {write_by:.1f} s, at the pace of "
        f"{pace.describe()}); the report already written stands."
    )
    warning = (
        f"Time ceiling reached (max_time_s = {max_time_s:g}): at {used:.1f} s a further round "
        f"(about {needs:.1f} s before its findings) could not end in the {left:.1f} s left "
        f"before writing had to start (at {write_by:.1f} s); the report of iteration "
        f"{iteration} stands."
    )
    return rationale, warning


def last_stop(state: ResearchState) -> AgentDecision | None:
    """The last ``time_ceiling`` decision, when this run's ceiling stopped the research."""
    if not state.metadata.get("time_ceiling_reached"):
        return None
    for decision in reversed(state.decisions):
        if decision.action == "time_ceiling":
            return decision
    return None


def deadline_emptied(state: ResearchState, stop: AgentDecision) -> bool:
    """Whether the deadline, not the sources, left the report without findings: analysis was
    in flight or not done, or no source was found while searches were still to run."""
    if ((stop.outputs or {}).get("in_flight") or {}).get("analysis"):
        return True
    if any(not s.analyzed for s in state.sources):
        return True
    unfinished = any(sq.status is not BranchStatus.COMPLETED for sq in state.sub_questions)
    planned = bool(state.sub_queries or state.sub_questions)
    return not state.sources and (not planned or unfinished or bool(state.pending_sub_queries()))


def no_finding_texts(state: ResearchState, stop: AgentDecision) -> tuple[str, str]:
    """Why a report the deadline left without findings has none, and what to do: the deadline
    was the cause, what it left out, and how long a report with findings would need."""
    figures = stop.outputs or {}
    limit = float(stop.inputs.get("max_time_s") or 0)
    used = float(figures.get("used_s") or 0)
    flying = int((figures.get("in_flight") or {}).get("analysis", 0))
    unanalysed = sum(1 for s in state.sources if not s.analyzed)
    if flying:
        story = (
            f"{flying} analysis call(s) over the {len(state.sources)} source(s) found were still "
            f"running at {used:.1f} s, when writing had to start"
        )
        story += _expected(figures)
    elif unanalysed:
        story = f"{unanalysed} source(s) were found but could not be analysed in time"
    else:
        pending = len(state.pending_sub_queries())
        unanswered = sum(1 for sq in state.sub_questions if sq.status is not BranchStatus.COMPLETED)
        story = f"it was stopped at {used:.1f} s, before any source was found"
        if pending:
            story += f" ({pending} search(es) not run)"
        elif unanswered:
            story += f" ({unanswered} sub-question(s) not researched)"
    why = (
        f"The deadline (max_time_s = {limit:g} s) ended the research before any finding could "
        f"be extracted: {story}. The research therefore makes no claims; this says nothing "
        "about what the sources hold."
    )
    needed = figures.get("needed_s")
    pace = (
        f"LLM calls of about {figures.get('latency_base_s', 0):.2f} s + "
        f"{figures.get('latency_per_token_ms', 0):.1f} ms per output token"
    )
    advice = (
        f"Give it more time: at this research's measured pace ({pace}), a report with findings "
        f"needs about {needed} s, so start it again with max_time_s = {needed} or more (or "
        "without max_time_s)."
        if needed
        else "Give it more time: start it again with a larger max_time_s (or without one)."
    )
    return why, advice


def time_limit_section(state: ResearchState, stop: AgentDecision | None, note: str | None) -> str:
    """A report section saying that the deadline ended the research (``stop``) and what it
    left out, and what it cut of the report's own writing and checking (``note``)."""
    limit = state.options.max_time_s or 0.0
    if stop is None:
        text = f"The research ran up to its deadline (max_time_s = {limit:g} s)."
    else:
        figures = stop.outputs or {}
        parts = []
        flying = int((figures.get("in_flight") or {}).get("analysis", 0))
        if flying:
            parts.append(f"{flying} analysis call(s) still running, whose findings are not here")
        unanalysed = sum(1 for s in state.sources if not s.analyzed)
        if unanalysed:
            parts.append(f"{unanalysed} source(s) found but not analysed")
        pending = len(state.pending_sub_queries())
        if pending:
            parts.append(f"{pending} planned search(es) not run")
        unanswered = int(figures.get("sub_questions_unanswered") or 0)
        if unanswered:
            parts.append(f"{unanswered} sub-question(s) whose researchers were stopped early")
        parts.append("any further round of research")
        text = (
            f"The research stopped at its deadline (max_time_s = {limit:g} s): writing began at "
            f"{float(figures.get('used_s') or 0):.1f} s, when writing and checking "
            f"{figures.get('findings', 0)} finding(s) was estimated to need "
            f"{float(figures.get('reserve_s') or 0):.1f} s. Left out: {'; '.join(parts)}."
        )
    if note:
        text += f" {note}"
    return f"{TIME_LIMIT_HEADING}\n\n{text}\n"


def check_note(checked: int, claims: int, needed_s: float, left_s: float) -> str:
    """What a fact-check cut to the time left did (``checked`` of ``claims`` sentences)."""
    if not checked:
        return (
            f"The fact-check was skipped: checking the {claims} cited sentence(s) needed about "
            f"{needed_s:.1f} s and {max(0.0, left_s):.1f} s were left, so no citation was "
            "checked against its sources."
        )
    return (
        f"The fact-check was cut to the time left ({max(0.0, left_s):.1f} s): {checked} of the "
        f"{claims} cited sentence(s) were checked (all would need about {needed_s:.1f} s)."
    )


def unwritten_note(max_time_s: float, unwritten: int, parts: int) -> str:
    """What the report says when the deadline came before the writer answered for
    ``unwritten`` of its ``parts`` parts: their findings are stated as found."""
    whole = unwritten >= parts
    what = "the report" if whole else f"{unwritten} of the report's {parts} parts"
    return (
        f"The writer had not finished {what} when the deadline (max_time_s = {max_time_s:g} s) "
        f"came, so {'the' if whole else 'their'} findings are listed as the analysis extracted "
        "them, each with its sources, not written up."
    )


def late_check_note(late: int, asked: int) -> str:
    """What the report says when the deadline came before the fact-checker judged ``late``
    of the ``asked`` sentences sent to it."""
    return (
        f"The fact-check was cut at the deadline: {late} of the {asked} cited sentence(s) sent "
        "to the fact-checker were not judged in time and are kept unverified."
    )


def _left_out(figures: Mapping[str, Any]) -> str:
    parts = []
    flying = figures.get("in_flight") or {}
    if flying:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(flying.items()))
        text = f"{sum(flying.values())} LLM call(s) in flight, cancelled ({kinds})"
        text += _expected(figures)
        parts.append(text)
    if figures.get("sources_not_analysed"):
        parts.append(f"{figures['sources_not_analysed']} source(s) not analysed")
    if figures.get("sub_queries_not_searched"):
        parts.append(f"{figures['sub_queries_not_searched']} sub-query(ies) not searched")
    if figures.get("sub_questions_unanswered"):
        parts.append(f"{figures['sub_questions_unanswered']} sub-question(s) not answered")
    return "; ".join(parts)


def _expected(figures: Mapping[str, Any]) -> str:
    """When the analysis in flight was expected to answer, or that it had overrun."""
    expected = figures.get("analysis_expected_s")
    if expected is None:
        return ""
    running = float(figures.get("analysis_running_s") or 0)
    if expected <= float(figures.get("used_s") or 0):
        return f" (running for {running:.1f} s, longer than such calls were expected to take)"
    return f" (expected to answer by {expected:.1f} s)"
