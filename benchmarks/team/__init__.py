"""The team benchmark (``python benchmarks/team/load.py``): workers, PostgreSQL, a balancer and
a hundred clients, with a worker killed and the database restarted mid-run."""
