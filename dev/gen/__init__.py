"""Generators of committed files; each has --write, and a test fails when what it writes is stale."""
