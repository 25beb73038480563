"""Every rule of the ml-diagnostics policy pack, grouped by concern (see policies/README.md)."""

from .rules import (
    aks,
    azure_ml,
    azure_ml_settings,
    diagnostics,
    gke,
    helm,
    helm_mldiagnostics,
    images,
    kubernetes,
    model_development,
    pod_security,
)

POLICIES = [
    # Kubernetes workloads
    images.images_pinned,
    images.images_allowed_registries,
    kubernetes.privileged_only_diagon,
    kubernetes.daemonset_memory_limit,
    diagnostics.diagon_no_cpu_limit,
    diagnostics.host_network_dns_policy,
    diagnostics.opt_in_label_value,
    pod_security.diagon_pod_security,
    # Helm releases
    helm.chart_version_pinned,
    helm.allowed_repositories,
    helm.cert_manager_crds,
    helm.installcrds_deprecated,
    helm_mldiagnostics.connection_operator_jax,
    helm_mldiagnostics.requires_cert_manager,
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
    azure_ml.version_pinned,
    azure_ml_settings.allowed_subscriptions,
    aks.aks_identity,
    azure_ml_settings.setting_keys_case,
    azure_ml_settings.internal_lb_aks_only,
    azure_ml_settings.inference_router_ha,
    aks.no_pod_identity,
    aks.node_size_minimum,
    aks.authorized_ip_ranges,
    # Model Development Cluster
    model_development.node_pool_references,
    model_development.slurm_config_exclusive,
    model_development.node_images_pinned,
    model_development.deletion_policy,
]
