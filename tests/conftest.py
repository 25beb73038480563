"""Shared fixtures live in tests/fixtures/<area>.py; this file only lists them."""

from hypothesis import HealthCheck, settings

# Property tests assert behaviour, never speed: no per-example deadline (a loaded CI machine is slow).
settings.register_profile("project", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("project")

pytest_plugins: list[str] = [
    "tests.fixtures.google",
    "tests.fixtures.mermaid",
    "tests.fixtures.policies",
    "tests.fixtures.verify",
    "tests.fixtures.e2e",
]
