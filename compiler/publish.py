"""Publishing a finished local dataset at a URL (`Uploader`): each file put once, retried
through the storage layer's policy, the manifest last. It publishes a dataset built earlier;
`build()` with a URL as its output publishes through `targets.StoreTarget` instead."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME
from fastpack.storage import Location, RetryPolicy

from .errors import BuildError
from .finish import dataset_files


class Uploader:
    """Puts the files of a finished local dataset directory at a URL prefix, each one once, the
    manifest last (the order in which `build()` publishes one); every call to the object store
    is retried through `retry` (see `Location`)."""

    def __init__(
        self,
        local: Path,
        url: str,
        storage_options: Mapping[str, Any] | None,
        *,
        resume: bool,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.local = local
        self.location = Location(url, storage_options, retry)
        self.url = self.location.url
        self._resume = resume
        self._done: set[str] = set()

    def check_target(self) -> None:
        """Refuse a prefix that already holds a dataset, unless resuming."""
        if self.location.size(MANIFEST_NAME) is not None and not self._resume:
            raise BuildError(
                f"{self.url}: already holds a fastpack dataset; pass --resume (resume=True) "
                "to finish or keep it, or choose another prefix"
            )

    def put(self, name: str) -> None:
        """Upload `name` (relative to the dataset), unless already done (or, when resuming,
        already there with the same size)."""
        if name in self._done:
            return
        local = self.local / name
        if not (self._resume and self.location.size(name) == local.stat().st_size):
            self.location.upload(local, name)
        self._done.add(name)

    def put_dataset(self) -> None:
        """Upload the finished local dataset, the manifest last."""
        for name in dataset_files(self.local):
            self.put(name)
