"""Calling models on behalf of one research: routing, fallback, usage and cost (calls, routing),
its concurrent children (fanout), JSON read leniently out of answers (jsonparse), and the one
way every agent asks for a JSON answer, repairs it once and notes what was left out (answers).
Below both the workflow and the verification, which use it."""
