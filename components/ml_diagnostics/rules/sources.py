"""Where each rule of the components' arguments comes from: the documents docs/constraints.md names
(`python -m dev.gen.constraints --write`). A field's rule is its type's (a closed set, a range, a nested Spec)
or one written here; a field the library leaves free says why. A new field without either fails the
generator's test, so no argument goes unaudited.

Keys are `<Spec class>.<field>` of the class that declares the field.
"""

from __future__ import annotations

from ml_diagnostics.cert_manager_schema import known_versions
from ml_diagnostics.compat import MANAGED_MIN_VERSION

GKE_API = "GKE API v1 (container.googleapis.com): projects.locations.clusters"
GKE_POOLS = "GKE API v1: projects.locations.clusters.nodePools (NodePool, NodeConfig, NodePoolAutoscaling)"
K8S_NAMES = "Kubernetes: object names and IDs (RFC 1123 label / subdomain), labels and selectors"
HELM = "Helm: chart repositories (`helm repo add` takes http(s)://, `helm install oci://...` an OCI registry)"
# The vendor documents, by title (README "The vendor documents").
GKE_DOC = (
    "Google Cloud, Configure ML Diagnostics on GKE or self-managed Kubernetes: the managed flag from "
    f"{MANAGED_MIN_VERSION}, the manual install's charts"
)
DIAGON_DOC = (
    "Google Cloud, Configure ML Diagnostics on GKE or self-managed Kubernetes: the Diagon DaemonSet manifest"
)
AML_DOC = (
    "Microsoft, Deploy Azure Machine Learning extension on AKS or Arc Kubernetes cluster: its configuration "
    "settings (az k8s-extension create ... --config)"
)
ARM_EXT = "ARM API: Microsoft.KubernetesConfiguration/extensions (2023-05-01)"
ARM_NAMES = "Azure: naming rules for Microsoft.Resources, Microsoft.ContainerService, Microsoft.Kubernetes"
MDC_API = "Vertex AI API v1beta1: projects.locations.modelDevelopmentClusters (magic-modules definition)"
GOOGLE_AUTH = "Google: IAM service account emails, Cloud Storage bucket names, project ids, regions and zones"
_KNOWN = known_versions()
CERT_MANAGER_SCHEMAS = (
    f"cert-manager chart's values.schema.json, {_KNOWN[0]} to {_KNOWN[-1]} ({len(_KNOWN)} releases), from "
    "cert-manager's Go modules by `python -m dev.gen.cert_manager_schemas --write` "
    "(components/ml_diagnostics/cert_manager_schema.json)"
)

SPEC_SOURCES: dict[str, str] = {
    "WorkloadNamespaceSpec": K8S_NAMES,
    "WorkloadOptInSpec": GKE_DOC,
    "CertManagerSpec": "cert-manager chart (jetstack): installCRDs before v1.15.0, crds.enabled after",
    "ChartSpec": GKE_DOC,
    "ConnectionOperatorSpec": GKE_DOC,
    "MlDiagnosticsManualSpec": GKE_DOC,
    "DiagonSpec": DIAGON_DOC,
    "RbacSubjectSpec": "Kubernetes RBAC: rbac.authorization.k8s.io/v1 Subject",
    "VerifyRbacSpec": "Kubernetes RBAC: rbac.authorization.k8s.io/v1 ClusterRole, RoleBinding",
    "InClusterSpec": GKE_DOC,
    "ClusterMlDiagnosticsSpec": GKE_DOC,
    "KubernetesClusterSpec": GKE_DOC,
    "GkeAutoscalingSpec": GKE_POOLS,
    "GkeTaintSpec": GKE_POOLS,
    "GkeGuestAcceleratorSpec": GKE_POOLS,
    "GkeNodePoolSpec": GKE_POOLS,
    "RetrySpec": "Google APIs: retrying long-running operations (exponential backoff); this library's bounds",
    "TargetGoogleApiSpec": GOOGLE_AUTH,
    "GoogleApiSpec": "Google APIs: service endpoints (https), emulators on the loopback",
    "GkeClusterRules": GKE_API,
    "GkeClusterSpec": GKE_API,
    "AzureClusterSpec": ARM_NAMES,
    "InferenceSpec": AML_DOC,
    "AzureMlExtensionRules": AML_DOC,
    "AzureMlExtensionSpec": ARM_EXT,
    "Network": MDC_API,
    "ReservationAffinity": MDC_API,
    "MachineSpec": MDC_API,
    "ScalingSpec": MDC_API,
    "BootDisk": MDC_API,
    "ConfidentialInstanceConfig": MDC_API,
    "NodePool": MDC_API,
    "Partition": MDC_API,
    "NodeSet": MDC_API,
    "SlurmSpec": MDC_API,
    "OrchestratorSpec": MDC_API,
    "RuntimeSpec": MDC_API,
    "TimeOfDay": MDC_API,
    "LustreExportConfig": MDC_API,
    "ClusterSpec": MDC_API,
    "ModelDevelopmentClusterSpec": MDC_API,
}

# (rule, source; "" = the Spec's) of the fields whose rule is more than their type.
FIELD_RULES: dict[str, tuple[str, str]] = {
    "WorkloadNamespaceSpec.name": ("a namespace name (RFC 1123 label, 1-63)", ""),
    "WorkloadNamespaceSpec.labels": (
        "label keys and values as Kubernetes takes them; not the opt-in label",
        "",
    ),
    "WorkloadOptInSpec.namespaces": ("each namespace once", ""),
    "CertManagerSpec.version": ("a semantic version; it picks the CRD values", ""),
    "CertManagerSpec.repository": ("an oci://, https:// or http:// URL", HELM),
    "CertManagerSpec.values": (
        "merged with the program's, what the chart version's values.schema.json allows: no unknown key, each "
        "value of its type (a version without a known schema, before v1.16.0 or newer than the data, is not "
        "checked; the plan says which)",
        CERT_MANAGER_SCHEMAS,
    ),
    "ChartSpec.chart": ("a chart name in `repository`, or a full oci:// URL", HELM),
    "ChartSpec.version": ("a semantic version", HELM),
    "ChartSpec.repository": ("an oci://, https:// or http:// URL", HELM),
    "ConnectionOperatorSpec.args": ("a non-empty list of flags (each starts with -)", ""),
    "MlDiagnosticsManualSpec.jax_version": ("a supported JAX version: 0.8.x, 0.9.x and later", ""),
    "MlDiagnosticsManualSpec.repository": ("an oci://, https:// or http:// URL", HELM),
    "DiagonSpec.namespace": (
        "RFC 1123 label; a system namespace only with create_namespace: false",
        K8S_NAMES,
    ),
    "DiagonSpec.image": ("an image reference (registry/name[:tag][@digest])", "OCI distribution: references"),
    "DiagonSpec.service_account": ("RFC 1123 label", K8S_NAMES),
    "DiagonSpec.gcp_service_account": ("a service account email", GOOGLE_AUTH),
    "DiagonSpec.accelerator_node_labels": ("label keys", K8S_NAMES),
    "DiagonSpec.node_selector": ("at least one label; keys and values as Kubernetes takes them", K8S_NAMES),
    "DiagonSpec.max_unavailable": (
        "a positive count or a percentage 1%-100%",
        "Kubernetes apps/v1 DaemonSet RollingUpdateDaemonSet.maxUnavailable",
    ),
    "RbacSubjectSpec.name": ("not empty; a ServiceAccount's a DNS subdomain", ""),
    "RbacSubjectSpec.namespace": ("required for, and only for, kind ServiceAccount; a namespace name", ""),
    "VerifyRbacSpec.subjects": ("at least one when enabled", ""),
    "VerifyRbacSpec.name": ("a DNS subdomain", K8S_NAMES),
    "InClusterSpec.workload_namespaces": ("each once; none the cluster's own parts create", ""),
    "ClusterMlDiagnosticsSpec.mode": (
        f"managed only on GKE from {MANAGED_MIN_VERSION}; auto needs the version",
        "",
    ),
    "ClusterMlDiagnosticsSpec.gke_version": ("a GKE version MAJOR.MINOR.PATCH-gke.BUILD", GKE_API),
    "KubernetesClusterSpec.mode": ("manual or auto (= manual): managed exists only on GKE", ""),
    "KubernetesClusterSpec.kubeconfig": (
        "a kubeconfig or `context`, or both (never the ambient default)",
        "",
    ),
    "GkeGuestAcceleratorSpec.type": ("a Compute Engine accelerator type name", GKE_POOLS),
    "GkeNodePoolSpec.name": ("1-40 lowercase letters, digits and '-', starting with a letter", GKE_POOLS),
    "GkeNodePoolSpec.machine_type": ("a Compute Engine machine type name", GKE_POOLS),
    "GkeNodePoolSpec.node_count": ("0-1,000 per zone; not with autoscaling", GKE_POOLS),
    "GkeNodePoolSpec.node_locations": ("zones of the cluster's region", GKE_POOLS),
    "GkeNodePoolSpec.disk_size_gb": ("10-65,536", GKE_POOLS),
    "GkeNodePoolSpec.disk_type": ("a Compute Engine disk type name", GKE_POOLS),
    "GkeNodePoolSpec.service_account": ("a service account email", GOOGLE_AUTH),
    "GkeNodePoolSpec.labels": ("Kubernetes labels, none with a prefix GKE or Kubernetes reserves", GKE_POOLS),
    "GkeNodePoolSpec.taints": ("keys and values as Kubernetes labels take them", K8S_NAMES),
    "GkeNodePoolSpec.guest_accelerator": ("not on TPU machine types", GKE_POOLS),
    "GkeNodePoolSpec.tpu_topology": ("only on TPU machine types; 2x4 or 4x4x4", GKE_POOLS),
    "GkeAutoscalingSpec.min_node_count": ("0-1,000 per zone", ""),
    "GkeAutoscalingSpec.max_node_count": ("1-1,000 per zone, at least min_node_count", ""),
    "TargetGoogleApiSpec.impersonate_service_account": ("a service account email", GOOGLE_AUTH),
    "GoogleApiSpec.endpoints": ("http(s):// URLs; plain http only on the loopback", ""),
    "GoogleApiSpec.emulator": ("needs loopback endpoints and no impersonation", ""),
    "GkeClusterRules.project": ("a project id: 6-30 lowercase letters, digits and '-'", GOOGLE_AUTH),
    "GkeClusterRules.location": ("a region or a zone Google lists", GOOGLE_AUTH),
    "GkeClusterRules.current_version": ("a GKE version; only (and required) for adopted clusters", GKE_API),
    "GkeClusterRules.min_master_version": ("a GKE version; required with mode auto when created", GKE_API),
    "GkeClusterRules.network": ("a network name or its resource path", GKE_API),
    "GkeClusterRules.subnetwork": ("a subnetwork name or its resource path", GKE_API),
    "GkeClusterRules.node_pools": ("at least one for a created cluster, only then; names unique", GKE_POOLS),
    "GkeClusterSpec.cluster_name": (
        "1-40 lowercase letters, digits and '-', starting with a letter",
        GKE_API,
    ),
    "AzureClusterSpec.subscription_id": ("a GUID", ARM_NAMES),
    "AzureClusterSpec.resource_group": (
        "1-90 of letters, digits, '_', '-', '.', '(' and ')', not ending '.'",
        "",
    ),
    "AzureClusterSpec.name": ("an AKS / connected cluster name; for arc it starts with a letter", ""),
    "AzureClusterSpec.location": ("an Azure region (display names taken)", ARM_NAMES),
    "AzureClusterSpec.node_count": ("at least 1 (router_ha needs 3)", AML_DOC),
    "AzureClusterSpec.tenant_id": ("a GUID", ARM_NAMES),
    "AzureClusterSpec.openshift": ("only for kind arc", AML_DOC),
    "InferenceSpec.router_service_type": ("LoadBalancer, NodePort or ClusterIP (any case)", ""),
    "InferenceSpec.ssl_cname": ("a DNS name", ""),
    "InferenceSpec.ssl_secret": ("a Kubernetes secret name", K8S_NAMES),
    "InferenceSpec.ssl_cert_pem": ("a PEM certificate", ""),
    "InferenceSpec.ssl_key_pem": ("a PEM private key", ""),
    "AzureMlExtensionSpec.extension_name": (
        "1-53 lowercase letters, digits and '-' (a Helm release name)",
        ARM_EXT,
    ),
    "AzureMlExtensionRules.node_selector": ("Kubernetes labels", K8S_NAMES),
    "AzureMlExtensionRules.version": (
        "an extension version; pins need auto_upgrade_minor_version: false",
        ARM_EXT,
    ),
    "AzureMlExtensionRules.release_train": ("a release train name such as stable or preview", ARM_EXT),
    "AzureMlExtensionRules.domain": ("a DNS name, no scheme, no wildcard", ""),
    "AzureMlExtensionRules.nginx_ingress_controller": ("an ingress class <domain>/<name>; only on AKS", ""),
    "AzureMlExtensionSpec.kubeconfig": ("not with aks_user_credentials; needs verify_rbac", ""),
    "AzureMlExtensionSpec.kubeconfig_context": ("only with kubeconfig", ""),
    "AzureMlExtensionSpec.aks_user_credentials": ("only for kind aks; not with kubeconfig", ""),
    "Network.network": ("projects/PROJECT/global/networks/NAME", ""),
    "Network.subnetwork": ("projects/PROJECT/regions/REGION/subnetworks/NAME", ""),
    "ReservationAffinity.values": ("required exactly with provisioning_model RESERVATION", ""),
    "MachineSpec.machine_type": ("a Compute Engine machine type name", ""),
    "MachineSpec.accelerator_count": ("at least 1; needs accelerator_type", ""),
    "ScalingSpec.max_node_count": ("at least min_node_count", ""),
    "NodePool.id": ("1-63 lowercase letters, digits or '-', starting with a letter; unique", ""),
    "NodePool.zone": ("a zone of the cluster's region", ""),
    "NodePool.labels": ("Google Cloud labels (keys 1-63 lowercase, values 0-63)", GOOGLE_AUTH),
    "Partition.id": ("1-30 lowercase letters or digits, starting with a letter; unique; kept on update", ""),
    "Partition.node_pool_ids": ("each a node pool id", ""),
    "Partition.config": ("no 'Default' key (default_partition_id says it)", ""),
    "NodeSet.node_pool_id": ("a node pool id, named by at most one node set", ""),
    "SlurmSpec.home_directory_storage": ("projects/PROJECT/locations/ZONE/instances/NAME", ""),
    "SlurmSpec.login_node_pool_id": ("a node pool id", ""),
    "SlurmSpec.default_partition_id": ("a partition id", ""),
    "SlurmSpec.scheduling": ("not with config (legacy)", ""),
    "SlurmSpec.accounting": ("not with config (legacy)", ""),
    "RuntimeSpec.service_account": ("a service account email", GOOGLE_AUTH),
    "LustreExportConfig.destination_bucket": ("a Cloud Storage bucket name, no gs://", GOOGLE_AUTH),
    "LustreExportConfig.days_of_week": ("each day at most once", ""),
    "LustreExportConfig.lustres": ("instances attached to a node pool, each once", ""),
    "ClusterSpec.project": ("a project id", GOOGLE_AUTH),
    "ClusterSpec.region": ("a region Google lists", GOOGLE_AUTH),
    "ClusterSpec.model_development_cluster_id": (
        "1-10 lowercase letters and digits, starting with a letter",
        "",
    ),
    "ClusterSpec.display_name": ("at most 128 characters", ""),
    "ClusterSpec.labels": ("Google Cloud labels", GOOGLE_AUTH),
}

# Fields left free, and why.
FREE: dict[str, str] = {
    "ChartSpec.values": "the chart's own values: Helm and the chart check them at install",
    "ClusterMlDiagnosticsSpec.kubeconfig": "an opaque secret; a broken one fails at the provider's first call",
    "ClusterMlDiagnosticsSpec.context": "a name inside the kubeconfig, known only to it",
    "KubernetesClusterSpec.context": "a name inside the kubeconfig, known only to it",
    "GkeTaintSpec.key": "checked with the pool (taints)",
    "GkeTaintSpec.value": "checked with the pool (taints)",
    "TargetGoogleApiSpec.quota_project": "a project id or number the caller may bill; Google refuses a wrong one",
    "GkeClusterSpec.previous_mode": "written by the program from the last deployment's outputs, not by people",
    "MachineSpec.accelerator_type": "new accelerator types appear without notice; the API checks it",
    "NodePool.node_image": "images are per machine type and change; the API checks it",
    "NodePool.flex_start_max_duration": "a protobuf Duration the API parses (e.g. 3600s)",
    "NodePool.filestores": "Filestore instances by path; the API checks they exist",
    "NodePool.lustres": "Managed Lustre instances by path; the API checks they exist",
    "NodePool.startup_script": "a script run on the nodes: any text",
    "SlurmSpec.config": "slurm.conf settings: Slurm checks them",
    "SlurmSpec.prolog_bash_scripts": "scripts: any text",
    "SlurmSpec.epilog_bash_scripts": "scripts: any text",
    "NodeSet.config": "slurm.conf settings: Slurm checks them",
}
