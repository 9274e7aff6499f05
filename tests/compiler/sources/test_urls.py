"""webdataset sources given as webdataset URLs: brace patterns, `pipe:` commands, http and S3
(servers on 127.0.0.1), the copies of remote shards in the build directory, webdataset's
grouping, and the errors."""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import webdataset
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.build_dir import BUILD_DIR
from fastpack.compiler.jobs.inputs import InputReader
from fastpack.compiler.planning.make_plan import make_plan
from fastpack.compiler.planning.plan_store import Plan
from fastpack.compiler.sources import urls as wds_urls
from fastpack.compiler.sources.detect import detect_kind
from fastpack.compiler.sources.urls import MissingSourcePackageError
from fastpack.compiler.sources.wds.source import samples

from fastpack.cli import main
from tests.compiler._helpers import read_dataset, tree_bytes
from tests.compiler.sources.test_sources import plan_rows, write_tar
from tests.conftest import jpeg_bytes, png_bytes
from tests.s3_server import S3Server

OPTIONS = BuildOptions(workers=1, shard_size=2500, progress=False)
PATTERN = "shards-{000000..000002}.tar"


def make_shards(root: Path) -> Path:
    """Three tars of four samples each, two classes."""
    for t in range(3):
        members = []
        for s in range(4):
            key = f"{t}{s:03d}"
            members += [
                (f"{key}.jpg", jpeg_bytes(24, 32, seed=10 * t + s)),
                (f"{key}.cls", b"dog" if s % 2 else b"cat"),
            ]
        write_tar(root / f"shards-{t:06d}.tar", members)
    return root


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    return make_shards(tmp_path / "shards")


@pytest.fixture
def from_directory(shards: Path, tmp_path: Path) -> dict[str, bytes]:
    """The dataset built from the directory of the three tars, file by file."""
    out = tmp_path / "from-dir"
    build(shards, out, OPTIONS)
    return tree_bytes(out)


def test_brace_pattern_builds_the_same_dataset_as_the_directory(
    shards: Path, from_directory: dict[str, bytes], tmp_path: Path
) -> None:
    pattern = str(shards / PATTERN)
    assert detect_kind(pattern, "auto") == "wds"
    out = tmp_path / "from-pattern"
    build(pattern, out, OPTIONS)
    assert tree_bytes(out) == from_directory
    stored = read_dataset(out)
    assert [s.source for s in stored] == [
        f"shards-{t:06d}.tar:{t}{s:03d}" for t in range(3) for s in range(4)
    ]
    assert len({name for name in from_directory if name.endswith(".tar")}) > 2  # several shards


def test_pipe_shards_are_copied_into_the_build_dir_and_gone_after(
    shards: Path, from_directory: dict[str, bytes], tmp_path: Path
) -> None:
    source = f"pipe:cat {shards}/{PATTERN}"
    assert detect_kind(source, "auto") == "wds"
    out = tmp_path / "from-pipe"
    build(source, out, OPTIONS)
    assert tree_bytes(out) == from_directory
    assert not (out / BUILD_DIR).exists()


def test_pipe_copy_is_read_by_offset_and_reused_once_complete(shards: Path, tmp_path: Path) -> None:
    tar = shards / "shards-000001.tar"
    original = tar.read_bytes()
    source, directory = f"pipe:cat {tar}", tmp_path / "build"
    directory.mkdir()
    meta = make_plan(source, "wds", directory, shard_size=1 << 20, shuffle_seed=None)
    copies = directory / "sources"
    assert sorted(p.name for p in copies.iterdir()) == ["000000.tar"]
    assert (copies / "000000.tar").read_bytes() == original
    assert (meta.root, meta.containers) == (str(copies), ("000000.tar",))

    tar.unlink()  # a second planning (a resume) reads the complete copy, not the command
    (directory / "plan.json").unlink()
    again = make_plan(source, "wds", directory, shard_size=1 << 20, shuffle_seed=None)
    assert again == meta
    plan = Plan(directory)
    rows = plan.inputs(0, meta.num_inputs)
    with InputReader(meta) as reader:
        images = [
            reader.read(b"", c, o, s)
            for c, o, s in zip(
                plan.column("container", rows).tolist(),
                plan.column("offset", rows).tolist(),
                plan.column("size", rows).tolist(),
                strict=True,
            )
        ]
    assert images == [jpeg_bytes(24, 32, seed=10 + s) for s in range(4)]
    assert [s.decode() for s in plan.sources(rows)] == [
        f"shards-000001.tar:1{s:03d}" for s in range(4)
    ]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("false", r"the command exited with status 1"),
        ("cat {tar} && exit 4", r"the command exited with status 4"),
        ("head -c 3000 {tar}; exit 3", r"the command exited with status 3"),
        ("cat {tar}.missing", r"the command exited with status 1"),
        ("kill -9 $$", r"the command was killed by signal 9"),
    ],
)
def test_failing_pipe_command(shards: Path, tmp_path: Path, command: str, message: str) -> None:
    source = "pipe:" + command.format(tar=shards / "shards-000000.tar")
    with pytest.raises(SourceError, match=f"^{re.escape(source)}: {message}"):
        build(source, tmp_path / "out", OPTIONS)


@pytest.mark.parametrize(
    ("form", "length", "message"),
    [
        ("pipe", 3000, r"not a readable tar \(unexpected end of data\)"),
        ("path", 3000, r"not a readable tar \(unexpected end of data\)"),
        # after a whole member: all that tells a cut from an end is the end-of-archive block
        ("pipe", 5120, r"cut off at byte 5120: no tar end-of-archive block"),
        ("path", 5120, r"cut off at byte 5120: no tar end-of-archive block"),
    ],
)
def test_cut_off_tar(shards: Path, tmp_path: Path, form: str, length: int, message: str) -> None:
    tar = shards / "shards-000000.tar"
    with tarfile.open(tar) as archive:  # the second sample's header starts at byte 5120
        assert archive.getmembers()[2].offset == 5120
    if form == "pipe":
        source = f"pipe:head -c {length} {tar}"
    else:
        source = str(tmp_path / "cut.tar")
        Path(source).write_bytes(tar.read_bytes()[:length])
    with pytest.raises(SourceError, match=f"^{re.escape(source)}: {message}"):
        build(source, tmp_path / "out", OPTIONS)


def test_pattern_that_matches_no_file(shards: Path, tmp_path: Path) -> None:
    pattern = str(tmp_path / "none-{0..2}.tar")
    out = tmp_path / "out"
    with pytest.raises(SourceError, match=f"^{re.escape(pattern)}: matches no file$"):
        build(pattern, out, OPTIONS)
    assert not out.exists()
    partly = str(shards / "shards-{000000..000003}.tar")
    with pytest.raises(
        SourceError, match=r"1 of its 4 shards are not files: .*shards-000003\.tar$"
    ):
        detect_kind(partly, "auto")


def test_url_detection_and_format_errors(tmp_path: Path) -> None:
    assert detect_kind("pipe:cat x", "auto") == "wds"
    assert detect_kind("s3://bucket/train-{0..9}.tar", "auto") == "wds"
    assert detect_kind("https://host/data/train.tar", "auto") == "wds"
    assert detect_kind("s3://bucket/train-0.bin", "wds") == "wds"
    with pytest.raises(SourceError, match=r"^s3://bucket/x\.txt: unknown source format"):
        detect_kind("s3://bucket/x.txt", "auto")
    with pytest.raises(SourceError, match=r"^pipe:cat x: a folder source must be a local path"):
        detect_kind("pipe:cat x", "folder")
    with pytest.raises(SourceError, match=r"^s3://b/\$\{NO_SUCH\}\.tar: cannot expand"):
        detect_kind("s3://b/${NO_SUCH}.tar", "auto")  # webdataset reads $WDS_NO_SUCH
    tar = write_tar(tmp_path / "t.tar", [("a.jpg", jpeg_bytes(8, 8)), ("a.cls", b"1")])
    _, rows = plan_rows(f"file://{tar}", tmp_path)
    assert rows == [("t.tar:a", 1, len(jpeg_bytes(8, 8)))]
    braced = tmp_path / "{a,b}"  # an existing path is a path, braces or not
    (braced / "c").mkdir(parents=True)
    (braced / "c" / "1.jpg").write_bytes(jpeg_bytes(8, 8))
    assert detect_kind(braced, "auto") == "folder"


def damaged(path: Path) -> int:
    """Break the header checksum of the tar's second member; its header's offset."""
    with tarfile.open(path) as tar:
        second = tar.getmembers()[1]
    data = bytearray(path.read_bytes())
    data[second.offset + 148] ^= 0x11
    path.write_bytes(bytes(data))
    return second.offset


@pytest.mark.parametrize("form", ["path", "pipe"])
def test_damaged_member_header(shards: Path, tmp_path: Path, form: str) -> None:
    tar = shards / "shards-000000.tar"
    offset = damaged(tar)
    source = str(tar) if form == "path" else f"pipe:cat {tar}"
    with pytest.raises(
        SourceError, match=rf": byte {offset} is not a valid tar member header"
    ) as caught:
        build(source, tmp_path / "out", OPTIONS)
    assert str(caught.value).startswith(f"{source}: ")


# --- webdataset's grouping -----------------------------------------------------------------


def grouping_tars(root: Path) -> list[Path]:
    jpeg, png = jpeg_bytes(16, 16), png_bytes(16, 16)
    first = write_tar(
        root / "g0.tar",
        [
            ("a/b.c.seg.png", png),
            ("a/b.jpg", jpeg),
            ("a/b.cls", b"1"),
            ("a/b.c.d.json", b"{}"),
            ("x.y/z.JPG", jpeg),
            ("x.y/z.cls", b"2"),
            ("x.y/z.txt", b"t"),
            ("__skipped__", b"metadata"),
            ("noextension", b"?"),
            ("m/__k__/q.png", png),
            ("m/__k__/q.cls", b"2"),
            ("s.jpg", jpeg),
            ("s.cls", b"3"),
        ],
    )
    with tarfile.open(first, "a") as tar:  # a directory entry: not a member of any sample
        info = tarfile.TarInfo("dir.d")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    second = write_tar(
        root / "g1.tar",
        [  # key `s` again: a new sample in a new tar
            ("s.cls", b"4"),
            ("s.webp.seg.png", png),
            ("s.png", png),
            ("k.l.jpg", jpeg),
            ("k.cls", b"5"),
            ("k.jpg", jpeg),
        ],
    )
    return [first, second]


def webdataset_groups(tars: list[Path]) -> list[tuple[str, set[str]]]:
    dataset = webdataset.WebDataset([str(t) for t in tars], shardshuffle=False, empty_check=False)
    return [
        (sample["__key__"], {k for k in sample if not k.startswith("__")}) for sample in dataset
    ]


def test_grouping_is_webdatasets(tmp_path: Path) -> None:
    tars = grouping_tars(tmp_path / "g")
    ours = []
    for path in tars:
        with tarfile.open(path) as tar:
            ours += [(s.key, set(s.members)) for s in samples(tar, str(path))]
    expected = webdataset_groups(tars)
    assert ours == expected
    assert ("a/b", {"c.seg.png", "jpg", "cls", "c.d.json"}) in ours
    assert ("x.y/z", {"jpg", "cls", "txt"}) in ours
    assert [key for key, _ in ours].count("s") == 2
    _, rows = plan_rows(tmp_path / "g", tmp_path)
    assert [source for source, _, _ in rows] == [
        "g0.tar:a/b",
        "g0.tar:x.y/z",
        "g0.tar:m/__k__/q",
        "g0.tar:s",
        "g1.tar:s",
        "g1.tar:k",
    ]


# --- http and S3 ---------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _RangeHandler(_QuietHandler):
    """Answers `Range: bytes=a-b` with 206 and those bytes, as object stores and CDNs do."""

    def do_GET(self) -> None:
        asked = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        path = Path(self.translate_path(self.path))
        if asked is None or not path.is_file():
            super().do_GET()
            return
        data = path.read_bytes()
        start = int(asked.group(1))
        end = min(int(asked.group(2) or len(data) - 1), len(data) - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end + 1 - start))
        self.end_headers()
        self.wfile.write(data[start : end + 1])


@contextlib.contextmanager
def serving(shards: Path, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[str]:
    """An http server on 127.0.0.1 that serves the shards directory with `handler`."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(shards))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture
def http_root(shards: Path) -> Iterator[str]:
    with serving(shards, _RangeHandler) as root:
        yield root


def test_http_brace_pattern_without_any_system_tool(
    http_root: str,
    from_directory: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """http shards are read through fastpack's storage (fsspec, ranged GETs), not curl: the
    build works with nothing on PATH."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "from-http"
    build(f"{http_root}/{PATTERN}", out, OPTIONS)
    assert tree_bytes(out) == from_directory
    missing = f"{http_root}/missing.tar"
    with pytest.raises(SourceError, match=rf"^{missing}: not found$"):
        build(missing, tmp_path / "out2", OPTIONS)


def test_a_server_that_ignores_byte_ranges_is_an_error_naming_the_shard(
    shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole body where a range was asked for would be read as the wrong bytes: refused."""
    monkeypatch.setattr(wds_urls, "_CHUNK_BYTES", 1000)  # several ranges per shard
    with (
        serving(shards, _QuietHandler) as root,
        pytest.raises(
            SourceError,
            match=rf"^{root}/shards-000000.tar: cannot read: .*does the server answer byte ranges",
        ),
    ):
        build(f"{root}/{PATTERN}", tmp_path / "out", OPTIONS)


def test_a_gs_url_without_gcsfs_is_refused_at_once_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No gsutil: gs:// goes through fsspec's gcsfs, and without it the build stops at once."""
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # as if not installed
    with pytest.raises(MissingSourcePackageError, match=r"^gs://b/shards/a.tar: .*gcsfs") as e:
        build("gs://b/shards/a.tar", tmp_path / "out", OPTIONS)
    assert isinstance(e.value, SourceError | ImportError)


def test_s3_brace_pattern(
    shards: Path,
    from_directory: dict[str, bytes],
    s3_env: S3Server,
    s3_bucket: str,
    tmp_path: Path,
) -> None:
    fs = s3_env.filesystem()
    for tar in sorted(shards.glob("*.tar")):
        fs.put_file(str(tar), f"{s3_bucket}/train/{tar.name}")
    out = tmp_path / "from-s3"
    build(f"s3://{s3_bucket}/train/{PATTERN}", out, OPTIONS)
    assert tree_bytes(out) == from_directory
    missing = f"s3://{s3_bucket}/train/shards-000009.tar"
    with pytest.raises(SourceError, match=rf"^{missing}: not found$"):
        build(missing, tmp_path / "out2", OPTIONS)


def test_cli_builds_from_a_pipe_url(
    shards: Path, from_directory: dict[str, bytes], tmp_path: Path
) -> None:
    out = tmp_path / "from-cli"
    argv = [
        "build",
        f"pipe:cat {shards}/{PATTERN}",
        str(out),
        "--workers",
        "1",
        "--shard-size",
        "2500",
        "--no-progress",
    ]
    assert main(argv) == 0
    assert tree_bytes(out) == from_directory
