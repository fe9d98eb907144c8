"""Where an item an MCP source lists may be read: under the source's folder, nowhere else.

A listing is the server's text, and a server may be wrong or hostile: an item such as
``../../home/me/.ssh/config``, ``/etc/deploy.conf``, ``..\\..\\secret`` or ``%2e%2e/secret`` must
not send the read tool outside the folder the user configured (the read tool's fixed path
argument, e.g. ``arguments = { path = "/docs" }``). An item is read as a POSIX path: backslashes
are separators, ``%``-escapes are decoded (as a server may decode them), ``..`` and ``.`` are
resolved; it is kept only when the result lies under the folder. Control characters (NUL
included) are refused outright. A source without a folder names its items relative to itself:
an absolute one, or one climbing out with ``..``, is refused as well.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

MAX_ITEM_CHARS = 4_096
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DRIVE = re.compile(r"^[A-Za-z]:/")  # C:/Windows: absolute on the server's machine
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


@dataclass(frozen=True)
class Place:
    """Where an item is read and how its link names it."""

    target: str  # what the read tool is given
    name: str  # the item under the folder (or as the source names it): its link's path


def confine(item: str, root: str | None) -> Place | None:
    """Where ``item`` is read under ``root`` (the source's folder, if any); None: refused."""
    if not item or len(item) > MAX_ITEM_CHARS or CONTROL.search(item):
        return None
    if item.lower().startswith("file://"):
        item = urlsplit(item).path  # a file URI names a path like any other
    elif SCHEME.match(item):
        # Another scheme is the server's own name for it (note://...): no path to resolve,
        # hence nothing a folder could hold.
        return None if root else Place(item, item)
    # As listed, and decoded as the server may decode it: both must stay inside.
    listed, decoded = _posix(item), _posix(_decoded(item))
    if listed is None or decoded is None:
        return None
    if root is None:
        if _outside_itself(listed) or _outside_itself(decoded):
            return None
        return Place(item, posixpath.normpath(listed))
    base = posixpath.normpath(_posix(root) or "/")
    name = _under(base, listed)
    if name is None or _under(base, decoded) is None:
        return None
    return Place(posixpath.join(base, name), name)


def _decoded(item: str) -> str:
    """``item`` with its ``%``-escapes decoded, repeatedly (``%252e`` is ``.`` twice over)."""
    for _ in range(3):
        decoded = unquote(item)
        if decoded == item:
            break
        item = decoded
    return item


def _posix(path: str) -> str | None:
    """``path`` with POSIX separators; None when decoding revealed control characters."""
    if CONTROL.search(path):
        return None
    return path.replace("\\", "/")


def _outside_itself(path: str) -> bool:
    if path.startswith("/") or DRIVE.match(path):
        return True
    normal = posixpath.normpath(path)
    return normal in (".", "..") or normal.startswith("../")


def _under(base: str, path: str) -> str | None:
    """``path`` (absolute, or relative to ``base``) relative to ``base``; None if outside."""
    if DRIVE.match(path):
        return None
    joined = posixpath.normpath(posixpath.join(base, path))
    if joined == base:
        return None  # the folder itself is not an item
    prefix = base if base.endswith("/") else base + "/"
    return joined[len(prefix) :] if joined.startswith(prefix) else None
