"""Learning at once that another server saved a research or asked to cancel one: LISTEN.

The store's triggers NOTIFY ``foundry_research_changed`` when a research row is saved, created
or deleted, and ``foundry_cancel_requested`` when someone asks to cancel one; the payload is the
research id. One connection per store, opened when a server starts (``Store.listen``) or on
the first wait, LISTENs in a daemon thread and wakes the waiters of that id. A waiter is an
async task: the thread hands the wake-up to its event loop (``call_soon_threadsafe``), so no
thread is held while it waits.

When the listening connection breaks, every waiter is woken (it may have missed a
notification: it reads the store again) and the thread connects again; until it listens, waits
fall back to reading the store every few tens of milliseconds.

The listening connection is also the first to learn that the database went away: a restart
ends it at once, while a call would wait for the pool's timeout to find out. So the listener
tells the store (``lost``: calls that are not patient fail at once, and a status answers the
last one read) and tells it again when it listens once more (``reached``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import psycopg

from foundry_mcp.research.store.postgres.schema import CANCEL_CHANNEL, CHANGED_CHANNEL

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # how often the thread looks up from its socket to see if it should stop
RECONNECT_SECONDS = 1.0
START_WAIT_SECONDS = 2.0  # longest wait for the first LISTEN before falling back to polling


class Waiter:
    """One async wait for any of some notifications; woken from the listening thread."""

    def __init__(self) -> None:
        self.woken = False
        self._event = anyio.Event()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # another async library: the wait polls ``woken`` instead
            self._loop = None

    def wake(self) -> None:
        """Called from the listening thread."""
        self.woken = True
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
                self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> bool:
        """True when woken within ``timeout`` seconds."""
        with anyio.move_on_after(max(0.0, timeout)):
            if self._loop is not None:
                await self._event.wait()
            else:
                while not self.woken:
                    await anyio.sleep(0.02)
        return self.woken


class Listener:
    """The store's LISTENing connection, in a daemon thread, and who waits for what."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        *,
        lost: Callable[[psycopg.OperationalError], object] = lambda exc: None,
        reached: Callable[[], object] = lambda: None,
    ) -> None:
        self._connect = connect
        self._lost = lost
        self._reached = reached
        self._lock = threading.Lock()
        self._waiters: dict[tuple[str, str], set[Waiter]] = defaultdict(set)
        self._listening = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    async def ready(self) -> bool:
        """Whether notifications are being received; starts the thread on first use."""
        if self._listening.is_set():
            return True
        return await anyio.to_thread.run_sync(self._start, START_WAIT_SECONDS)

    def _start(self, wait_seconds: float) -> bool:
        with self._lock:
            if self._closing.is_set():
                return False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="foundry-mcp-store-listener", daemon=True
                )
                self._thread.start()
        return self._listening.wait(wait_seconds)

    @contextmanager
    def watch(self, channel: str, research_ids: Iterable[str]) -> Iterator[Waiter]:
        """A waiter woken by a notification on ``channel`` about any of ``research_ids``."""
        waiter = Waiter()
        keys = [(channel, research_id) for research_id in research_ids]
        with self._lock:
            for key in keys:
                self._waiters[key].add(waiter)
        try:
            yield waiter
        finally:
            with self._lock:
                for key in keys:
                    self._waiters[key].discard(waiter)
                    if not self._waiters[key]:
                        del self._waiters[key]

    def close(self) -> None:
        self._closing.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=2 * POLL_SECONDS + 1.0)

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        connected_before = False
        warned = False  # of the current outage: a retry that fails alike is not logged again
        while not self._closing.is_set():
            try:
                with self._connect() as conn:
                    conn.execute(f"LISTEN {CHANGED_CHANNEL}")
                    conn.execute(f"LISTEN {CANCEL_CHANNEL}")
                    self._listening.set()
                    self._reached()
                    warned = False
                    if connected_before:  # notifications may have been sent meanwhile
                        self._wake_all()
                    connected_before = True
                    while not self._closing.is_set():
                        for note in conn.notifies(timeout=POLL_SECONDS):
                            self._wake(note.channel, note.payload)
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.OperationalError):
                    self._lost(exc)
                (log.debug if warned else log.warning)(
                    "the store's listening connection failed (%s); connecting again",
                    type(exc).__name__,
                )
                warned = True
            except Exception:  # a bug: the waits still end, by polling or at their timeout
                log.exception("the store's listening thread failed; connecting again")
            finally:
                was_listening = self._listening.is_set()
                self._listening.clear()
                self._wake_all()
            # A connection that just ended is tried again soon: if only it was lost (its
            # backend ended), the database is back within a moment, and the store with it.
            self._closing.wait(POLL_SECONDS if was_listening else RECONNECT_SECONDS)

    def _wake(self, channel: str, research_id: str) -> None:
        with self._lock:
            waiters = list(self._waiters.get((channel, research_id), ()))
        for waiter in waiters:
            waiter.wake()

    def _wake_all(self) -> None:
        with self._lock:
            waiters = {waiter for group in self._waiters.values() for waiter in group}
        for waiter in waiters:
            waiter.wake()
