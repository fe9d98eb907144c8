"""Clean-up of model output shared by the LLM adapters."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """Remove the ``<think>`` blocks reasoning models put before their answer."""
    return _THINK_BLOCK.sub("", text).strip()
