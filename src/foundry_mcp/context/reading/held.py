"""Which pages each reading process holds parsed, as its server knows them: where a reading
goes (:mod:`.elsewhere`).

A process keeps the parses of the pages it read (:mod:`.parsed`, up to
:data:`~.parsed.CACHE_CHARS` characters, the least recently read dropped first). A page parsed
again elsewhere costs the CPU of its first parse: about 15 ms for 150 KB of documentation.
Researches of one topic find the same pages, each under a source id of its own; so the server
mirrors each process's cache by the pages' text (as the token counter's cache knows a text:
:func:`~foundry_mcp.context.tokens.text_key`), and a reading goes to the free process that
holds most of its pages.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from foundry_mcp.context.reading.parsed import CACHE_CHARS
from foundry_mcp.context.tokens import text_key


class ParsesHeld:
    """The pages one process holds parsed: those it read, the least recently read forgotten
    past ``limit`` characters, as its cache drops them. Thread-safe."""

    def __init__(self, limit: int = CACHE_CHARS) -> None:
        self.limit = limit
        self._held: OrderedDict[tuple[int, int], int] = OrderedDict()  # page -> characters
        self._chars = 0
        self._lock = threading.Lock()

    def chars_of(self, texts: Iterable[str]) -> int:
        """How many characters of ``texts`` the process holds parsed."""
        with self._lock:
            return sum(len(text) for text in texts if text_key(text) in self._held)

    def add(self, texts: Iterable[str]) -> None:
        """``texts`` were read there: parsed, or their parse used again."""
        with self._lock:
            for text in texts:
                key = text_key(text)
                if key in self._held:
                    self._held.move_to_end(key)
                elif len(text) <= self.limit:
                    self._held[key] = len(text)
                    self._chars += len(text)
            while self._chars > self.limit:
                _, chars = self._held.popitem(last=False)
                self._chars -= chars

    def clear(self) -> None:
        """The process is new (or gone): it holds nothing."""
        with self._lock:
            self._held.clear()
            self._chars = 0
