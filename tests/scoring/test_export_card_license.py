"""The export card's `license: other` comes with `license_name` and `license_link`, as the Hub's card
metadata pairs them; the card round-trips through huggingface_hub's DatasetCardData; a recipe's hub
block may set its own, and refuses them beside another licence."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from huggingface_hub import DatasetCard, DatasetCardData

from annotations.datasets import recipes
from scoring.cprt_bench import card as card_lib

from .test_export_dataset_version import VISPR  # noqa: F401  (the world's VISPR ids, used by the version fixture)
from .test_export_dataset_version import version  # noqa: F401  (fixture)


def export_hf(folder, *args):
    call_command("export_hf", str(folder), *args, "--profile", "models", stdout=io.StringIO())
    return DatasetCard.load(folder / "README.md")


def assert_round_trips(card: DatasetCard) -> None:
    data = card.data
    assert isinstance(data, DatasetCardData)
    again = DatasetCardData(**data.to_dict())
    assert again.to_dict() == data.to_dict()
    rebuilt = DatasetCard(f"---\n{again.to_yaml()}\n---\n{card.text}")
    assert rebuilt.data.to_dict() == data.to_dict()


def test_an_unscoped_exports_card_names_its_other_licence(world, tmp_path):
    card = export_hf(tmp_path / "hf")
    meta = card.data
    assert (meta.license, meta.license_name, meta.license_link) == ("other", "vispr-terms", "https://github.com/tribhuvanesh/vpa")
    assert_round_trips(card)


def test_a_versions_card_keeps_them_and_its_recipe_can_replace_them(version, tmp_path):  # noqa: F811
    card = export_hf(tmp_path / "a", "--dataset-version", "paper-both")
    assert (card.data.license, card.data.license_name, card.data.license_link) == ("other", "vispr-terms", "https://github.com/tribhuvanesh/vpa")
    assert_round_trips(card)
    recipe = dict(version.recipe)
    recipe["hub"] = {**recipe["hub"], "license_name": "our-terms-1.0", "license_link": "LICENSE.md"}
    type(version).objects.filter(pk=version.pk).update(recipe=recipe)
    card = export_hf(tmp_path / "b", "--dataset-version", "paper-both")
    assert (card.data.license_name, card.data.license_link) == ("our-terms-1.0", "LICENSE.md")
    assert_round_trips(card)


def test_another_licence_drops_them():
    meta = card_lib.hub_metadata({"splits": {"test": {"rows": 3}}})
    assert meta["license_name"] == "vispr-terms"

    class Version:
        name = "v"
        recipe = {"hub": {"license": "cc-by-4.0"}}

    meta = card_lib.hub_metadata({"splits": {"test": {"rows": 3}}}, Version())
    assert meta["license"] == "cc-by-4.0" and "license_name" not in meta and "license_link" not in meta


BASE = {"vispr_splits": ["test2017"], "rules": [{"name": "r", "any": ["a0_safe"]}]}


@pytest.mark.parametrize("hub, message", [
    ({"license": "mit", "license_name": "x"}, 'license_name and license_link go with license "other" only'),
    ({"license_link": "../../etc/passwd"}, "license_link '../../etc/passwd': an https:// address or a file of the dataset"),
    ({"license_link": "http://example.org/terms"}, "an https:// address"),
    ({"license_name": "two words"}, "hub.license_name"),
])
def test_a_recipes_bad_licence_fields_are_refused(hub, message):
    with pytest.raises(recipes.RecipeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        recipes.parse({**BASE, "hub": hub})
    assert recipes.parse({**BASE, "hub": {"license": "other", "license_name": "ok-1.0", "license_link": "https://example.org/t"}}).hub
