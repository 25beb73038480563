"""ml-diagnostics: load and validate the stack config once, build one component per target."""

import pulumi

from components import config

cfg = config.load()
pulumi.export("environment", cfg.environment)

# kubernetesClusters: self-managed Kubernetes (issue: ML Diagnostics on Kubernetes)
from components.kubernetes_cluster import KubernetesCluster  # noqa: E402

for kc in cfg.kubernetes_clusters:
    k8s = KubernetesCluster(f"k8s-{kc.name}", kc)
    pulumi.export(f"kubernetesCluster:{kc.name}", {"mode": k8s.mode, "workloadMonitoring": k8s.monitoring})

# gkeClusters: created or adopted GKE clusters (issue: GKE managed ML Diagnostics)
from components.gke_cluster import GkeCluster  # noqa: E402

for gc in cfg.gke_clusters:
    gke = GkeCluster(f"gke-{gc.name}", gc, cfg.google_api)
    pulumi.export(
        f"gkeCluster:{gc.name}",
        {"endpoint": gke.endpoint, "mode": gke.mode, "workloadMonitoring": gke.workload_monitoring},
    )

# azureMl: Azure ML extension on AKS / Arc (issue: Azure ML extension)
from components.azure_ml import AzureMlExtension  # noqa: E402

for am in cfg.azure_ml:
    pulumi.export(f"azureMl:{am.name}", AzureMlExtension(f"azureml-{am.name}", am).extension_id)

# modelDevelopmentClusters: Vertex AI Model Development Clusters (issue: Model Development Cluster)
from components.model_development import ModelDevelopmentCluster  # noqa: E402

for mc in cfg.model_development_clusters:
    mdc = ModelDevelopmentCluster(f"mdc-{mc.name}", mc, cfg.google_api)
    pulumi.export(f"modelDevelopmentCluster:{mc.name}", {"name": mdc.cluster_name, "state": mdc.state})
