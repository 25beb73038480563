"""ml-diagnostics: load and validate the stack config once, build one component per target."""

import pulumi

from components import config

cfg = config.load()
pulumi.export("environment", cfg.environment)

# kubernetesClusters: self-managed Kubernetes (issue: ML Diagnostics on Kubernetes)

# gkeClusters: created or adopted GKE clusters (issue: GKE managed ML Diagnostics)

# azureMl: Azure ML extension on AKS / Arc (issue: Azure ML extension)

# modelDevelopmentClusters: Vertex AI Model Development Clusters (issue: Model Development Cluster)
