"""Fitting content to a model's window: the fitted calls, sources packed into analysis batches
within their share, findings within the synthesis budget."""
