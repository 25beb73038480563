// ML Diagnostics on a self-managed cluster you already have, from TypeScript.
//   pulumi package add ../../components    (generates sdks/mldiag; package.json names it: file:sdks/mldiag)
import * as pulumi from "@pulumi/pulumi";
import * as kubernetes from "@pulumi/kubernetes";
import * as mldiag from "@pulumi/mldiag";

const config = new pulumi.Config();
const cluster = new kubernetes.Provider("cluster", { kubeconfig: config.requireSecret("kubeconfig") });

const diagnostics = new mldiag.ClusterMlDiagnostics(
    "ml-diagnostics",
    {
        mode: mldiag.MlDiagnosticsMode.MANUAL,
        selfManaged: true,
        workloadNamespaces: [{ name: "ai-workloads", create: true }],
        manualInstall: { jaxVersion: "0.8" },
        diagon: { image: "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0" },
    },
    { providers: [cluster] },
);

export const mode = diagnostics.mode;
export const workloadNamespaces = diagnostics.workloadNamespaces;
