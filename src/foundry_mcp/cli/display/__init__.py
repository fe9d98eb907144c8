"""What a person sees: documents drawn on a terminal, JSON into a pipe, a research's progress."""
