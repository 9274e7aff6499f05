"""Where a build puts its dataset, seen from the building call: a `DirectoryOutput` (a local
or shared directory) or a `StoreOutput` (an object store prefix, through a local staging
directory). Both answer the same questions, so that `build()` has one path: is the dataset
there already, where is the plan, which shards are finished at the target (their record is
there, last of their files), and how the finished dataset is published (the manifest last)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from fastpack.formats import MANIFEST_NAME, SHARDS_DIR, manifest_from_text
from fastpack.storage import RetryPolicy, is_url

from ..build_dir import BUILD_DIR, default_staging_dir
from ..errors import BuildError
from ..jobs.shard_record import ShardRecord, finished_record, save_record
from ..options import BuildOptions, BuildSummary
from ..output.assemble import dataset_files
from ..output.out_dir import OPTIONS_NAME, OutState, check_out_dir, check_same, start_build_dir
from ..stages import summary_of
from .node_share import node_plan_dir
from .targets import DirectoryTarget, UrlTarget

_UPLOAD_THREADS = 4
POLL_SECONDS = 0.5


class Output(Protocol):
    """What `build()` and the runners ask of a target."""

    name: str  # the directory or URL, for messages
    plan_root: Path  # holds the plan (`.fastpack-build/`)
    out_root: Path  # where the dictionaries, records and the finished dataset are assembled
    task_target: str  # where a cluster task writes: a shared directory or the URL
    storage_options: Mapping[str, Any]

    def prepare(self, fingerprint: Mapping[str, Any]) -> OutState: ...
    def summary(self, seconds: float) -> BuildSummary: ...
    def planned(self, fingerprint: Mapping[str, Any]) -> None: ...
    def finished(self, shards: range) -> dict[int, ShardRecord]: ...
    def to_run(self, shards: range, finished: Collection[int]) -> list[int]: ...
    def publishing(self, shards: Sequence[int]) -> AbstractContextManager[None]: ...
    def drop_plan(self) -> None: ...
    def gather(self, finished: Mapping[int, ShardRecord], shards: range) -> None: ...
    def publish(self) -> None: ...


def _check_apart(source: Path, out: Path) -> None:
    source, out = source.resolve(), out.resolve()
    if out == source or (source.is_dir() and out.is_relative_to(source)):
        raise BuildError(f"{out}: the output directory must not be inside the source {source}")


class DirectoryOutput:
    """A local directory, or one on a file system every machine of the build mounts at the
    same path: the shard jobs write into it directly. A node's share plans in a directory of
    its own (`node_plan_dir`)."""

    def __init__(self, out: Path, source: str, options: BuildOptions, staging: Path | None) -> None:
        _check_apart(Path(source), out)
        self._resume, self._share = options.resume, options.node_share
        self.name = str(out)
        self.out_root = out
        self.plan_root = node_plan_dir(str(out), options, staging) if self._share else out
        self.task_target = str(out)
        self.storage_options: Mapping[str, Any] = {}

    def prepare(self, fingerprint: Mapping[str, Any]) -> OutState:
        """The state of the plan's directory; COMPLETE when the dataset is there already."""
        resume = self._resume or self._share
        state = check_out_dir(self.out_root, resume=resume, fingerprint=fingerprint)
        if state is OutState.COMPLETE or not self._share:
            return state
        return check_out_dir(self.plan_root, resume=True, fingerprint=fingerprint)

    def summary(self, seconds: float) -> BuildSummary:
        return summary_of(self.out_root, seconds)

    def planned(self, fingerprint: Mapping[str, Any]) -> None:
        if self._share:
            start_build_dir(self.out_root, fingerprint)
        (self.out_root / SHARDS_DIR).mkdir(exist_ok=True)

    def finished(self, shards: range) -> dict[int, ShardRecord]:
        return DirectoryTarget(self.out_root).finished(shards)

    def to_run(self, shards: range, finished: Collection[int]) -> list[int]:
        """All of `shards`: the local run skips the finished ones itself, counting them done."""
        del finished
        return list(shards)

    @contextmanager
    def publishing(self, shards: Sequence[int]) -> Iterator[None]:
        """Nothing to do: the jobs write their shards in place."""
        del shards
        yield

    def drop_plan(self) -> None:
        """Delete a node's own plan, once its shards are finished (not the output's)."""
        if self.plan_root != self.out_root:
            shutil.rmtree(self.plan_root)

    def gather(self, finished: Mapping[int, ShardRecord], shards: range) -> None:
        """The records and index parts are in place already; a node's plan is not needed."""
        del finished, shards
        self.drop_plan()

    def publish(self) -> None:
        """Nothing to do: the dataset was assembled in place, its manifest last."""


class StoreOutput:
    """An object store prefix (`s3://...`, any fsspec URL). The plan, and the finish, happen in
    a local staging directory; each shard is uploaded with its record last (`UrlTarget`), and
    the finished dataset's own files after them, the manifest last, so that a half-built
    dataset is never visible as one. Every call to the store goes through `retry`."""

    def __init__(  # noqa: PLR0913 - the keyword options of build() that concern the store
        self,
        url: str,
        options: BuildOptions,
        *,
        staging: Path | None,
        storage_options: Mapping[str, Any] | None,
        retry: RetryPolicy | None,
        keep_staging: bool,
    ) -> None:
        self.target = UrlTarget(url, storage_options, retry)
        self._resume, self._keep = options.resume, keep_staging
        self.name = self.target.url
        if options.node_share:
            local = node_plan_dir(self.target.url, options, staging)
        else:
            local = staging if staging is not None else default_staging_dir(self.target.url)
        self.plan_root = self.out_root = local
        self.task_target = self.target.url
        self.storage_options: Mapping[str, Any] = dict(storage_options or {})

    def prepare(self, fingerprint: Mapping[str, Any]) -> OutState:
        """COMPLETE when the prefix holds a dataset (refused unless resuming), else the state
        of the staging directory, which a later call resumes."""
        if self.target.location.size(MANIFEST_NAME) is not None:
            if not self._resume:
                raise BuildError(
                    f"{self.name}: already holds a fastpack dataset; pass --resume "
                    "(resume=True) to finish or keep it, or choose another prefix"
                )
            return OutState.COMPLETE
        return check_out_dir(self.out_root, resume=True, fingerprint=fingerprint)

    def summary(self, seconds: float) -> BuildSummary:
        """The summary of the dataset already in the store."""
        text = self.target.location.read_bytes(MANIFEST_NAME)
        manifest = manifest_from_text(text, self.target.location.url_of(MANIFEST_NAME))
        stats = manifest.stats
        return BuildSummary(
            inputs=stats["inputs"],
            samples=manifest.num_samples,
            shards=len(manifest.shards),
            bytes=sum(s.bytes for s in manifest.shards),
            rejected=stats["rejected"],
            converted=stats["converted"],
            seconds=seconds,
        )

    def planned(self, fingerprint: Mapping[str, Any]) -> None:
        """Record the build's options in the store, or check them against those recorded
        there (by another node, or before an interruption)."""
        name = f"{BUILD_DIR}/{OPTIONS_NAME}"
        location = self.target.location
        if location.size(name) is None:
            location.upload(self.out_root / name, name)
            return
        stored = json.loads(location.read_bytes(name))
        check_same(self.name, "the build there", stored, fingerprint)

    def finished(self, shards: range) -> dict[int, ShardRecord]:
        return self.target.finished(shards)

    def to_run(self, shards: range, finished: Collection[int]) -> list[int]:
        """The shards of `shards` not finished in the store."""
        return [s for s in shards if s not in finished]

    @contextmanager
    def publishing(self, shards: Sequence[int]) -> Iterator[None]:
        """Upload each of `shards` as soon as the local run has finished it; after the run
        (also after a failure: a resume has less to do) upload the rest that are finished."""
        watcher = _Watcher(self.target, self.out_root, shards)
        watcher.start()
        try:
            yield
        finally:
            watcher.stop.set()
            watcher.join()
            if watcher.error is None:
                watcher.publish_ready(_UPLOAD_THREADS)
        if watcher.error is not None:
            raise watcher.error

    def drop_plan(self) -> None:
        """This call's shards are in the store: its plan is not needed again."""
        shutil.rmtree(self.out_root)

    def gather(self, finished: Mapping[int, ShardRecord], shards: range) -> None:
        """Bring every shard's record and index part into staging, for the finish."""
        for record in finished.values():  # read already by `finished`: saved, not fetched
            save_record(self.out_root, record)
        self.target.fetch_parts(self.out_root, shards)

    def publish(self) -> None:
        """Upload the dataset's own files (its shards are in the store), the manifest last;
        then the build files go from the store, and staging unless it is kept."""
        for name in dataset_files(self.out_root, shards=False):
            self.target.location.upload(self.out_root / name, name)
        self.target.remove_build_files()
        if not self._keep:
            shutil.rmtree(self.out_root)


class _Watcher(threading.Thread):
    """Uploads shards while the local run goes on; an upload error stops it and is raised
    after the run."""

    def __init__(self, target: UrlTarget, local: Path, shards: Sequence[int]) -> None:
        super().__init__(name="fastpack-upload", daemon=True)
        self.target, self.local = target, local
        self.pending = set(shards)
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def _ready(self) -> list[int]:
        return [s for s in sorted(self.pending) if finished_record(self.local, s) is not None]

    def publish_ready(self, threads: int = 1) -> None:
        """Upload every pending shard that the local run has finished, the record last."""
        ready = self._ready()

        def publish(shard: int) -> None:
            self.target.publish(self.local, shard)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(publish, ready))
        self.pending.difference_update(ready)

    def run(self) -> None:
        try:
            while not self.stop.wait(POLL_SECONDS):
                self.publish_ready()
        except BaseException as e:  # raised by `publishing` once the run is over
            self.error = e


def open_output(  # noqa: PLR0913 - the keyword options of build() that choose the target
    out: str,
    source: str,
    options: BuildOptions,
    *,
    staging: Path | None,
    storage_options: Mapping[str, Any] | None,
    retry: RetryPolicy | None,
    keep_staging: bool,
) -> Output:
    """The target that `out` names: a `StoreOutput` for a URL, else a `DirectoryOutput`."""
    if is_url(out):
        return StoreOutput(
            out,
            options,
            staging=staging,
            storage_options=storage_options,
            retry=retry,
            keep_staging=keep_staging,
        )
    return DirectoryOutput(Path(out), source, options, staging)
