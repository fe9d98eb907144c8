"""Store calls that wait out a short outage of the database instead of failing at once.

A PostgreSQL store fails a call whose connection it cannot get within the pool's timeout
(``POOL_TIMEOUT_SECONDS``), and fails every call at once for a few seconds after one found the
database lost (``OUTAGE_SECONDS``): a status, a report, a health probe answer quickly while the
database is away. A running research should not: a database paused for a few seconds (a stalled
VM, a failover, ``docker pause``) would fail the run at its next save. So the calls a run makes,
its writes and its reads, are *patient* (:class:`foundry_mcp.research.store.access.aio.AsyncStore`
marks them on the worker thread that makes them): a patient call waits for a connection up to
``PATIENT_SECONDS`` from the start of the outage, as a write to a SQLite store waits up to its
busy timeout (30 s) for another process's lock. Only the wait for a connection is longer:
nothing was sent yet, so nothing is done twice. Once the outage is older than that, patient
calls fail as the others do, so a database that stays away does not hold every queued write
for long. The SQLite store ignores the mark.

A statement whose connection dies while it runs (the server restarted under it) may or may not
have been applied: the store raises :class:`StatementLost`, and a patient call is made again,
on another connection, as often as that happens within ``PATIENT_SECONDS`` (a restart can leave
several pooled connections dead; :mod:`foundry_mcp.research.store.access.aio`). Every call a run makes
can be made more than once: a save writes the whole
state and books the spend from the total, journal entries are upserts, leases are set to a
value, a claim by the owner that already holds the research succeeds. Only an event may be
recorded twice.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from foundry_mcp.errors import StoreUnavailableError

PATIENT_SECONDS = 30.0

_calls = threading.local()


@contextmanager
def patient() -> Iterator[None]:
    """Within the block, the store calls of this thread are patient."""
    before = is_patient()
    _calls.patient = True
    try:
        yield
    finally:
        _calls.patient = before


def is_patient() -> bool:
    """Whether the store call running on this thread is patient."""
    return bool(getattr(_calls, "patient", False))


class StatementLost(StoreUnavailableError):
    """The connection to the database died while a statement ran: it may have been applied."""
