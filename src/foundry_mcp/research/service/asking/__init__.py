"""Asking the user: the clarifying questions before a research starts, and the plan it waits
with for the user's approval; from the asker a caller hands in to what the research keeps.

**Where it starts: an asker.** The front end that takes a call gives the service an asker when
its user can be asked: the tool call's (``foundry_mcp.server.asking``: MCP form elicitation,
for a client that declared it) or the command's (``foundry_mcp.cli.asking``: on the terminal,
when stdin and stderr both are one). A caller that cannot ask gives none, and the research goes
on without the answer. Every asker takes a :class:`~.asker.Form` and gives back a
:class:`~.asker.Reply` (``asker.py``: the ``Asker`` protocol; ``checked_reply`` refuses an
answer that does not fit its form).

**Before researching** (``ResearchStarter.start``, ``service/starting/starter.py``):
``clarifier.py`` judges the question in one short call (its prompts: ``clarifier_prompts.py``)
and, when it could be read in ways that would change the research, asks at most three
questions in one form.

**After planning** (``review_plan``): the supervisor stops the research with status ``waiting``
(``foundry_mcp.research.workflow.review``, a lower room). ``plan_review.py`` is that plan as the
user sees it, edits and approves it (a resume approves it: ``ResearchWriter.resume``) and its
approval form; ``plan_approval.py`` puts the form to a caller that can be asked when it reads
the status (``ResearchService.status``); an answer applies only while the research still waits
for the plan it showed. ``plan_cancel.py`` ends a research that waits for its plan, cancelled
by the form or by the cancel action (``service/stopping.py``).

**Where it ends: what the research keeps and says.** The outcome is recorded in the research's
state, in the records of ``foundry_mcp.research.models.conversation`` (``Clarification``: what
was asked, answered or assumed; ``PlanReview``: the plan waiting, approved or edited), which
the state model, the lowest room, holds: the planner reads the answers, the report's footer
says what was asked (``research.export.footer``), and an approved plan is the one researched;
a cancelled one ends the research (status ``cancelled``). ``conversation.py`` is what the
status and the start's answer say of it (published by ``foundry_mcp.server.results.status``).

Lowest first: ``asker``, ``clarifier_prompts``, ``clarifier``, ``plan_review``,
``plan_cancel``, ``plan_approval``, ``conversation``. The room stands on ``service.inputs``
and ``service.ownership``, below it; the payloads, the start (``starting/``) and the use cases
sit on top of it.
"""
