"""What downloads read: byte ranges of objects as a stream of buffers (`RangeChunks`).

Two clients behind one interface. Every scheme has its fsspec filesystem. For S3, downloads of
whole objects (a dataset's shards) may go through obstore (Rust `object_store`) instead: a GET's
body arrives in buffers that Python never copies, read without the GIL; measured on 2 cores
against SeaweedFS (benchmarks/streaming/STREAMING.md, by s3_clients_bench.py), 0.86 ms of CPU
per MiB straight and 1.45 through a shaping proxy, where s3fs (aiohttp) took 1.84 and 2.34 and
pyarrow 1.48 and 1.68.

obstore's runtime (tokio) does not survive a fork: a process forked from one that has used it
hangs on its first request. So it is used only in a process none of whose ancestors used it
(`native_allowed`), and only for bulk downloads, which happen in the DataLoader's workers: the
trainer reads a dataset's manifest and index through s3fs and forks its workers untouched.
obstore's own retries are off: `RetryPolicy` (retry.py) is the one retry layer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any, ClassVar, Protocol

from .missing import import_optional

# s3fs options that obstore is given as its own; any other option keeps S3 on s3fs.
_S3FS_KEYS = frozenset(
    {
        "key",
        "secret",
        "token",
        "anon",
        "endpoint_url",
        "client_kwargs",
        "config_kwargs",
        "skip_instance_cache",
        "session",
    }
)
_CLIENT_KWARGS = frozenset({"endpoint_url", "region_name"})
_CONFIG_KWARGS = frozenset({"connect_timeout", "read_timeout", "retries"})
_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


class RangeChunks(Protocol):
    """Ranges of objects named by filesystem paths (`bucket/key` on S3), what downloads read."""

    def chunks(self, path: str, start: int, end: int) -> Iterator[memoryview]:
        """Bytes `[start, end)` as consecutive buffers (fewer bytes at the object's end)."""
        ...


class FsspecReads:
    """`RangeChunks` through an fsspec filesystem: one `cat_file` per range."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def chunks(self, path: str, start: int, end: int) -> Iterator[memoryview]:
        yield memoryview(self.fs.cat_file(path, start=start, end=end))


# The process that started obstore's runtime (0: none yet); a forked child inherits the value.
_NATIVE_PID = 0


def native_allowed() -> bool:
    """Whether this process may use obstore: it started its runtime, or no ancestor did."""
    return _NATIVE_PID in (0, os.getpid())


class ObstoreS3Reads:
    """`RangeChunks` of S3 through obstore, one store per bucket, in one process (see
    `native_allowed`)."""

    CHUNK_BYTES = 1 << 20  # a stream's buffers: small enough to be written while in the CPU cache
    _of_process: ClassVar[dict[tuple[int, str], ObstoreS3Reads]] = {}

    def __init__(self, storage_options: Mapping[str, Any]) -> None:
        self._obstore = import_optional("obstore", "s3")
        self._config = _obstore_config(storage_options)
        self._stores: dict[str, Any] = {}
        self._pid = os.getpid()

    @classmethod
    def of_process(cls, storage_options: Mapping[str, Any]) -> ObstoreS3Reads:
        """The reads of this process for these options, made once."""
        slot = (os.getpid(), repr(sorted(storage_options.items())))
        if slot not in cls._of_process:
            cls._of_process[slot] = cls(storage_options)
        return cls._of_process[slot]

    def _store(self, path: str) -> tuple[Any, str]:
        global _NATIVE_PID  # noqa: PLW0603 -- per process
        if not native_allowed() or self._pid != os.getpid():
            raise RuntimeError(f"obstore in process {os.getpid()}, forked after it started")
        bucket, _, key = path.partition("/")
        store = self._stores.get(bucket)
        if store is None:
            from obstore.store import S3Store  # noqa: PLC0415 -- optional: obstore

            _NATIVE_PID = os.getpid()
            store = self._stores[bucket] = S3Store(bucket, **self._config)
        return store, key

    def chunks(self, path: str, start: int, end: int) -> Iterator[memoryview]:
        if end <= start:
            return
        store, key = self._store(path)
        with _errors(path):
            result = self._obstore.get(store, key, options={"range": (start, end)})
            for buffer in result.stream(min_chunk_size=self.CHUNK_BYTES):
                yield memoryview(buffer)


class _errors:
    """obstore's errors as the builtins the retry layer knows: a missing object as
    `FileNotFoundError`, refused access as `PermissionError` (neither is retried)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, trace: Any) -> None:
        if error is None:
            return
        from obstore import exceptions  # noqa: PLC0415 -- optional: obstore

        if isinstance(error, exceptions.NotFoundError):
            raise FileNotFoundError(f"{self.path}: no such object") from error
        if isinstance(error, exceptions.PermissionDeniedError | exceptions.UnauthenticatedError):
            raise PermissionError(f"{self.path}: {error}") from error
        if isinstance(error, exceptions.GenericError) and _says_not_found(str(error)):
            raise FileNotFoundError(f"{self.path}: no such object") from error
        if isinstance(error, exceptions.BaseError):
            raise OSError(_first_part(str(error))) from error


def _first_part(message: str) -> str:
    """obstore's message without its debug dump, on one line."""
    return " ".join(message.split("\n\nDebug source:", 1)[0].split())


def _says_not_found(message: str) -> bool:
    """A range GET of a missing key comes back as a generic error with the 404 status."""
    return "404" in message and ("Not Found" in message or "NoSuchKey" in message)


def obstore_fits(storage_options: Mapping[str, Any]) -> bool:
    """Whether obstore can be given every one of these s3fs options."""
    client = storage_options.get("client_kwargs") or {}
    config = storage_options.get("config_kwargs") or {}
    return (
        set(storage_options) <= _S3FS_KEYS
        and set(client) <= _CLIENT_KWARGS
        and set(config) <= _CONFIG_KWARGS
    )


def _obstore_config(options: Mapping[str, Any]) -> dict[str, Any]:
    """obstore's `S3Store` arguments for s3fs's `options` (the environment fills the rest, as
    it does for s3fs: `AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `AWS_DEFAULT_REGION`, ...)."""
    client = options.get("client_kwargs") or {}
    timeouts = options.get("config_kwargs") or {}
    config: dict[str, Any] = {}
    for ours, theirs in (
        ("key", "access_key_id"),
        ("secret", "secret_access_key"),
        ("token", "session_token"),
    ):
        if options.get(ours):
            config[theirs] = options[ours]
    if options.get("anon"):
        config["skip_signature"] = True
    endpoint = client.get("endpoint_url") or options.get("endpoint_url")
    if endpoint:
        config["endpoint"] = endpoint
    if client.get("region_name"):
        config["region"] = client["region_name"]
    endpoint = endpoint or next((os.environ[v] for v in _ENDPOINT_ENV if os.environ.get(v)), "")
    client_options: dict[str, Any] = {"allow_http": str(endpoint).startswith("http://")}
    if "connect_timeout" in timeouts:
        client_options["connect_timeout"] = f"{float(timeouts['connect_timeout'])}s"
    return {
        **config,
        "client_options": client_options,
        "retry_config": _retry_config(timeouts.get("retries")),
    }


def _retry_config(botocore_retries: Mapping[str, Any] | None) -> dict[str, Any]:
    """obstore retries nothing unless botocore's `retries` option asked for retries inside each
    attempt: `total_max_attempts` counts the first request, `max_attempts` does not."""
    retries = dict(botocore_retries or {})
    if "total_max_attempts" in retries:
        extra = int(retries["total_max_attempts"]) - 1
    else:
        extra = int(retries.get("max_attempts", 0))
    if extra <= 0:
        return {"max_retries": 0, "retry_timeout": timedelta(0)}
    return {"max_retries": extra, "retry_timeout": timedelta(minutes=3)}
