"""ml-diagnostics: load and validate the stack config once, build one component per target."""

import pulumi

from components import config, lifecycle

cfg = config.load()
pulumi.export("environment", cfg.environment)

# kubernetesClusters: self-managed Kubernetes (issue: ML Diagnostics on Kubernetes)
from components.kubernetes_cluster import KubernetesCluster  # noqa: E402

for kc in cfg.kubernetes_clusters:
    k8s = KubernetesCluster(f"k8s-{kc.name}", kc, lifecycle.rename_options("k8s", kc.previous_name))
    pulumi.export(f"kubernetesCluster:{kc.name}", {"mode": k8s.mode, "workloadMonitoring": k8s.monitoring})

# gkeClusters: created or adopted GKE clusters (issue: GKE managed ML Diagnostics)
from components.gke_cluster import GkeCluster  # noqa: E402
from components.previous_deployment import PreviousDeployment  # noqa: E402

previous = PreviousDeployment()
pending_steps: list[pulumi.Output[str | None]] = []
for gc in cfg.gke_clusters:
    # A managed target reads what the last deployment exported for it (under its old name after a rename):
    # a switch from manual takes two updates (components/gke_cluster.py, managed_flag).
    managed = gc.resolved_mode == "managed"
    gke = GkeCluster(
        f"gke-{gc.name}",
        gc,
        cfg.google_api.for_target(gc.google_api),
        lifecycle.rename_options("gke", gc.previous_name),
        # Created clusters are expensive and stateful: protected in prod unless the config says otherwise.
        deletion_policy=lifecycle.effective_policy(gc.deletion_policy, cfg.environment, expensive=gc.create),
        previous_export=previous.output(f"gkeCluster:{gc.previous_name or gc.name}") if managed else None,
    )
    pending_steps.append(gke.pending_step)
    pulumi.export(
        f"gkeCluster:{gc.name}",
        {
            "endpoint": gke.endpoint,
            "mode": gke.mode,
            "managedFlag": gke.managed_flag_on,
            "workloadMonitoring": gke.workload_monitoring,
        },
    )

# azureMl: Azure ML extension on AKS / Arc (issue: Azure ML extension)
from components.azure_ml import AzureMlExtension  # noqa: E402

for am in cfg.azure_ml:
    ext = AzureMlExtension(f"azureml-{am.name}", am, lifecycle.rename_options("azureml", am.previous_name))
    pulumi.export(f"azureMl:{am.name}", ext.extension_id)

# modelDevelopmentClusters: Vertex AI Model Development Clusters (issue: Model Development Cluster)
from components.model_development import ModelDevelopmentCluster  # noqa: E402

for mc in cfg.model_development_clusters:
    # deletionPolicy unset: PREVENT (protect) in prod. Protect on the component reaches the cluster resource.
    explicit = mc.deletion_policy if "deletion_policy" in mc.model_fields_set else None
    policy = lifecycle.effective_policy(explicit, cfg.environment, expensive=True)
    opts = pulumi.ResourceOptions.merge(
        lifecycle.rename_options("mdc", mc.previous_name),
        pulumi.ResourceOptions(protect=True) if policy == "PREVENT" else None,
    )
    mdc = ModelDevelopmentCluster(f"mdc-{mc.name}", mc, cfg.google_api.for_target(mc.google_api), opts)
    pulumi.export(f"modelDevelopmentCluster:{mc.name}", {"name": mdc.cluster_name, "state": mdc.state})

# Steps a later `pulumi up` still has to take (empty when this update completes the config).
pulumi.export("pendingSteps", pulumi.Output.all(*pending_steps).apply(lambda steps: [s for s in steps if s]))
