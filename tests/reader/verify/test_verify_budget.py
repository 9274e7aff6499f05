"""verify --decode decodes images under the pixel budget the dataset was built with."""

from __future__ import annotations

import dataclasses

import pytest
from fastpack.formats import DEFAULT_PIXEL_BUDGET, FileInfo, Manifest, ManifestError
from fastpack.reader.verify.members import build_pixel_budget


def _manifest(build: dict[str, object]) -> Manifest:
    return Manifest(
        num_samples=0,
        fields=("jpg", "cls"),
        classes=(),
        key_width=9,
        shards=(),
        index=FileInfo(name="index.fpx", bytes=0, sha256="0" * 64),
        build=build,
    )


def test_the_budget_is_the_manifest_s_or_the_default() -> None:
    assert build_pixel_budget(_manifest({})) == DEFAULT_PIXEL_BUDGET
    assert build_pixel_budget(_manifest({"pixel_budget": 2**30})) == 2**30
    m = dataclasses.replace(_manifest({}), build={"pixel_budget": 5})
    assert build_pixel_budget(m) == 5


@pytest.mark.parametrize("value", [0, -1, "12", 1.5, True, None])
def test_a_recorded_budget_that_is_no_budget_is_a_manifest_error(value: object) -> None:
    with pytest.raises(ManifestError, match=r"the manifest's build.pixel_budget must be an int"):
        build_pixel_budget(_manifest({"pixel_budget": value}))
