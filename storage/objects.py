"""`Objects`: single objects named by full URLs, each read through the `Location` of its bucket
(retried; one filesystem per process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .location import Location
from .retry import RetryPolicy
from .url_paths import split_url


class Objects:
    """Reads and sizes objects by URL; keeps one `Location` per bucket."""

    def __init__(
        self, storage_options: Mapping[str, Any] | None = None, retry: RetryPolicy | None = None
    ) -> None:
        self._options = dict(storage_options or {})
        self._retry = retry
        self._buckets: dict[str, Location] = {}

    def _at(self, url: str) -> tuple[Location, str]:
        bucket, key = split_url(url)
        if not key or key.endswith("/"):
            raise FileNotFoundError(f"{url}: not an object URL (scheme://bucket/key)")
        location = self._buckets.get(bucket)
        if location is None:
            location = self._buckets[bucket] = Location(bucket, self._options, self._retry)
        return location, key

    def read(self, url: str) -> bytes:
        """The whole object; `FileNotFoundError` (`DatasetNotFoundError`) if there is none,
        `PermissionError` if it may not be read, `FetchError` once the retries are spent."""
        location, key = self._at(url)
        return location.read_bytes(key)

    def size(self, url: str) -> int | None:
        """The object's size, None if there is none."""
        try:
            location, key = self._at(url)
        except FileNotFoundError:
            return None
        return location.size(key)
