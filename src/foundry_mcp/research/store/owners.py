"""Who runs a research: this process as an owner, the lease it holds, and whether it lives.

The process that runs a research holds a lease on it (owner token, pid, process start time,
host and ``lease_until``), renewed by a heartbeat. The owner token is the worker's identity: a
random id made when the process starts, never its host name. A claim is a compare-and-swap on
the owner token, and every save by a run is fenced (``LeaseLostError``): it only lands while
the run still owns the research. Another process asks a run to stop by setting ``cancel_requested``, which the owner's
heartbeat reads.

Whether an owner is still alive is decided in one place: :meth:`Ownership.is_alive`. Where its
pid means the same process as ours (the same machine, the same boot and the same pid namespace:
its ``node``) the answer is immediate: a process that is gone, a zombie (killed but not yet
reaped by its parent), or another process that reuses its pid (its start time differs) is dead,
whatever its lease says. Everywhere else the lease decides, host name or not: two containers
may share a host name while each has its own pids. A lease that runs is taken from its holder
only when its process is known gone that way (:meth:`Ownership.process_gone`); otherwise the
store takes it only once it has run out, judged in the same statement that takes it, so a
stale read of a live owner never costs it the research.

The node is recorded with the host name in the lease's host column (``host#node``), so no
column was added: a row written before it has no node, and its lease decides.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

NODE_SEPARATOR = "#"  # between the host name and the node in the stored host column


def this_node() -> str:
    """Where a pid names one process: this boot of this machine's kernel and this process's
    pid namespace (Linux: ``boot_id`` and the namespace's inode, so containers on one machine
    differ, whatever their host names); elsewhere the host name and boot time. A short digest."""
    parts: list[str] = []
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
        parts.append(os.readlink("/proc/self/ns/pid"))
    except OSError:
        parts = [sys.platform, socket.gethostname(), str(round(psutil.boot_time()))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Owner:
    """This process, as the owner of the research it runs."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)  # the worker's instance id
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)  # shown in logs and events
    started: float | None = field(default_factory=lambda: process_started(os.getpid()))
    node: str | None = field(default_factory=lambda: this_node())  # where ``pid`` is this process

    @property
    def stored_host(self) -> str:
        """The host column's value: the host name, and the node when known."""
        return f"{self.host}{NODE_SEPARATOR}{self.node}" if self.node else self.host


def split_host(stored: str | None) -> tuple[str | None, str | None]:
    """(host name, node) of a stored host column (node None for a row written before)."""
    if stored is None:
        return None, None
    host, _, node = stored.partition(NODE_SEPARATOR)
    return host, node or None


@dataclass(frozen=True)
class Ownership:
    """Who holds a research, as stored."""

    token: str | None
    pid: int | None
    host: str | None
    lease_until: float | None
    cancel_requested: bool
    started: float | None = None  # the owner's process start time (None: recorded before v4)
    node: str | None = None  # where its pid is meaningful (None: recorded before; see module)

    def is_alive(self, me: Owner, running_here: bool, now: float | None = None) -> bool:
        """Whether a live process holds this research."""
        if self.token is None:
            return False
        if self.token == me.token:
            return running_here
        if self.process_gone(me):
            return False  # dead at once: no need to wait for the lease to run out
        return self.lease_until is not None and self.lease_until >= (now or time.time())

    def process_gone(self, me: Owner) -> bool:
        """Whether the owner's process is certainly gone: its pid means a process of ``me``'s
        node, and no live process has it now (none, a zombie, or another that reuses it).

        The one judgement that may take a lease that has not run out (``Store.disown``,
        ``Store.claim``): a process that is gone renews nothing. Any other judgement of death
        rests on a read that may be stale, and waits for the lease to run out on the store."""
        if not self.pid or self.node is None or self.node != me.node:
            return False  # its pid means nothing here: only its lease can tell
        return not process_alive(self.pid, self.started)


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
