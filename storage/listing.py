"""Listing the objects under a prefix, page by page.

On S3 each page is one ListObjectsV2 request of up to `PAGE_SIZE` keys, continued by its token,
so that memory holds one page whatever the number of objects; keys come in the store's listing
order (AWS: UTF-8 byte order; SeaweedFS: folder by folder, each sorted by name). Other
filesystems are listed whole by fsspec (`find`, `ls`), then sorted by name: their memory grows
with the listing.

A key that ends in `/` is a folder marker (an empty object that consoles make for a folder), not
an object: listings leave it out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
Call = Callable[[str, Callable[[], T]], T]  # a call retried, named for its errors

PAGE_SIZE = 1000  # S3's maximum keys per ListObjectsV2 page


def _s3_pages(
    fs: Any, path: str, call: Call[Any], request: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """The ListObjectsV2 responses for the keys that start with the key of `path`; `request`
    holds the call's other parameters (`MaxKeys`, and `Delimiter` or `StartAfter` where
    given)."""
    bucket, key, _ = fs.split_path(path)
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": key, **request}
    while True:
        page: dict[str, Any] = call(f"listing of s3://{bucket}/{key}", _lister(fs, dict(kwargs)))
        yield page
        if not page.get("IsTruncated"):
            return
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def _lister(fs: Any, request: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """One ListObjectsV2 request, to be retried as it is."""

    def call() -> dict[str, Any]:
        page: dict[str, Any] = fs.call_s3("list_objects_v2", **request)
        return page

    return call


def s3_objects(
    fs: Any, path: str, call: Call[Any], *, start_after: str = "", page_size: int = PAGE_SIZE
) -> Iterator[tuple[str, int]]:
    """`(key, size)` of the objects whose keys start with that of `path` (a key prefix: give
    a folder with its `/`), after the key `start_after`, page by page."""
    request: dict[str, Any] = {"MaxKeys": page_size}
    if start_after:
        request["StartAfter"] = start_after
    for page in _s3_pages(fs, path, call, request):
        for item in page.get("Contents", ()):
            if not item["Key"].endswith("/"):
                yield item["Key"], int(item["Size"])


def s3_folders(fs: Any, path: str, call: Call[Any]) -> Iterator[str]:
    """The keys (each ending in `/`) of the folders directly under the key prefix of `path`."""
    pages = _s3_pages(fs, path, call, {"MaxKeys": PAGE_SIZE, "Delimiter": "/"})
    for page in pages:
        for item in page.get("CommonPrefixes", ()):
            yield item["Prefix"]


def fsspec_objects(fs: Any, path: str, call: Call[Any]) -> list[tuple[str, int]]:
    """`(path, size)` of every file under the folder `path` (any fsspec filesystem), sorted."""
    found: dict[str, Any] = call(f"listing of {path}", lambda: fs.find(path, detail=True))
    return sorted((p, int(info.get("size") or 0)) for p, info in found.items())


def fsspec_folders(fs: Any, path: str, call: Call[Any]) -> list[str]:
    """The paths of the folders directly under the folder `path`, sorted."""
    try:
        entries: list[dict[str, Any]] = call(f"listing of {path}", lambda: fs.ls(path, detail=True))
    except FileNotFoundError:
        return []
    return sorted(e["name"].rstrip("/") for e in entries if e.get("type") == "directory")
