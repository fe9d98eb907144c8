"""Who runs a research: this process as an owner, the lease it holds, and whether it lives.

The process that runs a research holds a lease on it (owner token, pid, process start time,
host and ``lease_until``), renewed by a heartbeat. A claim is a compare-and-swap on the owner token, and
every save by a run is fenced (``LeaseLostError``): it only lands while the run still owns the
research. Another process asks a run to stop by setting ``cancel_requested``, which the owner's
heartbeat reads.

Whether an owner is still alive is decided in one place: :meth:`Ownership.is_alive`. On the
owner's own host the answer is immediate: a process that is gone, a zombie (killed but not yet
reaped by its parent), or another process that reuses its pid (its start time differs) is dead,
whatever its lease says. Across hosts the lease decides.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass, field

import psutil


@dataclass(frozen=True)
class Owner:
    """This process, as the owner of the research it runs."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)
    started: float | None = field(default_factory=lambda: process_started(os.getpid()))


@dataclass(frozen=True)
class Ownership:
    """Who holds a research, as stored."""

    token: str | None
    pid: int | None
    host: str | None
    lease_until: float | None
    cancel_requested: bool
    started: float | None = None  # the owner's process start time (None: recorded before v4)

    def is_alive(self, me: Owner, running_here: bool, now: float | None = None) -> bool:
        """Whether a live process holds this research."""
        if self.token is None:
            return False
        if self.token == me.token:
            return running_here
        if self.host == me.host and self.pid and not process_alive(self.pid, self.started):
            return False  # dead at once: no need to wait for the lease to run out
        return self.lease_until is not None and self.lease_until >= (now or time.time())


START_TOLERANCE_SECONDS = 1.0  # start times are read from the OS with a clock tick's precision


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if it cannot be read."""
    try:
        return round(float(psutil.Process(pid).create_time()), 2)
    except (psutil.Error, OSError):
        return None


def process_alive(pid: int, started: float | None) -> bool:
    """Whether ``pid`` is a live process and, when ``started`` is known, the same one.

    A zombie (exited, not yet reaped) is dead; so is a process that reuses the pid, which
    started at another time.
    """
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        if started is not None and abs(process.create_time() - started) > START_TOLERANCE_SECONDS:
            return False
    except psutil.NoSuchProcess:
        return False
    except (psutil.AccessDenied, OSError):
        return True  # another user's process: it exists, and we cannot tell more
    return True


class LeaseLostError(Exception):
    """A run tried to save a research that another process now owns."""


def fenced(rows_written: int, research_id: str) -> None:
    """Raise ``LeaseLostError`` when a write fenced by the owner's token wrote no row: another
    process owns the research now (or it was deleted)."""
    if rows_written == 0:
        raise LeaseLostError(research_id)
