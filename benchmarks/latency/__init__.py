"""How fast the tool answers: a warm start, and a start that clarifies its question first."""
