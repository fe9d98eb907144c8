"""The deadline of ``max_time_s``: when writing must start (ceiling), the research's measured
pace, and what the deadline says in decisions, warnings and the report."""
