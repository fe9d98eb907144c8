"""Calling models on behalf of one research: routing, fallback, usage and cost (calls, routing),
its concurrent children (fanout), and JSON read out of answers (jsonparse). Below both the
workflow and the verification, which use it."""
