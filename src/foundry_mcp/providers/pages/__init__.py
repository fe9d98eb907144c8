"""Reading the pages behind search results: guarded downloads (fetch, behind the SSRF guard of
ssrf) and their text from HTML and PDF (extract)."""
