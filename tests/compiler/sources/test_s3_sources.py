"""ImageFolder prefixes and list files on a real S3 server (SeaweedFS on 127.0.0.1): detection,
listing page by page, the local walk's order, estimated sizes, inputs read through
`fastpack.storage`, and the errors that name the URL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.images.policy import Reject
from fastpack.compiler.jobs.inputs import InputReader
from fastpack.compiler.planning.make_plan import make_plan, samples_per_shard
from fastpack.compiler.planning.plan_store import Plan, PlanMeta
from fastpack.compiler.sources.detect import detect_kind
from fastpack.compiler.sources.folder import walk_order
from fastpack.compiler.sources.list_file import input as list_input
from fastpack.compiler.sources.list_file import url_sizes
from fastpack.formats import MANIFEST_NAME
from fastpack.storage import FetchError, RetryPolicy, listing, location
from fastpack.storage.url_paths import resolve_url
from fastpack.storage.urls import filesystem

from tests.compiler._helpers import read_dataset, tree_bytes
from tests.conftest import jpeg_bytes, png_bytes
from tests.s3_server import S3Server
from tests.storage._flaky import Flaky

QUIET: dict[str, Any] = {"workers": 1, "progress": False}
OPTIONS = BuildOptions(shard_size=6000, **QUIET)


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def upload(s3: S3Server, local: Path, url: str) -> None:
    """Every file under `local` to the prefix `url`, at its relative path."""
    fs, prefix = s3.filesystem(), url.removeprefix("s3://")
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{prefix}/{path.relative_to(local)}", path.read_bytes())


def s3_fs(url: str) -> Any:
    """The filesystem this process reads `url` through (credentials from the environment)."""
    return filesystem(url, {})[0]


def counted(monkeypatch: pytest.MonkeyPatch, url: str, method: str, failures: int = 0) -> Flaky:
    wrapper = Flaky(getattr(s3_fs(url), method), failures)
    monkeypatch.setattr(s3_fs(url), method, wrapper)
    return wrapper


def listings(monkeypatch: pytest.MonkeyPatch, url: str) -> list[tuple[str, str]]:
    """The (prefix, delimiter) of each ListObjectsV2 request this process makes for `url`."""
    fs, requests = s3_fs(url), []
    call_s3 = fs.call_s3

    def recorded(method: str, **kwargs: Any) -> Any:
        requests.append((kwargs["Prefix"], kwargs.get("Delimiter", "")))
        return call_s3(method, **kwargs)

    monkeypatch.setattr(fs, "call_s3", recorded)
    return requests


def tricky_folder(root: Path) -> Path:
    """An ImageFolder whose S3 key order is not its walk order (`x/` beside `x.jpg`, `x-1.jpg`,
    `x 2.jpg`; classes `a`, `a-b`, `a.b`), with what a walk leaves out: hidden names, files that
    are not images, files at the top."""
    images = {
        "a/x.jpg": jpeg_bytes(40, 48, seed=1),
        "a/x/y.jpg": jpeg_bytes(36, 40, seed=2),
        "a/x/y/z.jpg": jpeg_bytes(30, 44, seed=3),
        "a/x-1.jpg": jpeg_bytes(52, 40, seed=4),
        "a/x 2.jpg": jpeg_bytes(44, 60, seed=5),
        "a/x.b/w.JPG": jpeg_bytes(48, 48, seed=6),
        "a/deep/er/p.png": png_bytes(32, 36, seed=7),
        "a-b/1.jpg": jpeg_bytes(40, 40, seed=8),
        "a.b/2.jpg": jpeg_bytes(50, 30, seed=9),
        "b/k.jpeg": jpeg_bytes(30, 30, seed=10),
        "b/\u00e9t\u00e9.jpg": jpeg_bytes(34, 30, seed=11),
    }
    left_out = {
        "a/.hidden.jpg": jpeg_bytes(20, 20, seed=12),
        "a/.h/q.jpg": jpeg_bytes(20, 20, seed=13),
        "a/notes.txt": b"not an image",
        ".cache/c/3.jpg": jpeg_bytes(20, 20, seed=14),
        "top.jpg": jpeg_bytes(20, 20, seed=15),
    }
    for name, data in {**images, **left_out}.items():
        write(root / name, data)
    return root


# --- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "source_format", "kind"),
    [
        ("s3://b/images/", "auto", "folder"),
        ("s3://b/images", "folder", "folder"),
        ("s3://b/", "auto", "folder"),
        ("s3://b/lists/train.csv", "auto", "list"),
        ("gs://b/lists/train.JSONL", "auto", "list"),
        ("s3://b/lists/train.tsv", "list", "list"),
        ("s3://b/shards/train-0.tar", "auto", "wds"),
        ("s3://b/shards/train-{0..3}.tar", "auto", "wds"),
        ("s3://b/train.tfrecord", "auto", "tfrecord"),
        ("s3://b/data.csv/", "auto", "folder"),
    ],
)
def test_detection_of_urls(source: str, source_format: str, kind: str) -> None:
    assert detect_kind(source, source_format) == kind


@pytest.mark.parametrize(
    ("source", "source_format", "message"),
    [
        ("s3://b/images", "auto", r"^s3://b/images: unknown source format; .* end in / \(an "),
        ("s3://b/x.txt", "list", r"^s3://b/x\.txt: a list source must be the URL of a list "),
        ("s3://b/x.json", "coco", r"^s3://b/x\.json: a coco source must be a local path"),
    ],
)
def test_detection_errors_of_urls(source: str, source_format: str, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        detect_kind(source, source_format)


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("img/a.jpg", "s3://b/lists/img/a.jpg"),
        ("./img/a.jpg", "s3://b/lists/img/a.jpg"),
        ("../img/a.jpg", "s3://b/img/a.jpg"),
        ("../../../a.jpg", "s3://b/a.jpg"),
        ("/img/a.jpg", "s3://b/img/a.jpg"),
        ("s3://other/a.jpg", "s3://other/a.jpg"),
        ("a//b.jpg", "s3://b/lists/a//b.jpg"),
    ],
)
def test_list_paths_resolve_as_relative_urls(path: str, url: str) -> None:
    assert resolve_url("s3://b/lists", path) == url
    assert resolve_url("s3://b/lists/", path) == url


# --- ImageFolder prefixes ---------------------------------------------------------------------


def test_an_image_folder_on_s3_builds_the_same_bytes_as_the_local_tree(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tricky_folder(tmp_path / "src")
    bucket = s3_env.new_bucket()
    url = f"s3://{bucket}/data/train"
    upload(s3_env, source, url)
    build(source, tmp_path / "local", OPTIONS)
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)  # many pages
    monkeypatch.setattr(walk_order, "HOLD", 1)  # a probe as soon as two names wait
    listed = listings(monkeypatch, url)
    heads = counted(monkeypatch, url, "info")
    in_two_workers = BuildOptions(shard_size=6000, workers=2, progress=False)
    summary = build(url + "/", tmp_path / "remote", in_two_workers)  # each reads from S3
    assert tree_bytes(tmp_path / "remote") == tree_bytes(tmp_path / "local")
    assert (summary.samples, summary.rejected) == (11, 0)
    assert summary.shards > 1
    samples = read_dataset(tmp_path / "remote")
    assert [s.source for s in samples][:7] == [
        "a/deep/er/p.png",
        "a/x/y/z.jpg",
        "a/x/y.jpg",
        "a/x 2.jpg",
        "a/x-1.jpg",
        "a/x.b/w.JPG",
        "a/x.jpg",
    ]
    assert listed.count(("data/train/", "/")) == 3  # 5 class folders and top.jpg, 2 a page
    assert listed.count(("data/train/a/", "")) == 5  # class a's 10 objects, 2 a page
    assert heads.calls == 0  # sizes from the listing


def test_a_folder_prefix_without_a_slash_needs_the_folder_format(
    s3_env: S3Server, tmp_path: Path
) -> None:
    url = f"s3://{s3_env.new_bucket()}/train"
    upload(s3_env, tricky_folder(tmp_path / "src"), url)
    summary = build(url, tmp_path / "out", BuildOptions(source_format="folder", **QUIET))
    assert summary.samples == 11


def test_sources_that_are_not_there_name_the_url(s3_env: S3Server, tmp_path: Path) -> None:
    bucket = s3_env.new_bucket()
    s3_env.filesystem().pipe_file(f"{bucket}/flat/a.jpg", jpeg_bytes(16, 16))
    cases = {
        f"s3://{bucket}/empty/": "no objects under this prefix",
        f"s3://{bucket}/flat/": "no class folders under this prefix",
        "s3://no-such-bucket-here/x/": "cannot list: ",
        f"s3://{bucket}/lists/train.csv": "list file not found",
    }
    for n, (url, message) in enumerate(cases.items()):
        with pytest.raises(SourceError, match=f"^{re.escape(url)}: {message}"):
            build(url, tmp_path / f"out{n}", BuildOptions(**QUIET))


# --- list files -------------------------------------------------------------------------------


def list_tree(root: Path, bucket: str) -> Path:
    """`lists/train.csv` naming images under `images/` by `../`, from the bucket's top, and by a
    whole URL (read from the bucket in both builds), with class-name labels."""
    lines = ["path,label"]
    for i in range(14):
        cls = ("cat", "dog", "owl")[i % 3]
        name = f"images/{cls}/{i:02d}.{'png' if i == 5 else 'jpg'}"
        data = png_bytes(30, 34, seed=i) if i == 5 else jpeg_bytes(30 + 3 * i, 40, seed=i)
        write(root / name, data)
        lines.append(f"../{name},{cls}" if i != 9 else f"s3://{bucket}/{name},{cls}")
    write(root / "lists/train.csv", ("\n".join(lines) + "\n").encode())
    return root / "lists/train.csv"


def same_layout(local_list: Path, remote: Path) -> BuildOptions:
    """Options for a local build of `local_list` whose shards hold as many samples as those of
    the build in `remote` (from estimated sizes)."""
    wanted = json.loads((remote / MANIFEST_NAME).read_text())["build"]["samples_per_shard"]
    rows = local_list.read_text().splitlines()[1:]
    paths = [local_list.parent / r.split(",")[0] for r in rows if not r.startswith("s3://")]
    total = sum(p.stat().st_size for p in paths)
    shard_size = 1
    while samples_per_shard(len(rows), total, shard_size) < wanted:
        shard_size += 1
    assert samples_per_shard(len(rows), total, shard_size) == wanted
    return BuildOptions(shard_size=shard_size, **QUIET)


def test_a_list_on_s3_builds_the_same_bytes_as_the_local_list(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = s3_env.new_bucket()
    local_list = list_tree(tmp_path / "src", bucket)
    upload(s3_env, tmp_path / "src", f"s3://{bucket}")
    monkeypatch.setattr(list_input, "CHUNK_BYTES", 64)  # the list read in many ranged reads
    monkeypatch.setattr(url_sizes, "SIZE_SAMPLE", 4)
    heads = counted(monkeypatch, f"s3://{bucket}", "info")
    summary = build(f"s3://{bucket}/lists/train.csv", tmp_path / "remote", OPTIONS)
    assert (summary.samples, summary.rejected) == (14, 0)
    assert summary.shards > 1
    assert heads.calls == 2 + 4  # the list's size (its survey, its rows), the first 4 images'
    build(local_list, tmp_path / "local", same_layout(local_list, tmp_path / "remote"))
    remote, local = tree_bytes(tmp_path / "remote"), tree_bytes(tmp_path / "local")
    manifests = [json.loads(files.pop(MANIFEST_NAME)) for files in (remote, local)]
    assert remote == local  # shards, their DALI indexes and the index
    for manifest in manifests:
        del manifest["build"]["shard_size"]
        del manifest["sha256"]  # of the text, which differs by the shard size
    assert manifests[0] == manifests[1]
    samples = read_dataset(tmp_path / "remote")
    assert [s.source for s in samples][9] == f"s3://{bucket}/images/cat/09.jpg"
    assert [s.label for s in samples][:3] == [0, 1, 2]


def test_list_rows_get_the_mean_size_of_the_first_rows(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = s3_env.new_bucket()
    fs = s3_env.filesystem()
    fs.pipe_file(f"{bucket}/a.jpg", b"x" * 100)
    fs.pipe_file(f"{bucket}/b.jpg", b"x" * 301)
    lines = "".join(f"{name}.jpg,1\n" for name in "abcab")  # c.jpg is missing: counts 0
    fs.pipe_file(f"{bucket}/l.csv", lines.encode())
    monkeypatch.setattr(url_sizes, "SIZE_SAMPLE", 3)
    meta = make_plan(f"s3://{bucket}/l.csv", "list", tmp_path, shard_size=1000, shuffle_seed=None)
    plan = Plan(tmp_path)
    sizes = plan.column("size", plan.inputs(0, meta.num_inputs)).tolist()
    assert sizes == [(100 + 301 + 0 + 1) // 3] * 5
    assert (meta.root, meta.total_size) == (f"s3://{bucket}", 5 * 134)


def test_a_missing_image_object_is_a_reject_naming_it(s3_env: S3Server, tmp_path: Path) -> None:
    bucket = s3_env.new_bucket()
    fs = s3_env.filesystem()
    fs.pipe_file(f"{bucket}/img/a.jpg", jpeg_bytes(20, 20))
    fs.pipe_file(
        f"{bucket}/lists/l.jsonl",
        b'{"path": "../img/a.jpg", "label": 0}\n{"path": "../img/gone.jpg", "label": 1}\n',
    )
    summary = build(f"s3://{bucket}/lists/l.jsonl", tmp_path / "out", BuildOptions(**QUIET))
    assert (summary.samples, summary.rejected) == (1, 1)
    lines = (tmp_path / "out/rejects.jsonl").read_text().splitlines()
    (reject,) = [json.loads(line) for line in lines]
    assert reject["path"] == "../img/gone.jpg"
    assert reject["reason"] == f"cannot read: s3://{bucket}/img/gone.jpg: not found"


def test_a_list_that_is_not_utf8_names_the_url(s3_env: S3Server, tmp_path: Path) -> None:
    bucket = s3_env.new_bucket()
    s3_env.filesystem().pipe_file(f"{bucket}/l.csv", b"a.jpg,1\nb\xff.jpg,2\n")
    with pytest.raises(SourceError, match=rf"^s3://{bucket}/l\.csv: not UTF-8 text after line"):
        build(f"s3://{bucket}/l.csv", tmp_path / "out", BuildOptions(**QUIET))


# --- reading inputs at a URL ------------------------------------------------------------------


def url_meta(root: str) -> PlanMeta:
    return PlanMeta(
        kind="folder",
        root=root,
        containers=(),
        classes=(),
        num_inputs=1,
        total_size=0,
        samples_per_shard=1,
        num_shards=1,
        key_width=9,
        shuffled=False,
    )


def test_inputs_at_a_url_are_read_rejected_or_fail(
    s3_env: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = s3_env.new_bucket()
    s3_env.filesystem().pipe_file(f"{bucket}/ds/cls/a.jpg", b"jpeg bytes")
    monkeypatch.setattr(location, "RetryPolicy", lambda: RetryPolicy(attempts=2, backoff_s=0))
    with InputReader(url_meta(f"s3://{bucket}/ds")) as reader:
        assert reader.read(b"cls/a.jpg", 0, 0, 0) == b"jpeg bytes"
        assert reader.read_path(f"s3://{bucket}/ds/cls/a.jpg") == b"jpeg bytes"
        missing = reader.read(b"cls/b.jpg", 0, 0, 0)
        assert missing == Reject(f"cannot read: s3://{bucket}/ds/cls/b.jpg: not found")
        cat = counted(monkeypatch, f"s3://{bucket}", "cat_file", failures=100)
        with pytest.raises(FetchError, match=rf"^s3://{bucket}/ds/cls/a\.jpg: unavailable after 2"):
            reader.read(b"cls/a.jpg", 0, 0, 0)
        assert cat.calls == 2
