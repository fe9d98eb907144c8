"""Starting a research: from a caller's question and options to a queued research, saved, its
run scheduled, and the start's answer.

**Where it starts: a request.** Each way to start a research builds one
:class:`~.request.ResearchRequest` (``request.py``: the question and every option, kept as the
caller gave them): the tool call (``research_request`` in ``foundry_mcp.server.actions``, for
the ``deep-research`` action), the command (``research_request`` in
``foundry_mcp.cli.running``, for ``foundry-mcp research``) and a bench task
(``BenchRun.request`` in ``foundry_mcp.cli.bench``). ``ResearchService.start``
(``service/research_service.py``) admits it under the principal's limits (``service/quota.py``,
which a resume shares) and hands it on unchanged to the starter.

**The start** (``starter.py``: :meth:`~.starter.ResearchStarter.start`), in this order, each
step failing at once with an error that names the field and the fix, before anything is saved:

1. the question, then each option (``_checked_options``): the checks of ``service/inputs.py``
   (which asking and the resume share), the language (``foundry_mcp.research.language``), the
   output schema, the effort's preset under the caller's limits and mode
   (``foundry_mcp.research.effort``), over the ``[research]`` settings;
2. the providers: the research's LLM, the per-phase routes (none when the caller named a
   provider) and the search providers, with a word on a provider found on this machine
   (``_provider_statement``) and on the sources' bounds;
3. the token options from the settings of this moment (``fit_token_options``, which a resume
   calls again);
4. with an asker and ``clarify`` not off, the clarifying questions (the ``asking`` room's
   ``clarifier.py``), before its deadline starts to count.

**Where it ends: the queued research saved and its run scheduled** (``_save_and_run``): the
save asked first on the store's writer thread (``AsyncStore.write(first=True)``: no queued
write names it yet), the ``created`` event, the run handed to ``runs/jobs.py``, shielded so that
a caller that gives up meanwhile leaves no research saved and never run; then **the start's
answer** (``started.py``: the research id, its limits, mode, effort, providers and searches,
what was asked or assumed).

Lowest first: ``request``, ``started``, ``starter``. The room stands on ``service.inputs``,
``service.ownership``, the ``asking`` room and the ``payloads`` room, below it;
``ResearchService`` and ``writes.py`` (the resume) sit on top of it.

**Run again.** A research that ran before goes through ``again.py`` when it runs once more: a
resume (``service/writes.py``) and a revision of its report (``service/completed/``) check
its providers (``check_providers``) and, once claimed, queue, save and schedule it
(``run_again``).
"""
