"""What a loader's saved state says its samples are (`dataset_identity`), and how a state saved
on another version of the same dataset is told from one saved on another dataset.

A dataset's identity is its manifest digest (`dataset`), the view read and, from version 2 on,
the version of the dataset that manifest describes (`dataset_version`, formats/SPEC.md section
11) and `origin`: the manifest digest of version 1, which every version of one dataset shares (a
version-1 identity's own `dataset`). An identity without a version is version 1's: a state saved
on version 1 is the state saved before versions existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastpack.formats import Manifest, View
from fastpack.formats.manifest import manifest_digest


def dataset_identity(manifest: Manifest, view: View | None) -> dict[str, Any]:
    """The identity of the dataset version `manifest` describes, read through `view` (None:
    every sample): its manifest digest, the view's name and digest and, from version 2 on, the
    version and version 1's digest (`origin`)."""
    identity: dict[str, Any] = {
        "dataset": manifest_digest(manifest),
        "view": None if view is None else {"name": view.name, "digest": view.digest()},
    }
    if manifest.versions:  # version 1's identity is what states saved before versions hold
        identity["dataset_version"] = manifest.dataset_version
        identity["origin"] = manifest.versions[0].sha256
    return identity


def with_version(identity: Mapping[str, Any]) -> dict[str, Any]:
    """A saved identity (a dataset's or a mix's, checked) with the version of each dataset it
    names: version 1 where it names none (saved before versions existed)."""
    if "mix" in identity:
        sources = [
            {**source, "source": with_version(source["source"])} for source in identity["mix"]
        ]
        return {**identity, "mix": sources}
    if "dataset" in identity and "dataset_version" not in identity:
        return {**identity, "dataset_version": 1}
    return dict(identity)


def version_change(saved: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Where `saved` and `current` (identities with versions, `with_version`) read the same
    dataset in different versions: a sentence naming both versions (for a mix, the first
    source that differs so); None otherwise."""
    if "mix" in saved and "mix" in current:
        for k, (a, b) in enumerate(zip(saved["mix"], current["mix"], strict=False)):
            change = version_change(a["source"], b["source"])
            if change is not None:
                return f"mix source {k}: {change}"
        return None
    if "mix" in saved or "mix" in current:
        return None
    was, now = saved.get("dataset_version"), current.get("dataset_version")
    if was == now or _origin(saved) != _origin(current):
        return None
    return (
        f"the state was saved on version {was} of this dataset, this loader reads version "
        f"{now}: resume it with the dataset opened at version={was}"
    )


def _origin(identity: Mapping[str, Any]) -> Any:
    """Version 1's manifest digest: the same in every version of one dataset."""
    return identity.get("origin", identity.get("dataset"))
