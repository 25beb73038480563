"""The table of kinds is found, not listed (program/kinds/table.py): every package of program/kinds/ with a
`KIND`, by its order; an entry's build, verify, check and mocks come from its package's modules."""

from __future__ import annotations

import dataclasses

import pytest

from program.kinds import table
from program.kinds.azure_ml.model import AzureMlTarget
from program.kinds.base import DERIVED, Lazy


class ModelElsewhere(AzureMlTarget):
    """A model outside a kind package's model.py: its entry must name its package."""


SHIPPED = ("kubernetesClusters", "gkeClusters", "azureMl", "modelDevelopmentClusters")


def test_the_kinds_are_found_in_their_order() -> None:
    found = [(k.key, k.order) for k in table.KINDS]
    assert found == sorted(found, key=lambda k: k[1])
    assert [k for k in found if k[0] in SHIPPED] == [
        ("kubernetesClusters", 10),
        ("gkeClusters", 20),
        ("azureMl", 30),
        ("modelDevelopmentClusters", 40),
    ]


@pytest.mark.parametrize("kind", table.KINDS, ids=lambda k: k.key)
def test_each_kind_has_its_modules(kind) -> None:
    assert kind.build.ref == f"{kind.package}.build:build"
    assert (kind.verify.ref, kind.check.ref) == (
        f"{kind.package}.verify:verify",
        f"{kind.package}.verify:check",
    )
    assert kind.mock_answers.ref == f"{kind.package}.mocks"
    assert callable(kind.build.load()) and callable(kind.check.load())
    assert isinstance(kind.mock_answers.load().__name__, str)


def test_an_entry_may_name_its_own_module_and_must_name_one_or_its_package() -> None:
    kind = table.BY_KEY["azureMl"]
    own = dataclasses.replace(kind, build=Lazy("elsewhere:make"))
    assert own.build.ref == "elsewhere:make" and own.verify.ref == kind.verify.ref
    assert kind.package == "program.kinds.azure_ml"  # its model's package: program/kinds/azure_ml/model.py
    with pytest.raises(
        ValueError,
        match=r"^kind azureMl: give its package \(its model is not in a package's model.py\) or build$",
    ):
        dataclasses.replace(kind, package="", model=ModelElsewhere, build=DERIVED)


def test_two_kinds_of_one_order_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import program.kinds.gke as gke

    monkeypatch.setattr(gke, "KIND", dataclasses.replace(gke.KIND, order=10))
    with pytest.raises(
        ValueError,
        match="kinds program.kinds.gke and program.kinds.kubernetes have the same order 10|kinds program.kinds.kubernetes and program.kinds.gke have the same order 10",
    ):
        table.discover()


def test_an_entry_gives_only_what_differs_from_the_default() -> None:
    """The stack config attribute, the output key, the record section and the component's token follow from
    the key, the package and the model; an entry names them only where they differ."""
    found = {k.key: (k.field, k.export, k.section, k.component) for k in table.KINDS if k.key in SHIPPED}
    assert found == {
        "kubernetesClusters": (
            "kubernetes_clusters",
            "kubernetesCluster",
            "in_cluster",
            "mldiag:index:KubernetesCluster",
        ),
        "gkeClusters": ("gke_clusters", "gkeCluster", "gke", "mldiag:index:GkeCluster"),
        "azureMl": ("azure_ml", "azureMl", "azure_ml", "mldiag:index:AzureMlExtension"),
        "modelDevelopmentClusters": (
            "model_development_clusters",
            "modelDevelopmentCluster",
            "model_development",
            "mldiag:index:ModelDevelopmentCluster",
        ),
    }
    kind = table.BY_KEY["gkeClusters"]
    other = dataclasses.replace(kind, key="eksClusters", field="", export="", component="", section="")
    assert (other.field, other.export, other.section, other.component) == (
        "eks_clusters",
        "eksCluster",
        "gke",
        "mldiag:index:GkeCluster",
    )
    with pytest.raises(
        ValueError,
        match=r"^kind eksClusters: give its package \(its model is not in a package's model.py\) or section$",
    ):
        dataclasses.replace(other, package="", model=ModelElsewhere, section="")
