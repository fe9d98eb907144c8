"""A completed research's report made again: rewritten, deepened or refreshed.

* **rewrite**: written again from the saved findings and sources, as the caller asks (a full
  report, a one-page brief, a comparison table or a memo; an audience, a length, a language,
  corrections); no search, a few calls to a model;
* **deepen**: one part (a sub-question, a gap, a section, a question of the caller's) searched
  and read further; its findings join the others and the report is written again, with a
  section on what the version added; the other parts' pages are not read again;
* **refresh**: the research's searches asked again for what is new and its cited pages read
  again for what changed; the report is written again with a section on what changed, or, when
  nothing did, kept as it was with a short section saying so, and no model asked.

Where it starts: the service checks the caller's request and calls
:func:`.starting.new_revision`, which keeps the report as version 1 the first time, snapshots
the research's usage and sets ``state.revision``; the service saves it and schedules a run, as
a resume does. The runner sees the revision and runs :func:`.run.revise` instead of the
supervisor, under the same limits and handlers: it walks the revision's steps (gathering,
analysis, writing), saving after each, so a stopped revision resumes at its step.

Where it ends: the new :class:`~foundry_mcp.research.models.ReportVersion` appended to
``state.versions`` (:mod:`.versions`), with what it changed and what it cost by phase, the
report being the latest's, and ``state.revision`` cleared. A later run of the research itself
(a resume with more rounds) adds its report as a version too
(:func:`.versions.record_research_version`).

Modules: :mod:`.starting` (the request), :mod:`.run` (the steps), :mod:`.deepen` and
:mod:`.refresh` (gathering, with :mod:`.searches` and :mod:`.pages`), :mod:`.analysis` (the new
pages read), :mod:`.writing` (the report written again), :mod:`.changes` (the sections code
writes on what changed), :mod:`.versions` (versions and their cost).
"""
