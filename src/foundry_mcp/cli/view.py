"""``foundry-mcp view ID``: a research's page in the browser.

Without ``--serve`` the page is written with the research's data in it (one self-contained
HTML file, ``views/<id>.html`` next to the research store unless ``--out`` names another) and
opened in the browser; run it again for newer data. With ``--serve`` a server on 127.0.0.1
serves the page live, updated while the research runs, at an address that holds an access
token, until Ctrl-C (:mod:`foundry_mcp.view.serving`); for a research that was running when it
started, also ``--linger`` seconds after the research ends (its page shows the end by then).

Nothing is replaced unasked: an existing ``--out`` file needs ``--overwrite`` (as ``research
--output`` does); the research's own page in ``views/`` is its to replace. On a machine with no
browser to open, or with ``--no-open``, the command prints where the page is and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from foundry_mcp.errors import InputError

if TYPE_CHECKING:
    from foundry_mcp.research.service.research_service import ResearchService
    from foundry_mcp.view.serving import Listening

VIEWS_FOLDER = "views"
LINGER_SECONDS = 30.0
MAX_LINGER_SECONDS = 86_400.0
ENDED_POLL_SECONDS = 1.0
# Where a browser can be opened without a display: the platform's own opener.
OPENS_WITHOUT_DISPLAY = ("darwin", "win32", "cygwin")


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], as_json: argparse.ArgumentParser
) -> None:
    """The ``view`` command's grammar (its body runs with the research service)."""
    view = commands.add_parser(
        "view",
        parents=[as_json],
        help="open a research's page in the browser (--serve: live while it runs)",
    )
    view.add_argument("research_id")
    view.add_argument(
        "--out",
        metavar="PATH",
        help="write the page to this file (default: views/<id>.html next to the research store)",
    )
    view.add_argument("--overwrite", action="store_true", help="replace the --out file")
    view.add_argument("--no-open", action="store_true", help="do not open a browser")
    view.add_argument(
        "--serve",
        action="store_true",
        help="serve the page on 127.0.0.1, updated as the research runs, until Ctrl-C",
    )
    view.add_argument(
        "--linger",
        metavar="SECONDS",
        type=_seconds,
        default=LINGER_SECONDS,
        help="with --serve, for a research running when it starts: how long to keep serving "
        f"once it ends, so the page shows its end (default {LINGER_SECONDS:g}); then it stops",
    )
    view.add_argument(
        "--port",
        dest="serve_port",
        metavar="PORT",
        type=_port,
        default=0,
        help="with --serve: the port (default: any free one)",
    )


async def view_research(service: ResearchService, args: argparse.Namespace) -> int:
    """Write and open the page, or (``--serve``) serve it live until Ctrl-C."""
    if args.serve:
        if args.out is not None or args.overwrite:
            raise InputError(
                "--out and --overwrite write a page to a file; --serve serves it instead.",
                remediation="Choose one: foundry-mcp view <id> --out page.html, or "
                "foundry-mcp view <id> --serve.",
            )
        return await _serve(service, args)
    if args.serve_port:
        raise InputError("--port applies to --serve.", remediation="Add --serve, or drop --port.")
    from foundry_mcp.view.data import view_data
    from foundry_mcp.view.page import render_page

    chosen = _chosen_file(args.out, args.overwrite)  # checked before anything is read
    data = await view_data(service, args.research_id)
    html = render_page(data, feed="embedded")
    if chosen is not None:
        await anyio.to_thread.run_sync(lambda: _write(chosen, html, replace=args.overwrite))
        path, note = chosen, None
    else:
        folder = Path(service.settings.research.research_dir) / VIEWS_FOLDER
        path, note = await anyio.to_thread.run_sync(_save_own, html, folder, data.research_id)
    opened = not args.no_open and open_in_browser(path.as_uri())
    _say_written(args, Written(data.research_id, data.status, path, opened, note))
    return 0


@dataclass(frozen=True)
class Written:
    research_id: str
    status: str
    path: Path
    opened: bool
    note: str | None


def _say_written(args: argparse.Namespace, written: Written) -> None:
    from foundry_mcp.cli.display.output import for_people, print_json

    if not for_people(args):
        print_json(
            {
                "research_id": written.research_id,
                "status": written.status,
                "path": str(written.path),
                "url": written.path.as_uri(),
                "opened": written.opened,
                **({"note": written.note} if written.note else {}),
            }
        )
        return
    print(written.path)
    said = f"wrote the page of {written.research_id} ({written.status})"
    said += f"; {written.note}" if written.note else ""
    print(said, file=sys.stderr)
    if written.opened:
        print("opened it in your browser", file=sys.stderr)
    elif not args.no_open:
        print(f"no browser to open here: open {written.path.as_uri()}", file=sys.stderr)
    if written.status in ("queued", "running", "cancelling"):
        print(
            f"it is a snapshot: foundry-mcp view {written.research_id} --serve follows the "
            "research live",
            file=sys.stderr,
        )


async def _serve(service: ResearchService, args: argparse.Namespace) -> int:
    from foundry_mcp.cli.display.output import for_people
    from foundry_mcp.view.data import view_data
    from foundry_mcp.view.serving import serve_view

    research_id = (await service.status(args.research_id))["research_id"]  # unknown: exit 2
    people = for_people(args)

    def ready(where: Listening) -> None:
        if people:
            print(where.url, flush=True)
            print(
                f"serving the page of {research_id} on {where.host}:{where.port} (this "
                "address holds its access token: share it with no one). Press Ctrl-C to stop.",
                file=sys.stderr,
                flush=True,
            )
        else:  # one line, at once: whoever started the server reads it while it runs
            print(json.dumps({"research_id": research_id, "url": where.url}), flush=True)
        if not args.no_open and can_open_browser():
            threading.Thread(target=open_in_browser, args=(where.url,), daemon=True).start()

    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        if await _is_running(service, research_id):
            group.start_soon(_stop_after_end, service, research_id, args.linger, stop)
        await serve_view(
            lambda: view_data(service, research_id),
            port=args.serve_port,
            on_ready=ready,
            stop=stop,
        )
        group.cancel_scope.cancel()
    if people:
        ended = " (the research ended)" if stop.is_set() else ""
        print(f"stopped serving the page of {research_id}{ended}", file=sys.stderr)
    return 0


async def _is_running(service: ResearchService, research_id: str) -> bool:
    from foundry_mcp.research.models import Status

    status = await service.status(research_id)
    return Status(status["status"]).is_active


async def _stop_after_end(
    service: ResearchService, research_id: str, linger: float, stop: anyio.Event
) -> None:
    """Set ``stop`` ``linger`` seconds after the research is seen ended (its page has polled
    its final data by then, and polls no more)."""
    while await _is_running(service, research_id):
        await anyio.sleep(ENDED_POLL_SECONDS)
    await anyio.sleep(linger)
    stop.set()


def can_open_browser() -> bool:
    """Whether a graphical browser can be opened: a display, a platform opener, or $BROWSER.

    Without one, Python's ``webbrowser`` would start a text browser in this terminal."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform.startswith(OPENS_WITHOUT_DISPLAY):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_in_browser(url: str) -> bool:
    """Open ``url`` in the user's browser; False when there is none to open."""
    import webbrowser  # here: every command's parser is built from this module

    if not can_open_browser():
        return False
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


def _save_own(html: str, folder: Path, research_id: str) -> tuple[Path, str | None]:
    """Write a research's own page, ``<folder>/<research_id>.html``, replacing its earlier
    one; the path, and what happened besides a plain write."""
    folder = folder.expanduser()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{research_id}.html"  # the id as the service checked it
    note = "replaced this research's earlier page" if path.exists() else None
    _write(path, html, replace=True)
    return path, note


def _chosen_file(out: str | None, overwrite: bool) -> Path | None:
    """``--out`` as a path, checked: ``InputError`` says what is wrong and what to do."""
    if out is None:
        if overwrite:
            raise InputError(
                "--overwrite applies to --out.",
                remediation="Name the file with --out, or drop --overwrite (the research's own "
                "page in the views folder is always replaced).",
            )
        return None
    path = Path(out).expanduser().absolute()
    if path.is_dir():
        raise InputError(f"--out {out} is a folder.", remediation="Name a file, e.g. page.html.")
    if not path.parent.is_dir():
        raise InputError(
            f"--out {out}: the folder {path.parent} does not exist.",
            remediation="Create the folder first, or name a file in an existing one.",
        )
    if path.exists() and not overwrite:
        raise InputError(
            f"--out {out} exists.", remediation="Add --overwrite to replace it, or name another."
        )
    return path


def _write(path: Path, html: str, *, replace: bool) -> None:
    """Write the page: in one step when replacing (a reader never sees half a page), else
    only if no file appeared at ``path`` meanwhile. Readable by its owner alone: it holds the
    research."""
    try:
        if not replace:
            created = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(created, "w", encoding="utf-8") as file:
                file.write(html)
            return
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(html, encoding="utf-8")
        os.chmod(partial, 0o600)
        os.replace(partial, path)
    except FileExistsError:
        raise InputError(
            f"{path} appeared while the page was made.",
            remediation="Add --overwrite to replace it, or name another file.",
        ) from None
    except OSError as exc:
        raise InputError(
            f"Cannot write {path}: {exc.strerror or exc}.",
            remediation="Name a file in a folder you can write to, with --out.",
        ) from None


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_LINGER_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds from 0 to {MAX_LINGER_SECONDS:g}, not {value!r}"
        )
    return seconds


def _port(value: str) -> int:
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0 to 65535)")
    return int(value)
