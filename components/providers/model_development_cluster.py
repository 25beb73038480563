"""Old home of the Model Development Cluster provider: state written before the move unpickles through it."""

from ml_diagnostics.providers.model_development_cluster import ModelDevelopmentClusterProvider

__all__ = ["ModelDevelopmentClusterProvider"]
