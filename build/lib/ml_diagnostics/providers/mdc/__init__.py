"""Model Development Cluster provider internals: update planning and the live cluster (projection, PATCH
recovery, messages). The schema and its rules live in ml_diagnostics/specs/ (shared with the stack config); the
provider class stays in ml_diagnostics/providers/model_development_cluster.py (its path is pickled into state).
"""
