"""The algorithms of reading a page, with no research in them: passages and BM25
(``passages.py``), a page parsed once and cached (``parsed.py``), a text's most relevant passages
(``selection.py``), a source within its share with repeats read once (``focus.py``), and several
pages within one budget, worth per token (``across.py``: ``read_within``), in processes of
their own (``elsewhere.py``).

A research's reading (what the analyst is sent of each page, each page once, and what is
recorded) starts and ends in ``research/workflow/reading/``, which says how these are used.
"""
