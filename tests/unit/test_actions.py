"""The tool description documents every action and every parameter the dispatcher reads."""

from __future__ import annotations

import re

import pytest

from foundry_mcp.server.actions import ACTION_PARAMS, ACTION_SUMMARIES, tool_description


def _action_line(description: str, action: str) -> str:
    lines = [line for line in description.splitlines() if line.startswith(f"- {action}:")]
    assert len(lines) == 1, f"expected one line for {action}, found {lines}"
    return lines[0]


def test_every_action_has_a_summary() -> None:
    assert set(ACTION_SUMMARIES) == set(ACTION_PARAMS)


@pytest.mark.parametrize("action", list(ACTION_PARAMS))
def test_description_lists_each_action_with_all_its_parameters(action: str) -> None:
    line = _action_line(tool_description(), action)
    if not ACTION_PARAMS[action]:
        assert line.endswith("No params."), line
        return
    listed = re.search(r"Params: (.*)\.$", line)
    assert listed is not None, line
    assert [p.strip() for p in listed.group(1).split(",")] == list(ACTION_PARAMS[action])


def test_description_mentions_every_parameter_as_a_word() -> None:
    description = tool_description()
    words = set(re.findall(r"[a-z_]+", description))
    for params in ACTION_PARAMS.values():
        for param in params:
            assert param in words, param
