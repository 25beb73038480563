"""Old import paths of the dynamic providers, kept importable for state already written.

Python dynamic providers are pickled into a stack's state by module path, and stacks deployed before the
library existed hold `components.providers.<module>.<Provider>`: the engine's dynamic provider host imports
that path to read, diff, update or delete those resources. Each module here re-exports the library's
provider (ml_diagnostics/providers/); nothing else may be added.
"""
