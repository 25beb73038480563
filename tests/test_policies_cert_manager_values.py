"""helm-cert-manager-values-schema: a cert-manager Helm release made by any program, its values against its
chart version's values.schema.json (the pack's own copy of the schemas), driven through the pack over the
Analyzer protocol. Advisory in dev and staging, mandatory in prod; a version without a known schema passes."""

from __future__ import annotations

from tests.fixtures.policies import ENVS, EXPECTED, UNKNOWN_STRING, body, res
from tests.fixtures.policies import cert_manager as release
from tests.fixtures.policy_corpus import case, not_expressible

RELEASE = "kubernetes:helm.sh/v3:Release"
CHART = "kubernetes:helm.sh/v4:Chart"
RULE = "helm-cert-manager-values-schema"
LABEL = "Helm release 'cert-manager' (chart 'cert-manager')"
not_expressible(
    RULE,
    "the config loader refuses cert-manager values the chart's values.schema.json refuses "
    "(tests/test_cert_manager_values_schema.py)",
)


# the corpus of tests/test_policies_cases.py: each case through both Helm forms the rule claims
for _expect, _label, _props in (
    ("violation", "v1.16.5 webhook.replicaCont", release("v1.16.5", {"webhook": {"replicaCont": 2}})),
    ("violation", "v1.20.0 replicaCount as text", release("v1.20.0", {"replicaCount": "2"})),
    ("pass", "v1.16.5 webhook.replicaCount", release("v1.16.5", {"webhook": {"replicaCount": 2}})),
    ("pass", "v1.13.0: no values.schema.json", release("v1.13.0", {"installCRDs": True, "replicaCont": 2})),
):
    for _form in (RELEASE, CHART):
        case(RULE, _expect, _form, _label, res(_form, "r", _props))


def remediation(version: str) -> str:
    return (
        ". Helm refuses the release at install, minutes into `pulumi up`. Remediation: set only the values the "
        "chart version defines, as its values.schema.json types them (`helm show values jetstack/cert-manager "
        f"--version {version}`)."
    )


def test_an_unknown_key_of_a_release_some_program_makes_is_named_with_its_path(pack):
    typo = res(
        RELEASE,
        "other-program-cm",
        release("v1.16.5", {"crds": {"enabled": True}, "webhook": {"replicaCont": 2}}),
    )
    for env in ENVS:
        (found,) = pack.findings(RULE, [typo], env)
        assert found.enforcement_level == EXPECTED[RULE][ENVS.index(env)]
    assert [EXPECTED[RULE][ENVS.index(e)] for e in ENVS] == ["advisory", "advisory", "mandatory"]
    (found,) = pack.findings(RULE, [typo], "prod")
    message = body(found)
    assert message.startswith(
        f"{LABEL} v1.16.5: values.webhook.replicaCont: unknown key of cert-manager v1.16.5's values.schema.json "
        "(did you mean 'replicaCount'?); allowed keys: affinity, automountServiceAccountToken, config, "
    )
    assert message.endswith(f", volumeMounts, volumes{remediation('v1.16.5')}")


def test_each_wrong_type_is_named(pack):
    values = {
        "replicaCount": "2",
        "extraArgs": "--v=2",
        "podDnsPolicy": "None",
        "global": {"leaderElection": {"namespace": "cert-manager"}},
    }
    found = pack.findings(RULE, [res(RELEASE, "cm", release("1.17.4", values))])
    assert sorted(body(v) for v in found) == [
        f"{LABEL} 1.17.4: values.extraArgs: must be a list, not a string (cert-manager v1.17.4's "
        f"values.schema.json){remediation('1.17.4')}",
        f"{LABEL} 1.17.4: values.replicaCount: must be a number, not a string (cert-manager v1.17.4's "
        f"values.schema.json){remediation('1.17.4')}",
    ]


def test_valid_values_and_versions_without_a_known_schema_pass(pack):
    fine = [
        res(
            RELEASE,
            "a",
            release("v1.16.5", {"crds": {"enabled": True, "keep": True}, "webhook": {"replicaCount": 2}}),
        ),
        # a null is dropped from the values when Helm merges them: nothing to refuse
        res(RELEASE, "b", release("v1.18.2", {"webhook": {"replicaCount": None}, "unknownButNull": None})),
        res(RELEASE, "c", {k: v for k, v in release("v1.21.2").items() if k != "values"}),
        # no values.schema.json before v1.16.0; none known for a release newer than the data, or not in it
        res(RELEASE, "d", release("v1.13.0", {"installCRDs": True, "notAValue": 1})),
        res(RELEASE, "e", release("v1.99.0", {"notAValue": 1})),
        res(RELEASE, "f", release("v1.18.4", {"notAValue": 1})),
        # not the cert-manager chart
        res(RELEASE, "g", release("v1.16.5", {"notAValue": 1}, chart="other-chart", name="other")),
    ]
    assert pack.findings(RULE, fine) == []


def test_an_unknown_value_is_checked_for_its_key_now_and_its_value_at_apply(pack):
    values = {"webhook": {"replicaCount": UNKNOWN_STRING, "replicaCont": UNKNOWN_STRING}}
    found = pack.findings(RULE, [res(RELEASE, "cm", release("v1.16.5", values))])
    assert sorted(v.enforcement_level for v in found) == ["advisory", "mandatory"]
    (known,) = [v for v in found if v.enforcement_level == "mandatory"]
    assert body(known).startswith(
        f"{LABEL} v1.16.5: values.webhook.replicaCont: unknown key of cert-manager "
    )
    (later,) = [v for v in found if v.enforcement_level == "advisory"]
    assert "values.webhook.replicaCont, values.webhook.replicaCount are unknown until apply" in later.message
    whole = res(RELEASE, "cm", release("v1.16.5", UNKNOWN_STRING))
    (later,) = pack.findings(RULE, [whole])
    assert "the value(s) at values are unknown until apply" in later.message
