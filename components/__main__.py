"""The component plugin's entry point: serves the ml_diagnostics components to the engine."""

from ml_diagnostics.plugin import host

if __name__ == "__main__":
    host()
