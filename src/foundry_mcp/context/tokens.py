"""Counting tokens: tiktoken when its encoding loads, a conservative estimate otherwise.

``tiktoken.get_encoding`` downloads its BPE file the first time; with no network it fails (and
on a half-open network it can hang). Loading is therefore tried once per encoding and process,
in a helper thread with a time limit, and a failure is remembered. With the environment variable
``FOUNDRY_MCP_NO_DOWNLOADS=1`` it is not tried at all (machines that must not reach any host
but the configured providers, and the test suite). Counting never raises: any
problem falls back to the estimate of one token per three characters, which over-counts
ordinary prose and JSON rather than under-counting them.

Counts are cached by content hash, so the long texts of a research are counted once per
process; the per-item fidelity records keep the count of each original across resumes.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
from collections import OrderedDict
from typing import Any, Protocol

log = logging.getLogger(__name__)

CHARS_PER_TOKEN_ESTIMATE = 3.0
MESSAGE_OVERHEAD_TOKENS = 12  # roles and separators around a system and a user message
LOAD_TIMEOUT_SECONDS = 5.0
CACHE_MIN_CHARS = 512  # shorter texts are counted directly: hashing costs about as much
CACHE_ENTRIES = 20_000
NO_DOWNLOADS_ENV = "FOUNDRY_MCP_NO_DOWNLOADS"

# Model-name patterns of the OpenAI families, and the encoding each uses.
_ENCODING_BY_MODEL: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d|chatgpt-4o|gpt-oss)"), "o200k_base"),
    (re.compile(r"^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)"), "cl100k_base"),
)


class TokenCounter(Protocol):
    """Counts the tokens of a text for one model family."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens in ``text``; never raises."""
        ...


def estimate_tokens(text: str) -> int:
    """The conservative estimate: one token per three characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN_ESTIMATE) if text else 0


def counter_name(encoding_name: str | None) -> str:
    """The name of the counter of the tiktoken encoding ``encoding_name`` (None: the
    estimate's), as a reading process rebuilds it."""
    return f"tiktoken:{encoding_name}" if encoding_name else "estimate"


class EstimateCounter:
    """Counts by the character estimate (for unknown tokenizers, or when tiktoken is absent)."""

    name = counter_name(None)

    def count(self, text: str) -> int:
        return estimate_tokens(text)


class TiktokenCounter:
    """Counts with a loaded tiktoken encoding; falls back to the estimate on any error."""

    def __init__(self, encoding: Any, name: str) -> None:
        self._encoding = encoding
        self.name = counter_name(name)

    def count(self, text: str) -> int:
        if not text:
            return 0
        try:
            return len(self._encoding.encode_ordinary(text))
        except Exception:  # a tokenizer bug must not fail a research
            return estimate_tokens(text)


class CachedCounter:
    """A counter that remembers the counts of long texts (thread-safe LRU).

    A text is known by its string hash and length: Python keeps a string's hash on the string,
    so the same page counted again at every fitting round costs a lookup, and an equal copy a
    pass over it (about a tenth of a digest's). Two texts of one length whose 64-bit hashes
    meet among the 20,000 entries are about as likely as 1 in 10^11.
    """

    def __init__(self, inner: TokenCounter, entries: int = CACHE_ENTRIES) -> None:
        self.inner = inner
        self.name = inner.name
        self._entries = entries
        self._cache: OrderedDict[tuple[int, int], int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def count(self, text: str) -> int:
        if len(text) < CACHE_MIN_CHARS:
            return self.inner.count(text)
        key = text_key(text)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return found
        tokens = self.inner.count(text)
        with self._lock:
            self._cache[key] = tokens
            if len(self._cache) > self._entries:
                self._cache.popitem(last=False)
        return tokens

    def remember(self, text: str, tokens: int) -> None:
        """Seed the cache with a count known from elsewhere (a saved fidelity record)."""
        if len(text) < CACHE_MIN_CHARS:
            return
        key = text_key(text)
        with self._lock:
            self._cache[key] = tokens


def text_key(text: str) -> tuple[int, int]:
    """What a cache of long texts knows a text by: its string hash, which Python keeps on the
    string (the same text again costs nothing), and its length."""
    return hash(text), len(text)


_encodings: dict[str, Any] = {}  # name -> encoding, or None when it could not be loaded
_encodings_lock = threading.Lock()
_loading: dict[str, threading.Lock] = {}  # name -> held while that encoding loads
_counters: dict[str, CachedCounter] = {}


def downloads_disabled() -> bool:
    """Whether ``FOUNDRY_MCP_NO_DOWNLOADS`` forbids fetching tokenizer files."""
    return os.environ.get(NO_DOWNLOADS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _load_encoding(name: str, timeout: float = LOAD_TIMEOUT_SECONDS) -> Any:
    """The tiktoken encoding ``name``, or None if it cannot be loaded (tried once).

    A caller that comes while another loads it (the start-up warm-up and a first research)
    waits for that load instead of loading it a second time.
    """
    with _encodings_lock:
        if name in _encodings:
            return _encodings[name]
        loading = _loading.setdefault(name, threading.Lock())
    with loading:
        with _encodings_lock:
            if name in _encodings:
                return _encodings[name]
        return _load_once(name, timeout)


def _load_once(name: str, timeout: float) -> Any:
    if downloads_disabled():
        log.info("FOUNDRY_MCP_NO_DOWNLOADS is set: estimating tokens instead of tiktoken")
        with _encodings_lock:
            return _encodings.setdefault(name, None)
    result: list[Any] = []

    def load() -> None:
        try:
            import tiktoken

            result.append(tiktoken.get_encoding(name))
        except Exception as exc:  # no network, no cache, no package
            log.info("tiktoken encoding %s unavailable (%s); estimating tokens", name, exc)

    worker = threading.Thread(target=load, name=f"tiktoken-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    encoding = result[0] if result else None
    with _encodings_lock:
        _encodings.setdefault(name, encoding)
        return _encodings[name]


def encoding_for_model(model: str) -> str | None:
    """The tiktoken encoding of an OpenAI model name, or None for other families."""
    bare = model.rsplit(":", 1)[-1].strip().lower()
    bare = bare.rsplit("/", 1)[-1]  # "openai/gpt-4o" on routers
    for pattern, encoding in _ENCODING_BY_MODEL:
        if pattern.match(bare):
            return encoding
    return None


def counter_for_model(model: str) -> CachedCounter:
    """The (cached, shared) token counter for ``model``.

    OpenAI models count with their tiktoken encoding when it loads. Anthropic, Gemini and
    unknown models have no public offline tokenizer: they use the conservative estimate.
    """
    return counter_for_encoding(encoding_for_model(model))


def loaded_counter_for_model(model: str) -> CachedCounter | None:
    """The counter :func:`counter_for_model` gives, if it was made already (it never loads:
    for the event loop), else None."""
    key = encoding_for_model(model) or "estimate"
    with _encodings_lock:
        return _counters.get(key)


def counter_for_encoding(encoding_name: str | None) -> CachedCounter:
    """The (cached, shared) token counter of the tiktoken encoding ``encoding_name`` (None:
    the estimate), the estimate when that encoding does not load."""
    key = encoding_name or "estimate"
    with _encodings_lock:
        found = _counters.get(key)
    if found is not None:
        return found
    inner: TokenCounter = EstimateCounter()
    if encoding_name is not None:
        encoding = _load_encoding(encoding_name)
        if encoding is not None:
            inner = TiktokenCounter(encoding, encoding_name)
    counter = CachedCounter(inner)
    with _encodings_lock:
        return _counters.setdefault(key, counter)


def count_messages(counter: TokenCounter, system: str, user: str) -> int:
    """The input tokens of a system and a user message, with the per-message overhead."""
    return counter.count(system) + counter.count(user) + MESSAGE_OVERHEAD_TOKENS


def content_hash(text: str) -> str:
    """``sha256:<hex>`` of ``text`` (UTF-8): the identity of a content item's original."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
