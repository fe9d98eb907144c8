"""Where an export goes: back in the response, or into a file inside the workspace.

A path is checked before anything is written: inside the workspace (the server's or the CLI's
working directory) after resolving symlinks, no ``..`` component, an existing parent directory,
no symlink as the file itself, and no existing file unless ``overwrite``. The file is written to
a temporary file beside it and then moved into place, so a reader never sees half an export.
Every refusal is a ``VALIDATION_ERROR`` on ``path`` with a ``reason`` in its details.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from foundry_mcp.errors import InputError
from foundry_mcp.research.models import ResearchState

MAX_INLINE_CHARS = 200_000  # larger exports go to a file


def export_research(
    state: ResearchState,
    fmt: str,
    *,
    path: str | None,
    overwrite: bool,
    workspace: Path,
    max_inline_chars: int | None = MAX_INLINE_CHARS,
    now: datetime | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """Export ``state`` in ``fmt``: its text in the payload (at most ``max_inline_chars``; None:
    no bound), or written to ``path``. ``version``: the number of the report's version ``state``
    holds, said in the payload and the export."""
    from foundry_mcp.research.export.document import render  # its models: for exports only

    target = None if path is None else export_target(path, workspace, overwrite=overwrite)
    text = render(state, fmt, now=now or datetime.now(UTC), version=version)
    payload: dict[str, Any] = {
        "research_id": state.id,
        "status": state.status.value,
        "format": fmt,
        "chars": len(text),
    }
    if version is not None:
        payload["version"] = version
    if target is None:
        if max_inline_chars is not None and len(text) > max_inline_chars:
            raise InputError(
                f"The {fmt} export is {len(text):,} characters, more than the "
                f"{max_inline_chars:,} a response carries.",
                remediation="Pass path (a file inside the workspace) to write it to a file.",
                details={"field": "path", "reason": "too_large", "chars": len(text)},
            )
        return {**payload, "content": text}
    write_atomically(target, text, overwrite=overwrite)
    return {**payload, "path": str(target)}


def _refuse(path: str, why: str, reason: str, remediation: str) -> InputError:
    return InputError(
        f"Refusing to write the export to {path!r}: {why}.",
        remediation=remediation,
        details={"field": "path", "reason": reason},
    )


def export_target(path: str, workspace: Path, *, overwrite: bool) -> Path:
    """The file ``path`` names, checked to be a safe place for an export (see the module)."""
    root = workspace.resolve(strict=True)
    inside = f"Pass a file path inside the workspace {str(root)!r}, relative or absolute."
    if not path.strip() or "\x00" in path:
        raise _refuse(path, "the path is empty or malformed", "invalid", inside)
    given = Path(path).expanduser()
    if ".." in given.parts:
        raise _refuse(path, "'..' is not allowed in an export path", "traversal", inside)
    lexical = given if given.is_absolute() else root / given
    if not (_within(Path(os.path.normpath(lexical)), root) or _within(lexical.resolve(), root)):
        raise _refuse(path, "it is outside the workspace", "outside_workspace", inside)
    if not lexical.name:
        raise _refuse(path, "it names no file", "invalid", inside)
    parent = lexical.parent
    if not parent.is_dir():
        raise _refuse(
            path,
            "its directory does not exist",
            "no_parent",
            "Create the directory first, or pass a path in an existing directory.",
        )
    real_parent = parent.resolve(strict=True)
    if not _within(real_parent, root):
        raise _refuse(path, "a symlink leads outside the workspace", "symlink_escape", inside)
    target = real_parent / lexical.name
    if target.is_symlink():
        raise _refuse(
            path, "it is a symbolic link", "symlink", "Pass the path of a regular file instead."
        )
    if target.exists():
        if target.is_dir():
            raise _refuse(path, "it is a directory", "is_directory", inside)
        if not overwrite:
            raise _refuse(
                path,
                "the file exists",
                "exists",
                "Pass overwrite=true (--overwrite) to replace it, or choose another path.",
            )
    return target


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def write_atomically(target: Path, text: str, *, overwrite: bool) -> None:
    """Write ``text`` to a temporary file beside ``target``, then move it into place.

    Without ``overwrite`` the move is a hard link, which fails if a file appeared at ``target``
    since it was checked, so an existing file is never replaced.
    """
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        temp.chmod(0o644)
        if overwrite:
            os.replace(temp, target)
        else:
            try:
                os.link(temp, target)
            except FileExistsError:
                raise _refuse(
                    str(target),
                    "the file exists",
                    "exists",
                    "Pass overwrite=true (--overwrite) to replace it, or choose another path.",
                ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
