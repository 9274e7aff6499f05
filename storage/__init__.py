"""fastpack.storage: local paths and URLs, retries, ranged reads, downloads, uploads and the cache
directory; the one place that talks to file systems and object stores. Both the compiler and
the reader use it; it uses neither."""

from .cache_dir import CACHE_ENV, default_cache_dir
from .download import Expected
from .errors import FetchError, MissingDependencyError
from .location import Location
from .retry import RetryPolicy
from .transfer import Transfer
from .urls import is_url

__all__ = [
    "CACHE_ENV",
    "Expected",
    "FetchError",
    "Location",
    "MissingDependencyError",
    "RetryPolicy",
    "Transfer",
    "default_cache_dir",
    "is_url",
]
