"""One line of a status for a person: the message of a progress notification, a task's
``statusMessage``. Apart from the status models (:mod:`.status`), which answering the
handshake does not need."""

from __future__ import annotations

from typing import Any


def progress_message(status: dict[str, Any]) -> str:
    """One line of a status for a progress notification or a task's ``statusMessage``:
    ``running: analysis, iteration 1/3, 12 sources, 30 findings``."""
    progress = status.get("progress") or {}
    return (
        f"{status['status']}: {status.get('phase')}, iteration {status.get('iteration')}/"
        f"{status.get('max_iterations')}, {progress.get('sources', 0)} sources, "
        f"{progress.get('findings', 0)} findings"
    )
