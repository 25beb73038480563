"""ml-diagnostics: Pulumi components for ML diagnostics and training infrastructure."""
