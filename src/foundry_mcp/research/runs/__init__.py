"""Background runs: the task group that holds them (jobs), how fast they begin (pacing), and the
body of one run (runner)."""
