"""The documentation a new user reads: a README that reads in five minutes, links that lead
somewhere, and no install command that fetches another project.

A package named ``foundry-mcp`` on the package index belongs to someone else, so every install
of foundry-mcp (and of its extras) is from the clone: ``pip install .`` or
``pip install '.[postgres]'``.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 250
DOCUMENTS = sorted(
    [
        README,
        ROOT / "CONTRIBUTING.md",
        ROOT / "SECURITY.md",
        ROOT / "deploy" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
)
# Where install commands may appear: the documents, the example configuration, deploy files,
# and the messages of the code (a remediation is an instruction too).
INSTALL_TEXTS = sorted(
    {
        *DOCUMENTS,
        ROOT / "foundry-mcp.example.toml",
        *(ROOT / "deploy").iterdir(),
        *(ROOT / "src").rglob("*.py"),
    }
)
_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_INSTALL = re.compile(r"\bpipx? install\s+([^`\n;&|()#]*)")


def _prose(path: Path) -> list[str]:
    """The lines of a markdown file outside fenced code blocks."""
    lines, fenced = [], False
    for line in path.read_text("utf-8").splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The heading anchors of a markdown file (repeated headings get -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(path):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> list[str]:
    """The link targets in the prose of a markdown file, inline code left out."""
    targets = []
    for line in _prose(path):
        targets += _LINK.findall(re.sub(r"`[^`]*`", "", line))
    return targets


def test_the_readme_reads_in_five_minutes() -> None:
    lines = README.read_text("utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    headings = [slug(line.lstrip("#")) for line in lines if line.startswith("## ")]
    for needed in ("install", "your-first-research", "register-with-your-assistant"):
        assert needed in headings, needed
    assert "effort-and-modes" in headings and headings[-1] == "documentation"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_leads_to_a_file_and_heading_that_exist(path: Path) -> None:
    broken = []
    for target in links(path):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:: not ours to check offline
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert broken == []


def test_the_documents_the_code_names_exist() -> None:
    """Messages point at ``docs/<page>.md`` (and a heading): those must exist too."""
    broken = []
    for source in sorted((ROOT / "src").rglob("*.py")):
        for page, anchor in re.findall(
            r"(?<!`)\bdocs/([\w-]+\.md)(?:#([\w-]+))?", source.read_text()
        ):
            path = ROOT / "docs" / page
            if not path.is_file() or (anchor and anchor not in anchors(path)):
                broken.append(f"{source.relative_to(ROOT)}: docs/{page}#{anchor}")
    assert broken == []


def _installs(path: Path) -> list[list[str]]:
    """The arguments of every ``pip install`` / ``pipx install`` in a file."""
    found = []
    for match in _INSTALL.finditer(path.read_text("utf-8")):
        try:
            words = shlex.split(match.group(1))
        except ValueError:
            words = match.group(1).split()
        found.append([w for w in words if not w.startswith("-")])
    return found


def _from_the_clone(argument: str) -> bool:
    return argument.startswith((".", "/")) and not argument.startswith("..")


@pytest.mark.parametrize("path", INSTALL_TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_install_command_fetches_foundry_mcp_by_name(path: Path) -> None:
    by_name = [
        args
        for args in _installs(path)
        if any(re.match(r"^['\"]?foundry[-_]mcp\b", arg, re.IGNORECASE) for arg in args)
    ]
    assert by_name == [], f"{path.name} installs foundry-mcp from the package index"


def test_the_readme_installs_nothing_but_the_clone() -> None:
    installs = _installs(README)
    assert installs, "the README says how to install"
    for args in installs:
        assert args and all(_from_the_clone(arg) for arg in args), args
    assert any(".[postgres]" in args for args in installs), "extras install from the clone"


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A title\n\n## Set `x` up: now\n\n[ok](#set-x-up-now) [gone](#nowhere) [f](missing.md)\n"
        "```\n# not a heading\n[not a link](nothing.md)\n```\n"
        "pip install 'foundry-mcp[postgres]'\n"
    )
    assert anchors(page) == {"a-title", "set-x-up-now"}
    assert links(page) == ["#set-x-up-now", "#nowhere", "missing.md"]
    assert _installs(page) == [["foundry-mcp[postgres]"]]


def test_the_tool_spec_lists_every_parameter_and_every_action() -> None:
    """specs/research-tool.md's parameter table has one row per field of the tool's arguments,
    and its action row and sections name every action: a new parameter or action lands with
    its line in the spec."""
    from foundry_mcp.server.arguments import ACTION_PARAMS, ResearchArguments

    spec = (ROOT / "specs" / "research-tool.md").read_text(encoding="utf-8")
    table = spec.split("| parameter | type |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)
    assert sorted(rows) == sorted(ResearchArguments.model_fields), "parameters differ"
    (action_row,) = [line for line in table.splitlines() if line.startswith("| `action` |")]
    for action in ACTION_PARAMS:
        assert f"`{action}`" in action_row, action
        assert re.search(rf"^### `{re.escape(action)}`", spec, re.MULTILINE), action
