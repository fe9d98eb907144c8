"""A cited page read again: the same, changed, moved, gone, or not read (no code asks a model).

Two texts of a page are the same when their sentences are, compared as words (case, spacing and
punctuation aside), so a page whose layout or extraction shifted is not "changed"; a sentence of
a few words (a date line, a menu entry) changing alone does not change a page either. What a
changed page says that it did not is its added sentences (:func:`added_text`): what a reading of
the change sends the analyst. A page that answers 404 or 410 is gone; one that now redirects to
another address has moved; any other failure (the network, a timeout, a server error) says
nothing of the page, and is not a change.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

from foundry_mcp.context.reading.passages import split_sentences
from foundry_mcp.providers.pages.fetch import FetchResult
from foundry_mcp.research.workflow.agents.pool import normalise_url

MIN_SENTENCE_WORDS = 4  # a shorter sentence changing alone does not change a page
GONE_STATUSES = frozenset({404, 410})
# How the fetcher reports a page the server refused (providers/pages/fetch.py): it keeps no
# status for a page it did not read.
_HTTP_REFUSAL = re.compile(r"^the server answered HTTP (\d{3})$")
_WORDS = re.compile(r"\w+")
GAP_MARK = " […] "


class PageState(StrEnum):
    """What reading a cited page again found."""

    SAME = "same"
    CHANGED = "changed"
    MOVED = "moved"  # redirected to another address
    GONE = "gone"  # 404 or 410
    UNREAD = "unread"  # not read (network, timeout, server error): not a change


@dataclass(frozen=True)
class PageCheck:
    """A cited page read again: what it is now, its new text (changed) or address (moved),
    and why it was not read (unread, gone)."""

    state: PageState
    text: str | None = None
    moved_to: str | None = None
    reason: str | None = None


def normalised(text: str) -> str:
    """``text`` in one Unicode form, its runs of white space one space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def digest(text: str) -> str:
    """The SHA-256 of the normalised text: equal texts, whatever their spacing, share it."""
    return hashlib.sha256(normalised(text).encode()).hexdigest()


def sentence_key(sentence: str) -> str:
    """A sentence as pages are compared: its words, lower-cased."""
    return " ".join(_WORDS.findall(sentence.casefold()))


def _sentences(text: str) -> list[str]:
    # The whole text as one paragraph: a line break the extraction put elsewhere moves nothing.
    return split_sentences(normalised(text))


def sentence_keys(text: str) -> set[str]:
    """The keys (:func:`sentence_key`) of ``text``'s sentences."""
    return {sentence_key(s) for s in _sentences(text)}


def touches(passage: str, removed: set[str]) -> bool:
    """Whether ``passage`` (an excerpt of a page's earlier text, perhaps cut at its edges)
    holds one of the ``removed`` sentences (their keys), whole or in part."""
    whole = sentence_key(passage)
    pieces = [k for k in sentence_keys(passage) if _substantive(k)]
    return any(key in whole or any(piece in key for piece in pieces) for key in removed if key)


def _substantive(sentence_key: str) -> bool:
    return len(sentence_key.split()) >= MIN_SENTENCE_WORDS


def text_changed(old: str, new: str) -> bool:
    """Whether ``new`` says something ``old`` did not, or no longer says something it did."""
    if digest(old) == digest(new):
        return False
    return any(_substantive(k) for k in sentence_keys(old) ^ sentence_keys(new))


def added_sentences(old: str, new: str) -> list[str]:
    """The sentences of ``new`` that ``old`` lacks, in their order (short ones included)."""
    old_keys = sentence_keys(old)
    return [s for s in _sentences(new) if sentence_key(s) not in old_keys]


def removed_keys(old: str, new: str) -> set[str]:
    """The keys of the sentences of ``old`` that ``new`` no longer holds."""
    return sentence_keys(old) - sentence_keys(new)


def added_text(old: str, new: str) -> str:
    """What ``new`` adds to ``old``: its added sentences, runs of them kept together and the
    runs joined by ``[…]`` (empty when it adds nothing)."""
    old_keys = sentence_keys(old)
    runs: list[list[str]] = []
    previous_added = False
    for sentence in _sentences(new):
        added = sentence_key(sentence) not in old_keys
        if added:
            if previous_added:
                runs[-1].append(sentence)
            else:
                runs.append([sentence])
        previous_added = added
    return GAP_MARK.join(" ".join(run) for run in runs)


def refused_status(result: FetchResult) -> int | None:
    """The HTTP status a server refused the page with, if that is why it was not read."""
    if result.status_code is not None and result.status_code >= 400:
        return result.status_code
    found = _HTTP_REFUSAL.match(result.error or "")
    return int(found.group(1)) if found else None


def _address(url: str) -> str:
    """Where a page is, as a move is judged: an upgrade to https or a ``www.`` is no move."""
    address = normalise_url(url).split("://", 1)[-1]
    return address.removeprefix("www.")


def check_page(url: str, saved: str | None, result: FetchResult) -> PageCheck:
    """What ``result`` (the page at ``url`` read again) says of the page whose text was
    ``saved`` (None: no text was kept, so only its address can be judged)."""
    if not result.ok:
        status = refused_status(result)
        if status in GONE_STATUSES:
            return PageCheck(PageState.GONE, reason=f"HTTP {status}")
        return PageCheck(PageState.UNREAD, reason=result.error or "not read")
    final = result.final_url or url
    if _address(final) != _address(url):
        return PageCheck(PageState.MOVED, moved_to=final)
    if saved is None or not result.text or not text_changed(saved, result.text):
        return PageCheck(PageState.SAME)
    return PageCheck(PageState.CHANGED, text=result.text)
