"""Cancelling a research that waits for its plan's approval: by the cancel action
(:mod:`foundry_mcp.research.service.stopping`) or by the answer to the approval form
(:mod:`.plan_approval`). Nobody runs such a research, so it is ended here, in the store.
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import Status
from foundry_mcp.research.runs.ending import abort
from foundry_mcp.research.service.asking.plan_review import waits_for
from foundry_mcp.research.service.ownership import FencedEdit, OwnershipWatch
from foundry_mcp.research.store.protocol import Store


async def cancel_waiting(
    watch: OwnershipWatch, research_id: str, plan: dict[str, Any] | None = None
) -> bool:
    """Cancel a research waiting for its plan's approval (with ``plan``: for that plan,
    undecided since; :func:`.plan_review.waits_for`), read and saved fenced, as restore
    is: False when it no longer waits so, or another process took it up meanwhile."""

    def cancel(store: Store) -> bool:
        edit = FencedEdit.read(store, research_id)
        if not waits_for(edit.state, plan):
            return False
        abort(edit.state, Status.CANCELLED, "cancelled")
        return edit.save()  # False: taken up meanwhile, not cancelled here

    cancelled = await watch.io.write(cancel)
    if cancelled:
        watch.runner.event(research_id, "cancelled_while_waiting", {}, owned=False)
    return cancelled
