"""Background runs: the task group that holds them (jobs), how fast they begin (pacing), the
body of one run (runner) and how a research ends unfinished (ending)."""
