"""A missing optional package is named at once, with the extra that installs it, and is never
retried. Each case runs in a fresh interpreter whose import system hides the packages, as if they
were not installed (a package imported once stays registered with fsspec in this process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

EXTRA = 'pip install "fastpack[s3]"'


def run_without(packages: list[str], code: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a new Python that cannot import `packages`."""
    hide = f"import sys\nfor name in {packages!r}:\n    sys.modules[name] = None\n"
    return subprocess.run(
        [sys.executable, "-c", hide + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("package", ["fsspec", "s3fs", "aiobotocore"])
def test_a_missing_package_names_the_s3_extra(package: str) -> None:
    done = run_without(
        [package],
        """
        from fastpack.storage import MissingDependencyError
        from fastpack.storage.urls import filesystem
        try:
            filesystem("s3://bucket/ds", {})
        except MissingDependencyError as e:
            assert isinstance(e, ModuleNotFoundError)
            print(e)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert EXTRA in done.stdout
    assert package in done.stdout


def test_info_on_an_s3_url_without_the_extra_fails_at_once() -> None:
    """The error a new user meets after `pip install fastpack[torch]`: one line, no retries."""
    done = run_without(
        ["s3fs"],
        """
        import logging
        from fastpack.cli import main
        logging.basicConfig(level=logging.WARNING)
        raise SystemExit(main(["info", "s3://bucket/ds"]))
        """,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("fastpack: error: s3://bucket/ds")
    assert EXTRA in done.stderr
    assert "s3fs" in done.stderr
    assert "retrying" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_bulk_download_without_obstore_names_the_extra_and_is_not_retried() -> None:
    done = run_without(
        ["obstore"],
        """
        import logging
        from pathlib import Path
        from fastpack.storage import Expected, Location, MissingDependencyError, Transfer
        logging.basicConfig(level=logging.WARNING)
        location = Location("s3://bucket/ds", {"key": "k", "secret": "s"})
        try:
            location.download(
                "a.tar", Path("a.tar"), Expected(size=1, sha256="0" * 64), Transfer(bulk=True)
            )
        except MissingDependencyError as e:
            print(e)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "'obstore'" in done.stdout
    assert EXTRA in done.stdout
    assert "retrying" not in done.stderr
