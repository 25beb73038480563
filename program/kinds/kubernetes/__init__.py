"""The kubernetesClusters kind: self-managed Kubernetes clusters (always the manual install)."""

from __future__ import annotations

import hashlib

from ml_diagnostics import compat
from program import in_cluster
from program.clouds.kubernetes import KUBERNETES
from program.kinds.base import Claim, KindDocs, TargetKind
from program.kinds.kubernetes.model import KubernetesClusterTarget


def claims(t: KubernetesClusterTarget) -> list[Claim]:
    # Two targets on one context of one kubeconfig (the ambient one, or the same secret text) are one cluster.
    if t.kubeconfig is None:
        if not t.context:
            return []
        return [(("k8s-context", t.context), f"Kubernetes cluster of context {t.context!r}", ".context")]
    # The secret's digest only identifies it: neither it nor the text is ever printed.
    digest = hashlib.sha256(t.kubeconfig.get_secret_value().encode()).hexdigest()
    context = repr(t.context) if t.context else "its current context"
    return [
        (
            ("k8s-kubeconfig", digest, t.context),
            f"Kubernetes cluster of the same kubeconfig and {context}",
            ".kubeconfig",
        )
    ]


def generated_names(t: KubernetesClusterTarget) -> list[tuple[str, str]]:
    return [
        (f"namespace:k8s-{t.name}-mldiag-opt-in-{ns.name}", f"workloadNamespaces[{j}].name")
        for j, ns in enumerate(t.workload_namespaces)
    ]


# The in-cluster install's texts, which the gkeClusters kind lists too (GKE's manual path is this install):
# a text two kinds list is written once, where the later one puts it (KindDocs).
IN_CLUSTER_SUMMARY = (
    "**`kubernetesClusters`** (and GKE on the manual path): cert-manager (v1.13.0, CRD values by version),\n"
    "`mldiagnostics-injection-webhook` 0.25.0 and `mldiagnostics-connection-operator` (chart and args by JAX\n"
    "version) as Helm v3 releases with the vendor's names; `workloadNamespaces` get the opt-in label (a\n"
    "`Namespace`, or a server-side-apply patch that leaves other labels alone); `diagon` deploys the vendor's\n"
    "DaemonSet with the image from config (a change is `pulumi up`, never a drifting `kubectl set image`), on\n"
    "GKE's accelerator nodes by default, on every node of a self-managed cluster. The namespace it creates for\n"
    "Diagon carries the Pod Security labels that admit a privileged `hostNetwork` daemon."
)
MANUAL_CHECKS = (
    "manual mode (`kubernetesClusters`; `gkeClusters` in manual mode)",
    "`helm.<release>`: cert-manager (when the stack installs it), injection-webhook and "
    "connection-operator deployed per Helm's own release records (Secrets `helm.sh/release.v1`) at the "
    "configured chart version; `workloads.<release>`: their Deployments available (a pre-installed "
    "cert-manager: its controller/webhook/cainjector Deployments); `webhook.ca-injected`: the "
    "injection-webhook's MutatingWebhookConfiguration exists and cert-manager injected its CA",
)
CLUSTER_CHECKS = (
    "every cluster",
    "`namespace.<name>`: each workload namespace carries `managed-mldiagnostics-gke=true`",
)
DIAGON_CHECKS = (
    "Diagon",
    "`diagon.scheduled`: desired pods > 0 (zero names the DaemonSet's node selection to check); "
    "`diagon.ready`: all pods ready (not-ready ones named with their reason; each node the DaemonSet selects "
    "without a ready pod named with its Ready condition or the scheduler's message); `diagon.image`: the "
    "running image is the configured one; `diagon.logs`: the recent log (`--log-lines`, 500) of a sample of "
    "10 ready pods and of every pod not ready (`--all-logs`: every pod; the report says how many of how many) "
    "holds `Stream established.`, `Received successful DaemonRegistrationResponse from backend` and "
    "`Sending DaemonHeartbeatRequest`. Pods and nodes are read with paginated lists: the requests do not "
    "grow with the nodes",
)

# The Diagon part of a cluster kind's `mldiag new-stack` example: its image pinned, which staging and prod
# require (policy k8s-images-pinned), to the newest release the vendor docs name.
DIAGON_EXAMPLE = (
    "    diagon:                              # the Diagon profiling daemon\n"
    "      enabled: true\n"
    f'      image: {compat.DIAGON_RELEASED_IMAGE}   # pinned: README "Upgrading"\n'
)

DOCS = KindDocs(
    summary=(IN_CLUSTER_SUMMARY,),
    checks=(MANUAL_CHECKS, CLUSTER_CHECKS, DIAGON_CHECKS),
    removed=(
        "its Helm releases and the Diagon DaemonSet are uninstalled; namespaces it created are deleted, "
        "namespaces it only labelled (`create: false`) lose the opt-in label and nothing else; the cluster "
        "is never touched"
    ),
    example=(
        "{project}:kubernetesClusters:            # self-managed Kubernetes (the manual install)\n"
        "  - name: lab\n"
        "    context: lab-admin                   # of your kubeconfig; or instead a kubeconfig secret:\n"
        "                                         #   mldiag secrets set STACK 'kubernetesClusters[0].kubeconfig' < FILE\n"
        "    workloadNamespaces: [{name: ai-workloads, create: true}]\n"
        '    manualInstall: {jaxVersion: "0.8"}\n'
        f"{DIAGON_EXAMPLE}"
    ),
)


KIND = TargetKind(
    order=10,
    key="kubernetesClusters",
    model=KubernetesClusterTarget,
    description="Self-managed Kubernetes clusters (always the manual install).",
    prefix="k8s",
    section="in_cluster",  # the in-cluster part's section, which gkeClusters' manual path writes too
    cloud=KUBERNETES,
    costly=in_cluster.COSTLY,
    force_new=in_cluster.FORCE_NEW,
    claims=claims,
    generated_names=generated_names,
    docs=DOCS,
)
