"""Every rule of the ml-diagnostics policy pack, grouped by concern (see policies/README.md)."""

from .rules import azure_ml, gke, helm, images, kubernetes, model_development

POLICIES = [
    # Kubernetes workloads
    images.images_pinned,
    images.images_allowed_registries,
    kubernetes.privileged_only_diagon,
    kubernetes.daemonset_memory_limit,
    # Helm releases
    helm.chart_version_pinned,
    helm.allowed_repositories,
    helm.cert_manager_crds,
    helm.connection_operator_jax,
    helm.requires_cert_manager,
    # GKE
    gke.managed_min_version,
    gke.managed_explicit,
    gke.no_manual_when_managed,
    # Azure ML extension and AKS
    azure_ml.workloads_enabled,
    azure_ml.inference_https,
    azure_ml.secrets_protected,
    azure_ml.cluster_scope,
    azure_ml.arc_relay,
    azure_ml.allowed_subscriptions,
    azure_ml.aks_identity,
    # Model Development Cluster
    model_development.node_pool_references,
    model_development.slurm_config_exclusive,
    model_development.node_images_pinned,
    model_development.deletion_policy,
]
