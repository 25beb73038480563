"""Model Development Cluster: the shared schema (spec), validation and update planning.

The provider class stays in components/providers/model_development_cluster.py (its path is pickled into state).
"""
