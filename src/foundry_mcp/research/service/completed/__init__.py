"""What can be done with a completed research: ask it a follow-up question (``follow_up``),
have its report made again as a new version (``request``: what the caller asks; ``revising``:
starting the revision, which runs as a background run of the research), and read its versions
and the delta between two (``versions``)."""
