"""Object URLs as strings: splitting one into its bucket and key, and resolving a path written
relative to a folder URL."""

from __future__ import annotations

from .urls import is_url


def split_url(url: str) -> tuple[str, str]:
    """`("scheme://bucket", "key")` of an object URL (`s3://b/a/x.jpg` -> `s3://b`, `a/x.jpg`)."""
    scheme, _, rest = url.partition("://")
    bucket, _, key = rest.partition("/")
    return f"{scheme}://{bucket}", key


def resolve_url(folder: str, path: str) -> str:
    """The URL of `path` seen from the folder URL `folder`, as a relative URL reference resolves
    (RFC 3986, section 5.2, without percent-decoding): a URL stays as it is, `/a/x.jpg` starts
    at the bucket, anything else at `folder`; `.` and `..` segments are removed (`..` stops at
    the bucket), empty segments kept (they are part of an object key)."""
    if is_url(path):
        return path
    bucket, key = split_url(folder.rstrip("/"))
    joined = path[1:] if path.startswith("/") else f"{key}/{path}" if key else path
    return f"{bucket}/{_without_dots(joined)}"


def _without_dots(key: str) -> str:
    kept: list[str] = []
    segments = key.split("/")
    for segment in segments:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")  # `a/b/..` names the folder `a/`, as RFC 3986 resolves it
    return "/".join(kept)
