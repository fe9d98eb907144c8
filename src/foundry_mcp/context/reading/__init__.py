"""What of a page is read: passages and their index, selection by relevance within a budget, and
focus (repeats read once, the most relevant passages kept)."""
