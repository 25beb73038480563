"""Per-cluster member stacks (program/fleet_member.py): a member's config is its environment's environment-wide
keys, its one target and its secrets by path, plus `fleetMember`; the program gives that target the resources,
names and inputs the environment stack gives it, validating the environment again only when it changed since
the member was derived. The environment stacks themselves are untouched."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag.common import ROOT
from mldiag.fleet import planner
from mldiag.fleet.executor import Workspaces
from mldiag.plan.cli import plan_stack
from program import fleet_member
from program.config import ConfigError
from program.kinds.table import BY_KEY, KINDS

PROD = planner.load(ROOT / "fleet" / "prod.yaml", ROOT)


def normalized(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    def urn(u: str | None) -> str | None:
        if not u:
            return u
        u = re.sub(r"^urn:pulumi:[^:]+::", "urn:pulumi:STACK::", u)
        u = re.sub(r"pulumi:pulumi:Stack::ml-diagnostics-.*$", "pulumi:pulumi:Stack::ROOT", u)
        # the program's StackReference to its own stack (program/previous_deployment.py)
        return re.sub(
            r"pulumi:pulumi:StackReference::organization/ml-diagnostics/.*$", "StackReference::SELF", u
        )

    out = {}
    for r in report["resources"]:
        if r["type"] in ("pulumi:pulumi:Stack", "pulumi:pulumi:StackReference"):
            continue
        out[(r["type"], r["name"])] = {
            "urn": urn(r["urn"]),
            "parent": urn(r["parent"]),
            "provider": urn(r["provider"]),
            "dependencies": sorted(urn(d) or "" for d in r["dependencies"]),
            "inputs": r["inputs"],
            "protect": r["protect"],
            "retainOnDelete": r["retainOnDelete"],
        }
    return out


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = Workspaces(PROD, ROOT, tmp_path_factory.mktemp("fleet-work"))
    return {m.stack: work.derive(m) / f"Pulumi.{m.stack}.yaml" for m in PROD.members}


def test_each_member_plans_exactly_its_targets_resources_as_the_environment_does(
    derived: dict[str, Path],
) -> None:
    env = normalized(plan_stack("prod", skip_policies=True))
    seen: set[tuple[str, str]] = set()
    for m in PROD.members:
        report = plan_stack(m.stack, config_file=derived[m.stack], skip_policies=True)
        mine = normalized(report)
        assert mine, m.stack
        assert {k: env[k] for k in mine} == mine, m.stack  # same URNs (but the stack), parents, inputs
        assert all(name.startswith(f"{m.prefix}-{m.name}") for _, name in mine), m.stack
        assert report["outputs"]["environment"] == "prod"
        assert [k for k in report["outputs"] if ":" in k] == [f"{BY_KEY[m.kind].export}:{m.name}"]
        seen |= set(mine)
    assert seen == set(env)  # the members together are the environment


def test_the_member_stack_file_holds_the_environment_wide_keys_its_target_and_its_secrets_by_path(
    derived: dict[str, Path],
) -> None:
    env = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    path = derived["prod.k8s-onprem-prod"]
    member = yaml.safe_load(path.read_text())
    assert member["encryptionsalt"] == env["encryptionsalt"]
    (target,) = env["config"]["ml-diagnostics:kubernetesClusters"]
    kubeconfig = target.pop("kubeconfig")
    assert member["config"] == {
        "ml-diagnostics:environment": "prod",
        "ml-diagnostics:kubernetesClusters": [target],
        # the secret leaf, as the environment's ciphertext, under a key of its own
        "ml-diagnostics:fleetSecret.kubernetesClusters[0].kubeconfig": kubeconfig,
        fleet_member.KEY: {
            "environmentStack": "prod",
            "kind": "kubernetesClusters",
            "name": "onprem-prod",
            "index": 0,
            "validated": fleet_member.environment_digest(ROOT, "prod"),
        },
    }
    aks = yaml.safe_load(derived["prod.azureml-aks-prod"].read_text())["config"]
    assert sorted(k for k in aks if "fleetSecret" in k) == [
        "ml-diagnostics:fleetSecret.azureMl[0].inference.sslCertPem",
        "ml-diagnostics:fleetSecret.azureMl[0].inference.sslKeyPem",
    ]
    assert path.read_text().startswith("# Derived by `mldiag fleet` from stacks/Pulumi.prod.yaml")
    project = yaml.safe_load((path.parent / "Pulumi.yaml").read_text())
    assert (path.parent / project["main"]).resolve() == ROOT
    assert project["runtime"]["options"]["virtualenv"] == str((ROOT / ".venv").resolve())


def scratch_environment(root: Path, n: int, bad: str = "") -> Path:
    """A project of N kubernetes targets (the real program, linked); `bad`: one target's context value."""
    for rel in fleet_member.PROGRAM_PATHS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(ROOT / rel)
    (root / "stacks").mkdir()
    targets = [
        {
            "name": f"c{i}",
            "context": bad if (bad and i == n - 1) else f"ctx-{i}",
            "manualInstall": {"jaxVersion": "0.8"},
        }
        for i in range(n)
    ]
    doc = {"config": {"ml-diagnostics:environment": "dev", "ml-diagnostics:kubernetesClusters": targets}}
    path = root / "stacks" / "Pulumi.lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def member_raw(root: Path, name: str) -> dict[str, Any]:
    """The member's config as the engine passes it (objects as JSON text)."""
    env = planner.read_environment(root, "lab")
    (t,) = [t for t in env.targets if t.name == name]
    record = fleet_member.FleetMember("lab", t.kind, t.name, t.index, env.digest)
    return {
        k: v if isinstance(v, str) else json.dumps(v)
        for k, v in fleet_member.derive(env.written, record).items()
    }


def test_a_members_config_does_not_grow_with_its_environment(tmp_path: Path) -> None:
    scratch_environment(tmp_path / "small", 3)
    scratch_environment(tmp_path / "large", 300)
    small, large = member_raw(tmp_path / "small", "c1"), member_raw(tmp_path / "large", "c1")
    assert {k: v for k, v in small.items() if k != fleet_member.KEY} == {
        k: v for k, v in large.items() if k != fleet_member.KEY
    }
    assert len(json.dumps(large)) < 1024


def test_a_member_validates_its_own_config_while_its_environment_is_the_one_it_was_derived_from(
    tmp_path: Path,
) -> None:
    from program.config import from_raw

    scratch_environment(tmp_path, 5)
    raw = member_raw(tmp_path, "c3")
    cfg = from_raw(raw, [], "lab.k8s-c3", project_dir=tmp_path)
    assert [t.name for t in cfg.kubernetes_clusters] == ["c3"]
    # a problem of its own config is reported where the environment's stack file has it
    broken = json.loads(raw["ml-diagnostics:kubernetesClusters"])
    broken[0]["manualInstall"]["jaxVersion"] = "0.1"
    raw["ml-diagnostics:kubernetesClusters"] = json.dumps(broken)
    with pytest.raises(ConfigError) as e:
        from_raw(raw, [], "lab.k8s-c3", project_dir=tmp_path)
    assert all(p.startswith("ml-diagnostics:kubernetesClusters[3].manualInstall") for p in e.value.problems)


def test_a_member_of_a_changed_environment_reports_the_environments_problems_or_that_it_is_out_of_date(
    tmp_path: Path,
) -> None:
    from program.config import from_raw

    env_file = scratch_environment(tmp_path, 4)
    raw = member_raw(tmp_path, "c1")
    # the environment changed after the member was derived, and is now invalid: its problems, as `pulumi up -s
    # lab` reports them
    env_file.write_text(env_file.read_text().replace("context: ctx-3", "context: ''"))
    with pytest.raises(ConfigError) as e:
        from_raw(raw, [], "lab.k8s-c1", project_dir=tmp_path)
    with pytest.raises(ConfigError) as whole:
        from_raw(stack_file_config(env_file), [], "lab", project_dir=tmp_path)
    assert e.value.problems == whole.value.problems
    assert e.value.problems[0].startswith("ml-diagnostics:kubernetesClusters[3].")
    # valid again, but not what the member was derived from
    env_file.write_text(env_file.read_text().replace("context: ''", "context: ctx-new"))
    with pytest.raises(ConfigError) as e:
        from_raw(raw, [], "lab.k8s-c1", project_dir=tmp_path)
    assert e.value.problems == [
        "ml-diagnostics:fleetMember.validated: the program or the environment's stack file changed since it was "
        "derived (stacks/Pulumi.lab.yaml): this member's config is out of date; derive it again (`mldiag fleet "
        "run` does before every update; for the Kubernetes operator, `mldiag fleet pko` writes the objects again)"
    ]
    # derived again, it validates alone
    assert from_raw(member_raw(tmp_path, "c1"), [], "lab.k8s-c1", project_dir=tmp_path)


def stack_file_config(path: Path) -> dict[str, Any]:
    from program.stack_file import offline_config

    return offline_config(path, "ml-diagnostics")[0]


@pytest.mark.parametrize(
    "path",
    [
        ("kubernetesClusters", 0, "kubeconfig"),
        ("azureMl", 2, "values", "a.b", 3, 'x"y'),
        ("googleApi", "key"),
    ],
)
def test_a_secret_leafs_key_names_its_path_and_reads_back(path: tuple[Any, ...]) -> None:
    assert fleet_member.parse_path(fleet_member.path_text(path)) == path


def test_secret_keys_are_put_back_at_their_paths_or_refused_with_their_key() -> None:
    member = {"environmentStack": "lab", "kind": "kubernetesClusters", "name": "a"}
    target = {"name": "a", "context": "x", "manualInstall": {"jaxVersion": "0.8"}}
    raw = {
        "ml-diagnostics:kubernetesClusters": json.dumps([target]),
        "ml-diagnostics:fleetSecret.kubernetesClusters[0].kubeconfig": "apiVersion: v1",
        fleet_member.KEY: json.dumps(member),
    }
    rest, found, paths = fleet_member.take(raw)
    assert found == fleet_member.FleetMember("lab", "kubernetesClusters", "a")
    assert rest == {"ml-diagnostics:kubernetesClusters": [{**target, "kubeconfig": "apiVersion: v1"}]}
    assert paths == {("ml-diagnostics:kubernetesClusters", 0, "kubeconfig")}
    with pytest.raises(ConfigError) as e:
        fleet_member.take({**raw, "ml-diagnostics:fleetSecret.kubernetesClusters[4].kubeconfig": "x"})
    assert e.value.problems == [
        "ml-diagnostics:fleetSecret.kubernetesClusters[4].kubeconfig: the member's config has no place "
        "kubernetesClusters[4].kubeconfig"
    ]
    with pytest.raises(ConfigError) as e:
        fleet_member.take({"ml-diagnostics:fleetSecret.kubernetesClusters[0].kubeconfig": "x"})
    assert e.value.problems == [
        "ml-diagnostics:fleetSecret.kubernetesClusters[0].kubeconfig: only a fleet member's config (with "
        "ml-diagnostics:fleetMember) has it"
    ]


def config_of(member: Any) -> dict[str, Any]:
    return {"ml-diagnostics:environment": "dev", fleet_member.KEY: json.dumps(member)}


@pytest.mark.parametrize(
    ("member", "problems"),
    [
        (
            {"environmentStack": "../etc", "kind": "aks", "name": "Lab", "extra": 1},
            [
                "ml-diagnostics:fleetMember.extra: unknown key; allowed keys: environmentStack, kind, name, index, "
                "validated",
            ],
        ),
        (
            {"environmentStack": "../etc", "kind": "aks", "name": "Lab"},
            [
                "ml-diagnostics:fleetMember.environmentStack: '../etc' is not a stack name (letters, digits, '_', "
                "'.', '-'; at most 100)",
                "ml-diagnostics:fleetMember.kind: must be one of " + ", ".join(k.key for k in KINDS),
                "ml-diagnostics:fleetMember.name: 'Lab' is not allowed: must be 1-40 lowercase letters, digits and "
                "'-', starting with a letter and not ending with '-'",
            ],
        ),
        (
            {"kind": "azureMl", "name": 3},
            [
                "ml-diagnostics:fleetMember.environmentStack: required key is missing",
                "ml-diagnostics:fleetMember.name: must be a string",
            ],
        ),
        ("prod", ["ml-diagnostics:fleetMember: must be a map with environmentStack, kind, name"]),
    ],
)
def test_a_bad_member_key_is_a_config_error_with_its_key_path(member: Any, problems: list[str]) -> None:
    with pytest.raises(ConfigError) as e:
        fleet_member.take(config_of(member))
    assert e.value.problems == problems


def test_a_member_whose_target_is_gone_says_which_there_are() -> None:
    from program.config import parse

    raw, member, _ = fleet_member.take(
        {
            "ml-diagnostics:environment": "dev",
            "ml-diagnostics:kubernetesClusters": [
                {"name": "lab", "context": "lab", "manualInstall": {"jaxVersion": "0.8"}}
            ],
            fleet_member.KEY: {"environmentStack": "dev", "kind": "kubernetesClusters", "name": "gone"},
        }
    )
    assert member is not None
    with pytest.raises(ConfigError) as e:
        fleet_member.keep(parse(raw), member)
    assert e.value.problems == [
        "ml-diagnostics:fleetMember.name: the config has no kubernetesClusters target 'gone' (its kubernetesClusters: "
        "lab); rerun `mldiag fleet` to derive the member stack again"
    ]


def test_without_the_key_nothing_changes() -> None:
    raw = {"ml-diagnostics:environment": "dev"}
    assert fleet_member.take(raw) == (raw, None, set())


def test_a_lock_conflict_says_who_holds_the_lock() -> None:
    from mldiag.fleet.executor import _lock_text

    # what `pulumi up` of a local-backend stack says when another update holds its lock
    error = Exception(
        "\n code: 1\n stdout: \n stderr: error: the stack is currently locked by 1 lock(s). Either wait for the "
        "other process(es) to end or delete the lock file with `pulumi cancel`.\n  file:///state/.pulumi/locks/"
        "organization/ml-diagnostics/prod.k8s-a/x.json: created by ci@ci-runner-7 (pid 4242) at 2026-01-01T00:00:00Z"
    )
    assert _lock_text(error) == (
        "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete "
        "the lock file with `pulumi cancel`.; held by ci@ci-runner-7 (pid 4242) at 2026-01-01T00:00:00Z"
    )


def test_secrets_bound_to_one_stack_cannot_be_shared_by_its_members(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    stack = tmp_path / "stacks" / "Pulumi.team.yaml"
    # a Pulumi Cloud ciphertext: no encryptionsalt, no secretsprovider
    stack.write_text(
        "config:\n  ml-diagnostics:environment: dev\n  ml-diagnostics:kubernetesClusters:\n"
        "    - name: lab\n      kubeconfig:\n        secure: AAABAHNlY3JldA==\n"
    )
    plan = planner.Plan(tmp_path / "fleet.yaml", "team", "dev", None, True, ())
    with pytest.raises(planner.EnvironmentError) as e:
        Workspaces(plan, tmp_path)
    assert str(e.value) == (
        f"{stack}: it has `secure:` values but neither encryptionsalt nor secretsprovider, so its secrets are the "
        "Pulumi Cloud provider's, bound to that one stack: member stacks cannot share them. Give the stack a "
        "passphrase or cloud KMS provider (`pulumi stack change-secrets-provider`)"
    )


# -- one way per environment: the environment stack's own `pulumi up` refuses what member stacks deploy ------------
class _Targets:
    def __init__(self, names: list[str]) -> None:
        self.names = names

    def targets(self, kind: Any) -> list[Any]:
        return [type("T", (), {"name": n})() for n in self.names] if kind.key == "kubernetesClusters" else []


class _Outputs:
    def __init__(self, outputs: dict[str, Any] | None = None, error: str = "") -> None:
        self.outputs, self.error = outputs, error
        self.asked: list[Any] = []

    def __call__(self, token: str, args: dict[str, Any]) -> Any:
        self.asked.append((token, args))
        if self.error:
            raise Exception(f"invoke of {token} failed: {self.error}")  # noqa: TRY002 - what the SDK raises
        return type("R", (), {"value": {"name": args["name"], "outputs": self.outputs}})()


@pytest.fixture
def runtime() -> Any:
    import pulumi

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            return args.name, {}

        def call(self, args: Any) -> tuple[dict[str, Any], list[Any]]:
            return {}, []

    def set_up(preview: bool) -> None:
        pulumi.runtime.set_mocks(
            Mocks(), project="ml-diagnostics", stack="prod", preview=preview, organization="organization"
        )

    return set_up


def test_an_environment_whose_targets_its_member_stacks_deploy_refuses_up_and_warns_in_preview(
    runtime: Any,
) -> None:
    import pulumi

    mark = {"fleet": {"members": ["kubernetesClusters/onprem-prod"], "fleet": "fleet/prod.yaml"}}
    read = _Outputs(mark)
    runtime(False)
    with pytest.raises(pulumi.RunError) as e:
        fleet_member.one_way(_Targets(["onprem-prod", "lab"]), read)
    assert str(e.value) == (
        "environment prod is deployed by its fleet's member stacks (kubernetesClusters/onprem-prod: `mldiag fleet run "
        "fleet/prod.yaml`); `pulumi up -s prod` would manage the same clusters a second time. Roll it out with "
        "`mldiag fleet run fleet/prod.yaml` (docs/fleet.md, 'One way per environment')"
    )
    assert read.asked == [
        ("pulumi:pulumi:readStackOutputs", {"name": "organization/ml-diagnostics/prod.fleet"})
    ]
    runtime(True)
    fleet_member.one_way(_Targets(["onprem-prod"]), read)  # a preview: a warning, not an error
    fleet_member.one_way(_Targets(["lab"]), read)  # no target shared with the members: nothing to refuse


def test_no_fleet_or_the_offline_plan_leave_the_environment_as_it_is(runtime: Any) -> None:
    import pulumi

    runtime(False)
    fleet_member.one_way(
        _Targets(["onprem-prod"]), _Outputs(error='unknown stack "organization/ml-diagnostics/prod.fleet"')
    )
    fleet_member.one_way(
        _Targets(["onprem-prod"]), _Outputs({"lease": None})
    )  # a lease stack, no member deployed
    with pytest.raises(
        pulumi.RunError, match=r"^the lease stack organization/ml-diagnostics/prod\.fleet of this "
    ):
        fleet_member.one_way(_Targets(["onprem-prod"]), _Outputs(error="backend unreachable"))
    fleet_member.one_way(_Targets(["onprem-prod"]))  # the mock runtime (the offline plan): no read at all
