"""The command line with a dataset URL: build to, inspect and verify a bucket on a real S3 server
(SeaweedFS on 127.0.0.1), endpoint and credentials from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastpack.formats import MANIFEST_NAME

from fastpack.cli import main
from tests.s3_server import S3Server

from .conftest import CLASSES, PER_CLASS


@pytest.fixture
def published(
    built: tuple[Path, Path], s3_env: S3Server, s3_bucket: str, tmp_path: Path
) -> tuple[str, Path]:
    """A dataset built straight to `s3://<bucket>/ds` by `fastpack build`, and its source."""
    source, _ = built
    url = f"s3://{s3_bucket}/ds"
    argv = ["build", str(source), url, "--workers", "1", "--no-progress", "--shard-size", "4KB"]
    assert main([*argv, "--staging", str(tmp_path / "staging")]) == 0
    assert not (tmp_path / "staging").exists()  # published, then the local copy is removed
    return url, source


def test_build_info_verify_by_url(
    published: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = published
    capsys.readouterr()
    assert main(["info", url, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["path"], info["samples"]) == (url, len(CLASSES) * PER_CLASS)
    assert info["classes"] == list(CLASSES)
    assert info["shards"] > 1
    assert main(["verify", url, "--decode"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{url}: OK")


def test_verify_names_a_damaged_object(
    published: tuple[str, Path], s3_env: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = published
    fs = s3_env.filesystem()
    shard = url.removeprefix("s3://") + "/shards/000001.tar"
    data = bytearray(fs.cat_file(shard))
    data[600] ^= 0xFF
    fs.pipe_file(shard, bytes(data))
    capsys.readouterr()
    assert main(["verify", url]) == 1
    out = capsys.readouterr().out
    assert f"{url}/shards/000001.tar" in out
    assert "sha256" in out.lower()


def test_unknown_bucket_is_one_clear_line(
    s3_env: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "s3://no-such-bucket-here/ds"
    assert main(["info", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"fastpack: error: {url}/{MANIFEST_NAME}: no manifest")
    assert "Traceback" not in err
