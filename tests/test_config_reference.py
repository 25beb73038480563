"""The README's configuration reference is generated from the config models and must not go stale."""

from __future__ import annotations

from dev.gen import config_reference


def test_readme_reference_matches_the_models():
    block = config_reference.readme_block(config_reference.README.read_text())
    assert block.strip() == config_reference.render().strip(), (
        "docs/configuration.md's config reference is stale: run `python -m dev.gen.config_reference --write`"
    )


def test_reference_names_every_key_path_with_its_type_and_description():
    text = config_reference.render()
    assert "| `azureMl[].inference.routerServiceType` | str |" in text
    assert "| `kubernetesClusters[].kubeconfig` | secret string |" in text
    assert (
        "| `modelDevelopmentClusters[].deletionPolicy` | `DELETE` \\| `ABANDON` \\| `PREVENT` | `DELETE` |"
        in text
    )
    name_row = next(line for line in text.splitlines() if line.startswith("| `gkeClusters[].name`"))
    assert "Unique per kind" in name_row
