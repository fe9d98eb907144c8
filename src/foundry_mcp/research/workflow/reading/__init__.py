"""Reading pages: what the analyst is sent of each page a research found, each page once.

**Where it starts and ends.** Reading starts with a search result's page: a ``Source`` the
gatherer saved with its fetched text (``prompts.analyzer.source_text``: the text, else the
snippet), not analysed yet. The analyzer (``workflow/agents/analyzer.py``: ``analyze``, then
``read_further``) drives it through this room, and it ends with what the analyst was sent
recorded: on the research (``ResearchState.readings``, one ``PageRecord`` a page), in the
round's budget (``ResearchState.read_by_round``), in a ``page_read`` event (passages read of
how many, tokens), and with the findings it gave for other parts of the question filed for them
(``ResearchState.filed``). In between:

1. ``readings.py``: :class:`~.readings.Readings`, the research's readings, one for the whole
   research (its sub-questions' researchers share it). The analyzer claims the pages it is about
   to read (a page another researcher read or is reading is not sent again), asks which
   passages of each were read before, and, once a batch is analysed, records it there and files
   its findings for the other parts; a phase run again forgets its researcher's readings.
2. ``budget.py``: how much page text may be sent: the research's reading budget a round
   (``ResearchLimits.reading_budget``), a sub-question's researcher's (``branch_budget``), one
   reading's allowance (``round_allowance``), what is left for a further reading
   (``further_allowance``).
3. ``pages.py``: one reading (:class:`~.pages.Reading`, made by ``read_pages``): with an
   allowance, the passages worth most per token across the pages; without one, ``shares.py``;
   either way packed into batches (``workflow/fitting/batches.py``), each then fitted to its
   call (``workflow/fitting/sources.py``) and sent. ``Reading.record`` records a batch.
4. ``shares.py``: with no reading budget (or a page the user restored), each page whole within
   its share of the round's analysis budget, focused only where the window demands it.

The algorithms, with no research in them, are in ``context/reading/`` (the layers keep them
below): ``passages.py`` (passages, BM25), ``parsed.py`` (a page parsed once, cached),
``across.py`` (``read_within``: several pages within one budget, worth per token),
``focus.py`` (a text within its share; ``RepeatLedger``: a sentence read once in a research)
and ``selection.py`` (a text's most relevant passages). A follow-up question
(``agents/follow_up.py``) reads a completed research's pages with ``read_within`` too, and
records nothing.

**Words** (one a concept, in code, docs and events):

* **page**: a source's text; **passage**: a few sentences of it, the unit chosen and recorded
  (by its index among the page's passages).
* **reading**: what one analysis sends the analyst of its pages, in batches (``Reading``); the
  research's **readings** are all of them, kept by page (``Readings``, ``PageRecord``).
* **read** / **sent**: a passage is read once it went to the analyst, or every sentence of it
  did from another page (read, not sent); a page read **whole** or **in part**.
* **read before**: the passages of a page read by an earlier reading of the research; never a
  candidate again.
* **allowance**: the tokens of page text one reading may send, its part of the **reading
  budget** (a round's).
* **further reading**: a reading of more of the pages a round read in part, with what its
  budget has left (``read_further``, ``further_allowance``, ``Readings.claimed_further``).
* **claim**: a researcher's hold on the pages it reads now (``Readings.claimed``, ``Claim``);
  claims never wait.
* **filed**: a finding a reading found for another part of the question, kept for that part's
  researcher (``Readings.file``, ``Readings.receive``).
"""
