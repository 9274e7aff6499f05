"""A missing optional package is named at once, with the extra that installs it, and is never
retried (the packages are hidden from the import system, as if not installed)."""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import uuid
from pathlib import Path

import pytest
from fastpack.storage import Location, MissingDependencyError
from fastpack.storage.urls import filesystem

from fastpack.cli import main

EXTRA = 'pip install "fastpack[s3]"'


def fresh_options() -> dict[str, str]:
    """Options no earlier test used: the filesystem is made anew, not taken from the cache."""
    return {"key": uuid.uuid4().hex, "secret": "x"}


@pytest.mark.parametrize("package", ["fsspec", "s3fs", "aiobotocore"])
def test_a_missing_package_names_the_s3_extra(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, package, None)
    if package == "aiobotocore":
        monkeypatch.setitem(sys.modules, "aiobotocore.session", None)
    with pytest.raises(MissingDependencyError, match=re.escape(EXTRA)) as e:
        filesystem("s3://bucket/ds", fresh_options())
    assert isinstance(e.value, ModuleNotFoundError)  # what callers catch for a missing module


def test_info_on_an_s3_url_without_the_extra_fails_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """The error a new user meets after `pip install fastpack[torch]`: one line, no retries."""
    monkeypatch.setitem(sys.modules, "s3fs", None)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", uuid.uuid4().hex)  # a filesystem not cached yet
    with caplog.at_level(logging.WARNING, logger="fastpack.storage"):
        assert main(["info", "s3://bucket/ds"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastpack: error: ")
    assert EXTRA in err
    assert "s3fs" in err
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


def test_a_bulk_download_without_obstore_names_the_extra_and_is_not_retried(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    monkeypatch.setitem(sys.modules, "obstore", None)
    location = Location("s3://bucket/ds", fresh_options())
    with (
        caplog.at_level(logging.WARNING, logger="fastpack.storage"),
        pytest.raises(MissingDependencyError, match=rf"'obstore'.*{re.escape(EXTRA)}"),
    ):
        location.download(
            "a.tar", tmp_path / "a.tar", size=1, sha256=hashlib.sha256(b"a").hexdigest(), bulk=True
        )
    assert not caplog.records
