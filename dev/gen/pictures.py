"""The Mermaid sources behind the pictures in docs/, and the graph's size figures.

    python -m dev.gen.pictures --write docs     # docs/plan-dev.mmd, docs/diff-sample.mmd (make pictures)
    python -m dev.gen.pictures --sizes          # Mermaid sizes: dev stack, sample diff, 500-target diffs

The sample diff is the dev stack against an edited copy of itself (a namespace added, one removed, a JAX
version bumped, the Azure extension renamed, a label changed), planned in-process, so it needs no git.
`make pictures` renders the sources with Mermaid in Chromium (dev/mermaid/render.mjs); a test fails when
the committed sources differ from what this module generates.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from mldiag.common import GITHUB_COMMENT_LIMIT, ROOT
from mldiag.report.graph_text import MERMAID_BUDGET, fitted
from program import stack_file

NS = "ml-diagnostics"
STACK = "urn:pulumi:dev::ml-diagnostics::"


def dev_report() -> dict[str, Any]:
    from mldiag.plan.cli import plan_stack

    return plan_stack("dev")


def edited_dev_config(doc: dict[str, Any]) -> dict[str, Any]:
    """The dev stack file with the sample change applied."""
    doc = copy.deepcopy(doc)
    cfg = doc["config"]
    lab = cfg[f"{NS}:kubernetesClusters"][0]
    lab["workloadNamespaces"] = [ns for ns in lab["workloadNamespaces"] if ns["name"] != "default"]
    gke = {t["name"]: t for t in cfg[f"{NS}:gkeClusters"]}
    gke["dev-train"]["workloadNamespaces"].append({"name": "ml-eval", "create": True})
    gke["legacy-train"]["manualInstall"]["jaxVersion"] = "0.8"
    cfg[f"{NS}:azureMl"][0]["extensionName"] = "azureml-poc2"
    cfg[f"{NS}:modelDevelopmentClusters"][0]["labels"]["team"] = "research"
    return doc


def sample_diff(base: dict[str, Any] | None = None) -> dict[str, Any]:
    from mldiag.diff import diff_plans
    from mldiag.plan.cli import plan_stack

    base = base or dev_report()
    doc = stack_file.read_document(ROOT / "stacks" / f"Pulumi.{base['stack']}.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.dev.yaml"
        path.write_text(yaml.safe_dump(edited_dev_config(doc)))
        head = plan_stack("dev", config_file=path)
    return diff_plans(base, head)


def sources(base: dict[str, Any] | None = None, diff: dict[str, Any] | None = None) -> dict[str, str]:
    """File name -> Mermaid source of each picture (from the given dev plan and sample diff, if any)."""
    base = base or dev_report()
    return {"plan-dev.mmd": fitted(base)[1], "diff-sample.mmd": fitted(diff or sample_diff(base))[1]}


def synthetic_plan(targets: int, image: str = "v2.1.0", skip: frozenset[int] = frozenset()) -> dict[str, Any]:
    """A plan of many self-managed clusters, each with a provider, cert-manager, webhook, Diagon and opt-in."""
    resources: list[dict[str, Any]] = []

    def add(type_: str, name: str, parent: str, custom: bool = True, **extra: Any) -> str:
        urn = f"{STACK}{parent.split('::')[2].split('$')[-1]}${type_}::{name}"
        resources.append(
            {
                "urn": urn,
                "type": type_,
                "name": name,
                "custom": custom,
                "parent": parent,
                "provider": extra.pop("provider", None),
                "dependencies": extra.pop("dependencies", []),
                "inputs": extra.pop("inputs", {}),
                "secretDigests": {},
                **extra,
            }
        )
        return urn

    root = f"{STACK}pulumi:pulumi:Stack::ml-diagnostics-dev"
    for i in range(targets):
        if i in skip:
            continue
        t = f"t{i:03d}"
        comp = add("mldiag:index:KubernetesCluster", t, root, custom=False)
        prov = add("pulumi:providers:kubernetes", f"{t}-provider", comp, inputs={"context": t})
        mldiag = add("mldiag:index:ClusterMlDiagnostics", f"{t}-mldiag", comp, custom=False)
        release = "kubernetes:helm.sh/v3:Release"
        cm = add(release, f"{t}-mldiag-cert-manager", mldiag, provider=prov, inputs={"name": "cert-manager"})
        inputs = {"name": "mldiagnostics-injection-webhook", "version": "0.5.0"}
        add(release, f"{t}-mldiag-webhook", mldiag, provider=prov, dependencies=[cm], inputs=inputs)
        ns = add("kubernetes:core/v1:Namespace", f"{t}-mldiag-diagon-ns", mldiag, provider=prov)
        spec = {"template": {"spec": {"containers": [{"image": f"diagon:{image}"}]}}}
        ds_inputs = {"kind": "DaemonSet", "spec": spec}
        add(
            "kubernetes:apps/v1:DaemonSet",
            f"{t}-mldiag-diagon",
            mldiag,
            provider=prov,
            dependencies=[ns],
            inputs=ds_inputs,
        )
    return {
        "project": NS,
        "stack": "dev",
        "resources": resources,
        "outputs": {},
        "policyViolations": [],
        "criticalPath": {"depth": 0, "urns": []},
    }


def synthetic_diffs(targets: int = 500) -> dict[str, dict[str, Any]]:
    """Two 500-target diffs: a few targets changed (one added, one deleted, one image bump), and all changed."""
    from mldiag.diff import diff_plans

    base = synthetic_plan(targets, skip=frozenset({targets - 1}))
    few = synthetic_plan(targets, skip=frozenset({3}))
    for r in few["resources"]:
        if r["name"] == "t007-mldiag-diagon":
            r["inputs"]["spec"]["template"]["spec"]["containers"][0]["image"] = "diagon:v2.2.0"
    return {
        "few targets changed": diff_plans(base, few, rules={}),
        "every target changed": diff_plans(base, synthetic_plan(targets, "v2.2.0"), rules={}),
    }


def sizes() -> list[str]:
    from mldiag.diff import render_markdown

    base = dev_report()
    cases = {"dev stack plan": base, "sample diff of the dev stack": sample_diff(base)}
    cases |= {f"500-target diff, {k}": v for k, v in synthetic_diffs().items()}
    lines = [
        f"Mermaid budget {MERMAID_BUDGET:,} chars per diagram; GitHub comment limit {GITHUB_COMMENT_LIMIT:,}"
    ]
    for name, report in cases.items():
        graph, text = fitted(report)
        comment = len(render_markdown(report)) if "summary" in report else None
        lines.append(
            f"{name}: {len(text):,} chars, {len(graph.edges)} edges, collapse level '{graph.level}'"
            + (f"; whole diff comment {comment:,} chars" if comment else "")
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dev.gen.pictures", description=__doc__.split("\n\n")[0])
    p.add_argument("--write", type=Path, metavar="DIR", help="write the .mmd sources into DIR")
    p.add_argument("--sizes", action="store_true", help="print the Mermaid size figures")
    args = p.parse_args(argv)
    if args.write:
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in sources().items():
            (args.write / name).write_text(text)
            print(f"wrote {args.write / name} ({len(text):,} chars)")
    if args.sizes:
        print("\n".join(sizes()))
    if not (args.write or args.sizes):
        p.error("give --write DIR and/or --sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
