"""A reader that leaves early: ``foundry-mcp events ID | head -2`` ends quietly.

When the program reading stdout exits, the next write raises ``BrokenPipeError`` (often inside
an ``ExceptionGroup`` from a task group). The command then stops as a Unix tool killed by
SIGPIPE would: no traceback, exit status 141.
"""

from __future__ import annotations

import os
import signal
import sys

CLOSED_PIPE_EXIT = 128 + int(getattr(signal, "SIGPIPE", 13))


def is_closed_pipe(exc: BaseException) -> bool:
    """Whether ``exc`` is, or a group holding, a write to a pipe whose reader has gone."""
    if isinstance(exc, BrokenPipeError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(is_closed_pipe(inner) for inner in exc.exceptions)
    return False


def leave_quietly() -> int:
    """Point stdout at the null device, so that the flush at exit cannot fail again and print
    "Exception ignored", and return the closed pipe's exit status."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # stdout has no file descriptor (replaced in a test)
        pass
    return CLOSED_PIPE_EXIT
