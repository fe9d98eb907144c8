"""Reading each page once per research: who reads what (reader), how much a round may read
(budget), and findings filed under every part of the question they answer."""
