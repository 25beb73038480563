"""The version rules from the vendor docs, for the components and config validators.

They are owned by the policy pack (`policies/mldiag_policy/compat.py`), which must run from a copy of
`policies/` alone; the program reads the same module through the repository root (a plain import, no
sys.path change), so there is one source of truth (tests/test_compat.py proves it).
"""

from policies.mldiag_policy.compat import *  # noqa: F403
