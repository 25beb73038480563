"""Old import paths of this repository's program, kept importable for state it already wrote.

The library is `ml_diagnostics` (components/ml_diagnostics). Python dynamic providers are pickled into a
stack's state by module path, and stacks deployed before the library existed hold
`components.providers.<module>.<Provider>`: the engine's dynamic provider host imports that path to read,
diff, update or delete those resources. Nothing else may be added here.
"""
