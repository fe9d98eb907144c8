"""Deep research on long documentation pages (``python benchmarks/docpages/bench.py``): which
planted facts reach the prompts and the report."""
