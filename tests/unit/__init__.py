"""Unit tests: pure logic, no network, no store."""
