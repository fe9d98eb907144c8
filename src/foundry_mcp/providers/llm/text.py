"""Clean-up of model output shared by the LLM adapters."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_FENCED = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """Remove the ``<think>`` blocks reasoning models put before their answer."""
    return _THINK_BLOCK.sub("", text).strip()


def strip_code_fence(text: str) -> str:
    """``text`` without a code fence wrapped around all of it (a JSON answer in ```json)."""
    fenced = _FENCED.match(text)
    return fenced.group(1).strip() if fenced else text
