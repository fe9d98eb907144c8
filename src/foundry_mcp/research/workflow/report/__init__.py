"""The report: written from the findings (in parts at once), its citations resolved to numbers."""
