"""What the local store keeps beside its database in ``research_dir``: keys and a lock, as files.

A key (for instance the one task ids are signed with) is made once, on first use, and read by
every server on this machine; the admission lock serializes the starts of research that must
fit a principal's limit across the processes that share ``research_dir``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: admissions are serialized within one process only
    fcntl = None  # type: ignore[assignment]

ADMISSION_LOCK = "admission.lock"


def file_key(research_dir: Path, name: str) -> bytes:
    """The key ``name`` of this research directory (the file ``<name>-key``, readable by its
    owner only), made on first use."""
    path = research_dir / f"{name}-key"
    if not path.exists():
        # Written whole under a private name, then linked: a reader never sees half a key,
        # and of two processes making one at once, the first link wins.
        draft = research_dir / f".{name}-key-{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink(missing_ok=True)
    return bytes.fromhex(path.read_text().strip())


@contextmanager
def file_lock(research_dir: Path) -> Iterator[None]:
    """Hold the admission lock of this research directory (across processes, where the
    platform has ``flock``)."""
    if fcntl is None:
        yield
        return
    fd = os.open(research_dir / ADMISSION_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
