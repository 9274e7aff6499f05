"""Streaming from a real S3 server through `ShapingProxy`: throttled and reset shard downloads are
retried and every sample is read once; a shard that stays unavailable raises
`ShardUnavailableError` naming its number and URL after the configured attempts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import MANIFEST_NAME
from fastpack.reader import ShardUnavailableError
from fastpack.reader.streaming import FetchOptions, StreamingDataset
from fastpack.storage import FetchError, RetryPolicy

from tests.publish import publish_dataset
from tests.reader.streaming._streaming_data import build_small, counts, indices, sample_of_image
from tests.shaping_proxy import Fault, ShapedS3

QUICK = RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.05)


@pytest.fixture
def built(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """48 samples in about 12 shards."""
    return build_small(make_image_folder(classes=2, per_class=24, size=40), tmp_path / "ds")


@pytest.fixture
def url(built: Path, shaped_s3: ShapedS3) -> str:
    """`built`, put straight to the server at a new bucket."""
    url = f"s3://{shaped_s3.server.new_bucket()}/ds"
    publish_dataset(built, url, shaped_s3.server.storage_options)
    return url


def test_every_sample_is_read_once_through_throttling_and_resets(
    built: Path, url: str, shaped_s3: ShapedS3, tmp_path: Path
) -> None:
    proxy = shaped_s3.proxy
    proxy.delay_s = 0.005
    patient = FetchOptions(part_bytes=8192, retry=RetryPolicy(attempts=8, backoff_s=0.01))
    dataset = StreamingDataset(
        url,
        shuffle_window=2,
        cache_dir=tmp_path / "cache",
        storage_options=shaped_s3.storage_options,
        fetch=patient,
    )
    proxy.throttle(4, "shards/")  # one range may meet all 8 faults: 6 attempts
    proxy.reset(4, "shards/", after_bytes=200)  # inside the response headers
    images = [image for image, _ in dataset]
    assert (counts(indices(images, sample_of_image(built)), 48) == 1).all()
    assert (proxy.slowdowns, proxy.resets) == (4, 4)


@pytest.mark.parametrize("fault", ["slowdown", "reset"])
def test_a_shard_that_stays_unavailable_raises_naming_it(
    url: str, shaped_s3: ShapedS3, tmp_path: Path, fault: Fault
) -> None:
    """Each shard in one GET (shards are below `part_bytes`), reset inside its body."""
    dataset = StreamingDataset(
        url,
        shuffle=False,
        prefetch=0,
        cache_dir=tmp_path / "cache",
        storage_options=shaped_s3.storage_options,
        fetch=FetchOptions(retry=QUICK),
    )
    shaped_s3.proxy.unavailable("shards/000002.tar", fault, after_bytes=1000)
    shard = rf"{url}/shards/000002\.tar"
    last = "OSError: .*reduce your request rate" if fault == "slowdown" else "OSError: .*body error"
    with pytest.raises(
        ShardUnavailableError,
        match=rf"^shard 2 listed in {url}/{MANIFEST_NAME}: {shard}: unavailable after 3 "
        rf"attempts; last error: {last}",
    ) as raised:
        for _ in dataset:
            pass
    assert isinstance(raised.value, FetchError)
    tried = shaped_s3.proxy.requests_to("shards/000002.tar")
    assert [(seen.method, seen.fault) for seen in tried] == [("GET", fault)] * 3
