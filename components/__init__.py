"""The component library and what serves it: `ml_diagnostics` (components/ml_diagnostics), the Pulumi
components for ML diagnostics and training infrastructure that any program uses (Python directly; other
languages through the component plugin, PulumiPlugin.yaml and __main__.py, whose schema is
ml_diagnostics/schema.json). components/README.md says what each component creates.

components/providers/ is not the library: it keeps the import paths that stacks deployed before the library
existed hold for their dynamic providers (see its own docstring). Nothing else belongs at this level.
"""
