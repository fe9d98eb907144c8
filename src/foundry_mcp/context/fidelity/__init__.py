"""Fidelity: the records of what each item of content became (records) and their bookkeeping in a
research (bookkeeping)."""
