"""Integration tests: real SDKs against loopback fakes, whole researches on a temporary store."""
