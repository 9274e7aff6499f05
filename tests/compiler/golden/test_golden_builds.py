"""Every build output, byte for byte, as the code at the golden commit wrote it.

Each case builds deterministic inputs (`inputs.py`) through the command line, in process: every
source format, every field type, both shard formats, the options that change bytes, both targets
(a directory; an `s3://` URL on the SeaweedFS server) and every runner (local processes with 1 and
2 workers, a Dask cluster, node shares finished by a resuming call). The sha256 of every file of
the result is compared with `digests.json`, written by the code of the commit it names (see
`write_digests.py`), so a refactor of the compiler that changes one byte of any output fails here.

A build records no time or host. The one absolute path it records, a COCO source's images
directory in the manifest's `build`, is the case's directory, written as `<root>` before hashing,
and the manifest's own SHA-256 (of its text, that path included) is left out; nothing else is
normalized. The S3 cases use fixed bucket names, emptied first, because a URL
source's bucket is in its samples' `source` strings.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fastpack.cli import main
from tests.compiler.golden import inputs
from tests.s3_server import S3Server

DIGESTS = Path(__file__).with_name("digests.json")
WRITE_ENV = "FASTPACK_GOLDEN_WRITE"  # set to a path: write the digests there instead of checking
QUIET = ["--no-progress"]
SMALL = ["--shard-size", "20000"]


@dataclass
class Context:
    """What a case may use: its own directory, the S3 server and a Dask scheduler's address."""

    root: Path
    s3: S3Server | None = None
    scheduler: str | None = None

    def bucket(self, name: str) -> str:
        """An emptied bucket of a fixed name on the server."""
        assert self.s3 is not None
        fs = self.s3.filesystem()
        if fs.exists(name):
            fs.rm(name, recursive=True)
        fs.mkdir(name)
        return name

    def upload(self, local: Path, url: str) -> None:
        assert self.s3 is not None
        self.s3.filesystem().put(str(local), url.removeprefix("s3://"), recursive=True)


def build(*args: str) -> None:
    code = main(["build", *args, *QUIET])
    assert code in (0, None), f"fastpack build {' '.join(args)} exited with {code}"


MANIFEST = "fastpack.json"


_OWN_SHA256 = re.compile(rb'\n  "sha256": "[0-9a-f]{64}",\n')  # the manifest's, at the top level


def digest(name: str, data: bytes, root: Path) -> str:
    if name == MANIFEST:
        data = data.replace(str(root).encode(), b"<root>")
        data = _OWN_SHA256.sub(b"\n", data)  # a hash of the text, the path included
    return hashlib.sha256(data).hexdigest()


def tree_digests(out: Path) -> dict[str, str]:
    """The digest of every file under the output directory `out` (a case's `<root>/out`)."""
    return {
        str(p.relative_to(out)): digest(p.name, p.read_bytes(), out.parent)
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def store_digests(ctx: Context, url: str) -> dict[str, str]:
    assert ctx.s3 is not None
    fs = ctx.s3.filesystem()
    fs.invalidate_cache()
    prefix = url.removeprefix("s3://")
    return {
        path[len(prefix) + 1 :]: digest(path.rsplit("/", 1)[-1], fs.cat_file(path), ctx.root)
        for path in sorted(fs.find(prefix))
    }


# Each case builds its inputs under ctx.root and returns the digests of what the build wrote.


def folder_one_worker(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in")
    build(str(source), str(ctx.root / "out"), "--workers", "1", *SMALL, "--shuffle-seed", "7")
    return tree_digests(ctx.root / "out")


def folder_two_workers_tfrecord_resized(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in")
    build(
        str(source),
        str(ctx.root / "out"),
        "--workers",
        "2",
        *SMALL,
        "--shard-format",
        "tfrecord",
        "--max-side",
        "48",
        "--quality",
        "80",
    )
    return tree_digests(ctx.root / "out")


def folder_baseline_decode_check(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in", progressive=True)
    build(str(source), str(ctx.root / "out"), "--workers", "1", "--baseline", "--check", "decode")
    return tree_digests(ctx.root / "out")


def list_jsonl_every_field(ctx: Context) -> dict[str, str]:
    listing, schema = inputs.list_jsonl(ctx.root / "in")
    build(
        str(listing),
        str(ctx.root / "out"),
        "--workers",
        "2",
        "--shard-size",
        "30000",
        "--schema",
        str(schema),
        "--dictionary-size",
        "4KiB",
    )
    return tree_digests(ctx.root / "out")


def list_csv(ctx: Context) -> dict[str, str]:
    listing = inputs.list_csv(ctx.root / "in")
    build(str(listing), str(ctx.root / "out"), "--workers", "1", "--shuffle-seed", "3")
    return tree_digests(ctx.root / "out")


def webdataset_tars(ctx: Context) -> dict[str, str]:
    source = inputs.wds_tars(ctx.root / "in")
    build(str(source), str(ctx.root / "out"), "--format", "wds", "--workers", "2", *SMALL)
    return tree_digests(ctx.root / "out")


def tfrecord_files(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in")
    build(
        str(source),
        str(ctx.root / "records"),
        "--workers",
        "1",
        "--shard-format",
        "tfrecord",
        *SMALL,
    )
    build(
        str(ctx.root / "records" / "shards"),
        str(ctx.root / "out"),
        "--format",
        "tfrecord",
        "--workers",
        "2",
    )
    return tree_digests(ctx.root / "out")


def parquet_file(ctx: Context) -> dict[str, str]:
    source = inputs.parquet_file(ctx.root / "in")
    build(str(source), str(ctx.root / "out"), "--workers", "1", *SMALL)
    return tree_digests(ctx.root / "out")


def coco_with_masks(ctx: Context) -> dict[str, str]:
    listing, images = inputs.coco_files(ctx.root / "in")
    build(str(listing), str(ctx.root / "out"), "--images", str(images), "--masks", "--workers", "2")
    return tree_digests(ctx.root / "out")


def folder_into_store(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in")
    url = f"s3://{ctx.bucket('golden-out-a')}/ds"
    build(str(source), url, "--workers", "2", *SMALL, "--staging", str(ctx.root / "staging"))
    return store_digests(ctx, url)


def store_folder_to_directory(ctx: Context) -> dict[str, str]:
    source = f"s3://{ctx.bucket('golden-in-a')}/folder"
    ctx.upload(inputs.image_folder(ctx.root / "in"), source)
    build(source + "/", str(ctx.root / "out"), "--workers", "1", *SMALL)
    return tree_digests(ctx.root / "out")


def store_tars_into_store(ctx: Context) -> dict[str, str]:
    base = f"s3://{ctx.bucket('golden-in-b')}/wds"
    ctx.upload(inputs.wds_tars(ctx.root / "in"), base)
    url = f"s3://{ctx.bucket('golden-out-b')}/ds"
    build(
        f"{base}/part-{{000000..000001}}.tar",
        url,
        "--format",
        "wds",
        "--workers",
        "1",
        "--staging",
        str(ctx.root / "staging"),
    )
    return store_digests(ctx, url)


def dask_to_directory(ctx: Context) -> dict[str, str]:
    assert ctx.scheduler is not None
    source = inputs.image_folder(ctx.root / "in")
    build(
        str(source), str(ctx.root / "out"), "--scheduler", ctx.scheduler, *SMALL, "--max-side", "56"
    )
    return tree_digests(ctx.root / "out")


def dask_into_store(ctx: Context) -> dict[str, str]:
    assert ctx.scheduler is not None
    source = inputs.image_folder(ctx.root / "in")
    url = f"s3://{ctx.bucket('golden-out-c')}/ds"
    build(
        str(source),
        url,
        "--scheduler",
        ctx.scheduler,
        *SMALL,
        "--staging",
        str(ctx.root / "staging"),
    )
    return store_digests(ctx, url)


def node_shares_then_resume(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in")
    out = str(ctx.root / "out")
    for rank in ("0", "1"):
        build(str(source), out, "--workers", "1", *SMALL, "--num-nodes", "2", "--node-rank", rank)
    build(str(source), out, "--workers", "1", *SMALL, "--num-nodes", "2", "--resume")
    return tree_digests(ctx.root / "out")


def node_shares_into_store(ctx: Context) -> dict[str, str]:
    source = inputs.image_folder(ctx.root / "in")
    url = f"s3://{ctx.bucket('golden-out-d')}/ds"
    for rank in ("0", "1"):
        build(
            str(source),
            url,
            "--workers",
            "1",
            *SMALL,
            "--num-nodes",
            "2",
            "--node-rank",
            rank,
            "--staging",
            str(ctx.root / f"plan-{rank}"),
        )
    build(
        str(source),
        url,
        "--workers",
        "1",
        *SMALL,
        "--num-nodes",
        "2",
        "--resume",
        "--staging",
        str(ctx.root / "finish"),
    )
    return store_digests(ctx, url)


Case = Callable[[Context], dict[str, str]]
LOCAL: list[Case] = [
    folder_one_worker,
    folder_two_workers_tfrecord_resized,
    folder_baseline_decode_check,
    list_jsonl_every_field,
    list_csv,
    webdataset_tars,
    tfrecord_files,
    parquet_file,
    coco_with_masks,
    node_shares_then_resume,
]
STORE: list[Case] = [
    folder_into_store,
    store_folder_to_directory,
    store_tars_into_store,
    node_shares_into_store,
]
DASK: list[Case] = [dask_to_directory, dask_into_store]


def expected(case: str) -> dict[str, str]:
    table: dict[str, Any] = json.loads(DIGESTS.read_text(encoding="utf-8"))
    digests: dict[str, str] = table["cases"][case]
    return digests


def check(case: Case, ctx: Context) -> None:
    ctx.root.mkdir(parents=True, exist_ok=True)
    found = case(ctx)
    assert found, f"{case.__name__}: the build wrote nothing"
    target = os.environ.get(WRITE_ENV)
    if target:
        path = Path(target)
        table = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"cases": {}}
        table["cases"][case.__name__] = found
        path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    want = expected(case.__name__)
    changed = sorted(
        name for name in want.keys() | found.keys() if want.get(name) != found.get(name)
    )
    assert not changed, f"{case.__name__}: these outputs differ from the golden build: {changed}"


@pytest.mark.parametrize("case", LOCAL, ids=lambda c: c.__name__)
def test_local_builds_are_byte_identical(case: Case, tmp_path: Path) -> None:
    check(case, Context(tmp_path))


@pytest.mark.parametrize("case", STORE, ids=lambda c: c.__name__)
def test_store_builds_are_byte_identical(case: Case, tmp_path: Path, s3_env: S3Server) -> None:
    check(case, Context(tmp_path, s3=s3_env))


def test_dask_builds_are_byte_identical(
    tmp_path: Path, s3_env: S3Server, make_dask_cluster: Callable[..., Any]
) -> None:
    # The workers are started here, after s3_env, so that they see the server's credentials.
    cluster = make_dask_cluster()
    for case in DASK:
        check(case, Context(tmp_path / case.__name__, s3=s3_env, scheduler=cluster.address))


def test_every_case_has_digests() -> None:
    cases = {c.__name__ for c in (*LOCAL, *STORE, *DASK)}
    if os.environ.get(WRITE_ENV):
        pytest.skip("writing digests")
    table = json.loads(DIGESTS.read_text(encoding="utf-8"))
    assert set(table["cases"]) == cases
