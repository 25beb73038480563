"""Old homes of the dynamic providers (see components/__init__.py)."""
