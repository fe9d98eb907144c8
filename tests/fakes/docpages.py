"""A world of documentation pages with planted facts, for measuring recall on real-looking docs.

Eight comparison questions about the Python standard library ("Compare dbm.gnu, dbm.ndbm and
dbm.dumb for lookup speed and file size"; the fake planner decomposes each into one sub-question
per dotted name). Each part has a few pages (three by default) written like API reference and
guides, in Markdown or reST: headings, prose, signatures, lists of names, tables, admonitions,
fenced code, doctest and console sessions and tracebacks run together, so many lines have no
full stop. Page sizes go from 20 KB to 400 KB of text (``PAGE_SIZES``, four of nine over 150 KB),
or one fixed size (``page_chars``), e.g. 20 KB against 400 KB pages for the state-bytes figure.

Every page plants four distinctive fact sentences, tagged ``FACT-<name>-<n>`` as
:mod:`tests.fakes.planted` does, at 5%, 50%, 90% and 98% of its characters, wherever that
falls: in a paragraph, a list item, a table row, an admonition, or right after a code block. Each
part also has one fact only in a search snippet (the result's ``content``), never in its page
text (``raw_content``), as when an extractor loses a sentence.

Search behaves like :class:`tests.fakes.planted.ItemCorpus`: a query naming one part (its whole
dotted name) finds that part's pages, rotated by a query-dependent start; a query naming several
finds them interleaved; a query naming none finds nothing. Use it as
``fake_tavily(DocCorpus(DOC_QUESTIONS[0]))``; :meth:`DocCorpus.served_facts` gives the facts the
searches returned and :attr:`DocCorpus.planted` where each was planted (:class:`PlantedFact`).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .http import RecordedRequest
from .planted import ItemCorpus, facts_in, tag_name
from .providers import slugify

FACT_DEPTHS = (0.05, 0.50, 0.90, 0.98)
PAGE_SIZES = (20_000, 48_000, 95_000, 160_000, 230_000, 310_000, 400_000, 130_000, 70_000)
SIZE_BUCKETS = ((50_000, "20-50 KB"), (150_000, "50-150 KB"), (300_000, "150-300 KB"))
LARGEST_BUCKET = "300-400 KB"


def size_bucket(chars: int) -> str:
    """The page-size bucket of a page of ``chars`` characters."""
    return next((name for limit, name in SIZE_BUCKETS if chars < limit), LARGEST_BUCKET)


@dataclass(frozen=True)
class DocQuestion:
    """A comparison of dotted names (the parts) on two aspects; ``names``: related API names
    the pages mention."""

    items: tuple[str, ...]
    aspects: tuple[str, str]
    names: tuple[str, ...]

    @property
    def text(self) -> str:
        """``Compare A, B and C for <aspect> and <aspect>``."""
        items = f"{', '.join(self.items[:-1])} and {self.items[-1]}"
        return f"Compare {items} for {self.aspects[0]} and {self.aspects[1]}"


def _q(items: str, aspects: tuple[str, str], names: str) -> DocQuestion:
    return DocQuestion(tuple(items.split()), aspects, tuple(names.split()))


DOC_QUESTIONS: tuple[DocQuestion, ...] = (
    _q("dbm.gnu dbm.ndbm dbm.dumb", ("lookup speed", "file size"),
       "dbm.open dbm.whichdb dbm.error gdbm.firstkey gdbm.nextkey gdbm.reorganize gdbm.sync "
       "shelve.open os.PathLike dbm.gnu.open_flags"),
    _q("multiprocessing.Pool concurrent.futures.ProcessPoolExecutor "
       "multiprocessing.pool.ThreadPool", ("start-up cost", "memory use"),
       "Pool.map Pool.imap_unordered Pool.apply_async Executor.submit Executor.shutdown "
       "multiprocessing.get_context os.process_cpu_count concurrent.futures.as_completed "
       "multiprocessing.shared_memory.SharedMemory multiprocessing.set_start_method"),
    _q("asyncio.TaskGroup asyncio.gather asyncio.wait", ("cancellation", "error handling"),
       "asyncio.create_task asyncio.Task.cancel asyncio.timeout asyncio.shield ExceptionGroup "
       "asyncio.CancelledError asyncio.FIRST_EXCEPTION asyncio.run asyncio.Task.uncancel "
       "contextvars.copy_context"),
    _q("sqlite3.Connection.execute sqlite3.Cursor.executemany sqlite3.Connection.backup",
       ("insert throughput", "lock contention"),
       "sqlite3.connect sqlite3.Connection.commit sqlite3.Cursor.fetchall sqlite3.Row "
       "sqlite3.OperationalError sqlite3.Connection.autocommit sqlite3.PARSE_DECLTYPES "
       "sqlite3.Blob sqlite3.threadsafety sqlite3.Connection.isolation_level"),
    _q("json.loads pickle.loads marshal.loads", ("decoding speed", "safety with untrusted input"),
       "json.dumps json.JSONDecoder json.JSONDecodeError pickle.Unpickler.find_class "
       "pickle.HIGHEST_PROTOCOL pickle.PickleBuffer marshal.version marshal.dumps "
       "ast.literal_eval io.BytesIO"),
    _q("logging.handlers.RotatingFileHandler logging.handlers.QueueHandler "
       "logging.handlers.SysLogHandler", ("throughput", "message loss"),
       "logging.Handler.emit logging.Handler.handleError logging.Formatter "
       "logging.handlers.QueueListener logging.LogRecord queue.SimpleQueue "
       "logging.config.dictConfig logging.raiseExceptions socket.SOCK_DGRAM logging.getLogger"),
    _q("collections.OrderedDict collections.defaultdict collections.ChainMap",
       ("memory overhead", "lookup speed"),
       "OrderedDict.move_to_end OrderedDict.popitem defaultdict.default_factory "
       "ChainMap.new_child ChainMap.maps dict.fromkeys sys.getsizeof types.MappingProxyType "
       "collections.abc.MutableMapping operator.itemgetter"),
    _q("hashlib.sha256 hashlib.blake2b hashlib.scrypt", ("throughput", "brute-force resistance"),
       "hashlib.new hashlib.file_digest hashlib.pbkdf2_hmac hashlib.algorithms_available "
       "hash.update hash.hexdigest hash.digest_size hmac.compare_digest secrets.token_bytes "
       "os.urandom"),
)  # fmt: skip

_FACTS = (
    "In the {year} reference benchmark, `{item}` did {a},{b}00 operations a second for {aspect}.",
    "With default settings, `{item}` used {b}.{c} MiB per 10,000 entries in {aspect} tests.",
    "Since Python 3.{minor}, `{item}` cut {aspect} by {a} percent in the maintainers' own tests.",
    "The test suite covers {aspect} of `{item}` with {a} cases, {b} of them from bug reports.",
    "On Linux, a million keys took `{item}` {a}.{c} s for {aspect}, against {b}{c} s on Windows.",
    "Up to {a} concurrent callers, {aspect} of `{item}` degrades by less than {b}0 percent.",
    "Passing *{param}* to `{item}` changed {aspect} by {a} percent in the {year} measurements.",
    "A `{item}` store of {a} thousand records took {b}{c} MB on disk in the {aspect} checks.",
)
_PROSE = (
    "`{item}` is documented as it behaves in CPython 3.{minor}; others may differ in {aspect}.",
    "Calling `{name}` on an object that is already closed raises `{exc}`.",
    "The {aspect} of `{item}` depends on the platform, the build and the size of the values.",
    "See `{name}` for the lower-level interface on which this one is built.",
    "Unlike `{other}`, `{item}` checks *{param}* eagerly and raises `{exc}` for a bad value.",
    "This section describes the behaviour of `{item}` when *{param}* is left at its default.",
    "Most programs never need to call `{name}` directly; the context manager form does it.",
    "The examples below assume a POSIX system, and the paths in them are illustrative only.",
    "Figures for {aspect} in older releases of this page were measured on obsolete hardware.",
    "When *{param}* is given, it must be {kind}, otherwise `{exc}` is raised.",
    "Thread safety is not guaranteed: share one `{item}` object between threads behind a lock.",
    "The return value is a new object; the argument passed in is never modified.",
    "Deprecated since version 3.{minor}: passing *{param}* positionally emits a warning.",
    "For {aspect} in general, see the how-to guide linked at the end of this page.",
    "`{item}` and `{other}` share most of their interface, so switching is mostly mechanical.",
    "Because `{name}` may block, call it from a worker thread when the caller runs an event loop.",
    "Errors from the underlying library are re-raised as `{exc}` with the original message.",
    "The *{param}* parameter was added in version 3.{minor} and defaults to `None`.",
    "It is an error to use `{item}` after the interpreter has started shutting down.",
    "In the table below, the last column gives the version in which each name appeared.",
)
_SHORT = (
    "returns the number of entries", "closes the underlying resource", "flushes pending writes",
    "raises {exc} on failure", "available on Unix only", "new in version 3.{minor}",
    "accepts a path-like object", "ignored when *{param}* is set", "see `{name}`",
    "keyword-only since 3.{minor}", "may block the calling thread", "no-op on Windows",
)  # fmt: skip
_CODE = (
    ("import {module}", "", "with {item}({arg}) as obj:", "    obj.{attr}({arg2})",
     "    for key in sorted(obj):", "        print(key, obj[key])"),
    ("from {module} import {leaf}", "", "def {fn}(path, *, {param}=None):",
     "    # {aspect} depends on the size of each value", "    try:",
     "        return {leaf}(path)", "    except {exc} as exc:",
     '        log.warning("%s failed: %s", path, exc)', "        raise"),
    ("import time", "import {module}", "", "start = time.perf_counter()",
     "for i in range({n}):", "    {item}({arg})", "elapsed = time.perf_counter() - start",
     'print(f"{{elapsed:.3f}} s for {n} calls")'),
    (">>> import {module}", ">>> obj = {item}({arg})", ">>> obj.{attr}()", "{n}",
     ">>> sorted(obj)[:3]", "[b'alpha', b'beta', b'gamma']"),
    ("$ python -m timeit -s 'import {module}' '{item}({arg})'",
     "{n}000 loops, best of 5: {b}.{c} usec per loop"),
    ("Traceback (most recent call last):", '  File "<stdin>", line 1, in <module>',
     '  File "/usr/lib/python3.{minor}/{module}/__init__.py", line {n}, in {attr}',
     "{exc}: {short}"),
)  # fmt: skip
_SECTIONS = (
    "Functions", "`{name}` objects", "Performance notes", "Examples", "Exceptions",
    "Platform notes", "Changes in 3.{minor}", "{Aspect}", "Thread safety",
    "Migrating from `{other}`",
)  # fmt: skip
_KINDS = ("API reference", "Usage guide", "Performance notes", "How-to", "Cookbook", "FAQ")
_PARAMS = ("timeout", "flag", "mode", "chunksize", "maxsize", "encoding", "protocol", "strict")
_EXCS = ("ValueError", "TypeError", "OSError", "RuntimeError", "KeyError", "TimeoutError")
_VALUES = ("a positive integer", "a string", "a bytes-like object", "a callable", "`None`")
# Where a fact sits, by the kind of block it was put in.
PLACES = {
    "prose": "paragraph", "list": "list item", "table": "table row", "note": "admonition",
    "code": "after code", "heading": "after heading",
}  # fmt: skip
FOOTER = (
    "Previous topic | Next topic | This page: Report a bug | Show source\n"
    "© Copyright 2001-2025, Python Software Foundation. Last updated on Jun 02, 2025."
)


@dataclass(frozen=True)
class PlantedFact:
    """One planted fact: where it is and how big its page is (``depth`` None: snippet only)."""

    tag: str
    item: str
    url: str
    sentence: str
    page_chars: int
    depth: float | None  # nominal: one of FACT_DEPTHS
    at: float | None = None  # actual: its offset over its page's length
    place: str = "snippet"  # the kind of block it is in (PLACES)

    @property
    def snippet_only(self) -> bool:
        return self.depth is None

    @property
    def depth_bucket(self) -> str:
        return "snippet" if self.depth is None else f"{self.depth:.0%}"

    @property
    def size_bucket(self) -> str:
        return size_bucket(self.page_chars)


@dataclass
class _Block:
    """A block of a page: its kind and lines (a paragraph's lines are its sentences)."""

    kind: str  # prose, list, table, code, note, heading, fixed
    lines: list[str] = field(default_factory=list)

    def render(self) -> str:
        return (" " if self.kind == "prose" else "\n").join(self.lines)

    def slots(self) -> list[tuple[int, int]]:
        """``(line index, offset in the rendered block)`` where a fact may go."""
        if self.kind == "fixed":
            return []
        first = {"prose": 1, "list": 1, "table": 2, "note": 1}.get(self.kind, len(self.lines))
        offset, found = 0, []
        for i, line in enumerate(self.lines):
            offset += len(line) + 1
            if i + 1 >= first:
                found.append((i + 1, offset))
        return found

    def insert(self, index: int, fact: str, style: str) -> str:
        """Put ``fact`` in as line ``index``, shaped like the block's lines; where it went."""
        shaped = {
            "list": f"- {fact}" if style == "md" else f"* {fact}",
            "table": f"| `{fact.split('`')[1]}` | {fact} | |" if "`" in fact else f"| | {fact} | |",
            "note": f"> {fact}" if style == "md" else f"   {fact}",
        }.get(self.kind, fact)
        self.lines.insert(index, shaped)
        return PLACES[self.kind]


class _PageWriter:
    """Writes one page: blocks of a Markdown or reST page about ``item`` (see the module)."""

    def __init__(self, question: DocQuestion, item: str, rng: random.Random, style: str) -> None:
        self.q, self.item, self.rng, self.style = question, item, rng, style
        self.module = item.split(".")[0]

    def fill(self, template: str) -> str:
        r, q = self.rng, self.q
        aspect = r.choice(q.aspects)
        leaf = self.item.rsplit(".", 1)[-1]
        values: dict[str, Any] = {
            "item": self.item, "module": self.module, "leaf": leaf, "aspect": aspect,
            "Aspect": aspect.capitalize(), "name": r.choice(q.names),
            "other": r.choice([i for i in q.items if i != self.item]),
            "param": r.choice(_PARAMS), "exc": r.choice(_EXCS), "kind": r.choice(_VALUES),
            "minor": r.randint(6, 14), "n": r.randint(2, 999), "b": r.randint(1, 9),
            "c": r.randint(0, 9), "attr": r.choice(q.names).rsplit(".", 1)[-1],
            "fn": f"open_{r.choice(_PARAMS)}", "arg": repr(f"{r.choice(_PARAMS)}.db"),
            "arg2": r.randint(0, 64),
        }  # fmt: skip
        values["short"] = r.choice(_SHORT).format(**values)
        return template.format(**values)

    def prose(self, count: int) -> _Block:
        return _Block("prose", [self.fill(t) for t in self.rng.sample(_PROSE, count)])

    def block(self) -> _Block:
        """One block after a section's heading, of a kind drawn by weight."""
        r, md = self.rng, self.style == "md"
        kind = r.choices(("prose", "code", "list", "table", "sig", "note"), (6, 5, 2, 2, 2, 2))[0]
        if kind == "prose":
            return self.prose(r.randint(2, 5))
        if kind == "code":
            lines = [self.fill(line) for line in r.choice(_CODE)]
            if md:
                return _Block("code", ["```python", *lines, "```"])
            return _Block("code", [".. code-block:: python", "", *(f"   {x}" for x in lines)])
        if kind == "list":
            mark = "-" if md else "*"
            lines = [self.fill(f"{mark} `{{name}}` – {{short}}") for _ in range(r.randint(3, 7))]
            return _Block("list", lines)
        if kind == "table":
            rows = [self.fill("| `{name}` | {short} | 3.{minor} |") for _ in range(r.randint(3, 8))]
            return _Block("table", ["| Name | Description | Added |", "|---|---|---|", *rows])
        if kind == "sig":
            params = ", ".join(r.sample(_PARAMS, r.randint(1, 3)))
            line = f"`{{name}}({params})`" if md else f".. method:: {{name}}({params})"
            return _Block("heading", [self.fill(("### " if md else "") + line)])
        opener = r.choice(("Note", "Warning", "versionchanged:: 3.{minor}", "seealso"))
        head = self.fill(f"> **{opener}**" if md else f".. {opener.lower()}::")
        text = self.fill(r.choice(_PROSE))
        return _Block("note", [head, f"> {text}"] if md else [head, "", f"   {text}"])

    def heading(self, template: str) -> _Block:
        title = self.fill(template)
        if self.style == "md":
            return _Block("heading", [f"## {title}"])
        return _Block("heading", [title, "=" * len(title)])

    def page(self, kind: str, chars: int) -> list[_Block]:
        """A page of about ``chars`` characters: header, sections, footer (no facts yet)."""
        title = f"{self.item} — {kind}"
        opening = (
            f"This page documents `{self.item}`, with notes on {' and '.join(self.q.aspects)}."
        )
        header = [
            _Block("fixed", [f"# {title}" if self.style == "md" else f"{title}\n{'*' * 40}"]),
            _Block("fixed", [f"Docs » Library reference » {self.module} » {self.item}"]),
            _Block("fixed", [f"**Source code:** Lib/{self.module}/__init__.py"]),
            _Block("prose", [opening, *self.prose(2).lines]),
        ]
        blocks, size = header, sum(len(b.render()) + 2 for b in header) + len(FOOTER)
        while size < chars:
            section = [self.heading(self.rng.choice(_SECTIONS))]
            section += [self.block() for _ in range(self.rng.randint(2, 6))]
            for block in section:
                size += len(block.render()) + 2
            blocks += section
        return [*blocks, _Block("fixed", [FOOTER])]


class DocCorpus(ItemCorpus):
    """A callable Tavily corpus of documentation pages for one :class:`DocQuestion` (see the
    module). ``page_chars`` gives every page that size; else sizes rotate over ``PAGE_SIZES``."""

    def __init__(
        self,
        question: DocQuestion,
        *,
        pages_per_item: int = 3,
        page_chars: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(question.items)
        self.question, self.seed, self.page_chars = question, seed, page_chars
        self.planted: dict[str, PlantedFact] = {}
        offset = DOC_QUESTIONS.index(question) * 2 if question in DOC_QUESTIONS else 0
        for i, item in enumerate(question.items):
            self.pages[item] = [
                self._page(item, n, page_chars or PAGE_SIZES[(offset + i * pages_per_item + n) % 9])
                for n in range(pages_per_item)
            ]
            self._plant_in_snippet(item, self.pages[item][i % pages_per_item], pages_per_item)

    def all_pages(self) -> list[dict[str, Any]]:
        """Every page, part by part."""
        return [page for pages in self.pages.values() for page in pages]

    def rank_seed(self, query: str) -> int:
        key = f"{self.seed}|{' '.join(query.lower().split())}"
        return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)

    def __call__(self, query: str) -> list[dict[str, Any]]:
        named = [item for item in self.items if _names(query, item)]
        groups = [self.pages[item] for item in named]
        pages = [page for group in zip(*groups, strict=True) for page in group]
        start = self.rank_seed(query) % len(pages) if pages else 0
        ranked = pages[start:] + pages[:start]
        return [
            {key: page[key] for key in self.RESULT_KEYS} | {"score": round(0.95 - 0.05 * rank, 3)}
            for rank, page in enumerate(ranked)
        ]

    def served_facts(self, requests: Iterable[RecordedRequest]) -> set[str]:
        """The facts in the results these ``/search`` requests got: in snippets, and in page
        texts when the request asked for them (as the Tavily fake answers)."""
        found: set[str] = set()
        for request in requests:
            body = request.json or {}
            for result in self(str(body.get("query") or ""))[: int(body.get("max_results") or 5)]:
                found |= facts_in(result["content"])
                if body.get("include_raw_content"):
                    found |= facts_in(result["raw_content"])
        return found

    # ------------------------------------------------------------------ page building

    def _page(self, item: str, number: int, chars: int) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}|{self.question.text}|{item}|{number}|{chars}")
        kind = _KINDS[(self.question.items.index(item) + number) % len(_KINDS)]
        writer = _PageWriter(self.question, item, rng, "md" if number % 2 == 0 else "rst")
        blocks = writer.page(kind, chars)
        snippet = " ".join(blocks[3].lines[:2])  # the opening sentences, before any fact
        url = f"https://docs.example.org/3/library/{slugify(item)}/{slugify(kind)}.html"
        facts = [self._fact(item, number * len(FACT_DEPTHS) + k + 1) for k in range(4)]
        total = sum(len(b.render()) + 2 for b in blocks) + sum(len(f) + 3 for _, f in facts)
        places = [
            _plant(blocks, f, depth * total, writer.style)
            for depth, (_, f) in zip(FACT_DEPTHS, facts, strict=True)
        ]
        text = "\n\n".join(block.render() for block in blocks)
        for depth, place, (tag, sentence) in zip(FACT_DEPTHS, places, facts, strict=True):
            at = round(text.index(sentence) / len(text), 4)
            self.planted[tag] = PlantedFact(tag, item, url, sentence, len(text), depth, at, place)
        return {
            "title": f"{item} — {kind}",
            "url": url,
            "content": snippet,
            "raw_content": text,
            "facts": [tag for tag, _ in facts],
        }

    def _plant_in_snippet(self, item: str, page: dict[str, Any], pages: int) -> None:
        """A fact only in ``page``'s snippet: first in it, absent from the page text."""
        tag, sentence = self._fact(item, pages * len(FACT_DEPTHS) + 1)
        page["content"] = f"{sentence} {page['content']}"
        page["facts"].append(tag)
        self.planted[tag] = PlantedFact(
            tag, item, page["url"], sentence, len(page["raw_content"]), None
        )

    def _fact(self, item: str, n: int) -> tuple[str, str]:
        """The tag and sentence of fact ``n`` of ``item``."""
        tag = f"FACT-{tag_name(item)}-{n}"
        digest = hashlib.sha256(f"{self.question.text}|{item}|{n}".encode()).digest()
        template = _FACTS[(n + digest[3]) % len(_FACTS)]
        a, b, c, minor = digest[0] % 90 + 10, digest[1] % 9 + 1, digest[5] % 10, digest[2] % 9
        aspect, param = self.question.aspects[n % 2], _PARAMS[digest[4] % len(_PARAMS)]
        sentence = template.format(
            item=item, aspect=aspect, param=param, a=a, b=b, c=c, minor=minor + 6, year=2016 + minor
        )
        return tag, f"{tag}: {sentence}"


def _plant(blocks: list[_Block], sentence: str, target: float, style: str) -> str:
    """Insert ``sentence`` at the slot (of any block) nearest to character ``target``; the kind
    of place it went to."""
    best: tuple[float, int, int] | None = None
    start = 0
    for number, block in enumerate(blocks):
        for index, offset in block.slots():
            distance = abs(start + offset - target)
            if best is None or distance < best[0]:
                best = (distance, number, index)
        start += len(block.render()) + 2
    if best is None:
        raise ValueError("a page needs a place for its facts")
    _, number, index = best
    return blocks[number].insert(index, sentence, style)


def _names(query: str, item: str) -> bool:
    """Whether ``query`` names ``item`` as a whole dotted name (``multiprocessing.Pool`` is not
    named by ``multiprocessing.pool.ThreadPool``), any case."""
    pattern = rf"(?<![\w.]){re.escape(item)}(?!\w|\.\w)"
    return re.search(pattern, query, re.IGNORECASE) is not None
