"""Shared fixtures live in tests/fixtures/<area>.py; this file only lists them."""

pytest_plugins: list[str] = [
    "tests.fixtures.google",
    "tests.fixtures.mermaid",
    "tests.fixtures.policies",
    "tests.fixtures.verify",
    "tests.fixtures.e2e",
]
