"""StreamingDataset(batch_size=...) and make_loader over a StreamingDataset: each stream's
samples in batches decoded straight into the loader's shared-memory slots, in the order and with
the pixels of the sample-at-a-time path; the epoch shared with persistent workers."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastpack.formats import ShardFormatError
from fastpack.reader import (
    CenterCrop,
    Dataset,
    Padded,
    RandomResizedCrop,
    StreamingDataset,
    make_loader,
)
from fastpack.reader.streaming import dataset as streaming_module
from fastpack.reader.streaming.epoch import SharedEpoch
from fastpack.reader.torch_loader.batch_slots import tracker
from torch.utils.data import DataLoader

from tests.reader.map_style._fields_data import ALL, write_fields_dataset
from tests.reader.streaming._streaming_data import build_small, counts, digest, sample_of_image

TIMEOUT = 60  # seconds a worker may take per batch; a hung worker fails the test
N = 120


@pytest.fixture
def built(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """120 samples in shards of a few samples each."""
    return build_small(make_image_folder(classes=4, per_class=30, size=40), tmp_path / "ds")


def _stream_samples(
    dataset: StreamingDataset, worker: int, workers: int, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[Any, ...]]:
    """The samples that DataLoader worker `worker` of `workers` reads one at a time."""
    monkeypatch.setattr(streaming_module, "_worker_info", lambda: (worker, workers))
    try:
        return list(dataset)
    finally:
        monkeypatch.undo()


def _round_robin(streams: list[list[Any]], size: int) -> Iterator[list[Any]]:
    """The batches of `size` of each stream in the order a DataLoader hands them out: one from
    each worker in turn, the workers whose streams ended left out."""
    batches = [[s[k : k + size] for k in range(0, len(s), size)] for s in streams]
    for k in range(max(len(b) for b in batches)):
        yield from (b[k] for b in batches if k < len(b))


def _in_shared_memory(images: torch.Tensor, loader: Any) -> bool:
    """Whether a received batch lies in one of the loader's slots or in a shared block."""
    address = images.data_ptr()
    slots = loader.collate_fn.__self__.slots.spans  # every array of every slot
    lent = any(t.data_ptr() <= address < t.data_ptr() + t.nbytes for t in slots)
    return lent or images.untyped_storage().is_shared()


def test_make_loader_reads_every_sample_once_into_shared_slots(built: Path) -> None:
    reference = Dataset(built, transform=CenterCrop(16))
    by_pixels = {digest(reference[i][0]): i for i in range(N)}
    assert len(by_pixels) == N
    dataset = StreamingDataset(built, transform=CenterCrop(16), seed=3, shuffle_window=2)
    loader = make_loader(dataset, batch_size=8, num_workers=2, timeout=TIMEOUT)
    assert len(loader) == 16  # two streams of 60 samples: 7 full batches and one of 4 each
    orders = []
    for epoch in (0, 1):
        dataset.set_epoch(epoch)
        order = []
        for images, labels in loader:
            assert isinstance(images, torch.Tensor)
            assert images.dtype == torch.uint8
            assert labels.dtype == torch.int64
            assert images.shape[1:] == (16, 16, 3)
            assert len(images) == len(labels) <= 8
            assert _in_shared_memory(images, loader)
            for image, label in zip(images.numpy(), labels.tolist(), strict=True):
                i = by_pixels[digest(image)]
                assert label == reference.labels[i]
                order.append(i)
        assert (counts(order, N) == 1).all()
        orders.append(order)
    assert orders[0] != orders[1]
    state = tracker(loader.collate_fn.__self__.slots.token)  # type: ignore[union-attr]
    assert state is not None
    assert state.arrived == state.from_slots  # every batch decoded in a slot
    assert 32 <= state.arrived <= 32 + 2 * 2  # with epoch 2's first batches, prefetched
    assert dataset.batch_size is None  # the user's dataset is left as it was
    assert dataset.batch_allocator is None


@pytest.mark.parametrize("persistent", [True, False])
def test_batches_hold_the_sample_at_a_time_pixels_in_stream_order(
    built: Path, monkeypatch: pytest.MonkeyPatch, persistent: bool
) -> None:
    """Random crops: sample i of epoch e is cropped alike by both paths, and the loader's
    batches are each worker's stream cut in batches, the workers taking turns."""
    options: dict[str, Any] = {"transform": RandomResizedCrop(16), "seed": 5, "shuffle_window": 3}
    dataset = StreamingDataset(built, **options)
    one_at_a_time = StreamingDataset(built, **options)
    loader = make_loader(
        dataset, batch_size=7, num_workers=2, persistent_workers=persistent, timeout=TIMEOUT
    )
    for epoch in (0, 2):  # workers started at epoch 0 follow set_epoch
        dataset.set_epoch(epoch)
        one_at_a_time.set_epoch(epoch)
        streams = [_stream_samples(one_at_a_time, w, 2, monkeypatch) for w in range(2)]
        expected = list(_round_robin(streams, 7))
        received = list(loader)
        assert len(received) == len(expected) == len(loader)
        for (images, labels), want in zip(received, expected, strict=True):
            np.testing.assert_array_equal(images.numpy(), np.stack([s[0] for s in want]))
            assert labels.tolist() == [int(s[1]) for s in want]


def test_set_epoch_reaches_persistent_workers_of_a_plain_dataloader(built: Path) -> None:
    by_digest = sample_of_image(built)
    dataset = StreamingDataset(built, seed=2, shuffle_window=2)
    loader = DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
    orders = []
    for epoch in (0, 1, 0):
        dataset.set_epoch(epoch)
        orders.append([by_digest[digest(image.numpy())] for image, _ in loader])
    assert orders[0] == orders[2] != orders[1]
    assert sorted(orders[1]) == list(range(N))


def test_spawned_workers_share_the_epoch(built: Path) -> None:
    """A spawned worker gets the epoch by pickle, shared: later set_epoch calls reach it."""
    crops = StreamingDataset(built, seed=2, transform=RandomResizedCrop(8), shuffle_window=1)
    random_loader = make_loader(
        crops, batch_size=N, num_workers=1, multiprocessing_context="spawn", timeout=TIMEOUT
    )
    first = [images.numpy().copy() for images, _ in random_loader]
    crops.set_epoch(1)
    second = [images.numpy().copy() for images, _ in random_loader]
    crops.set_epoch(0)
    third = [images.numpy().copy() for images, _ in random_loader]
    assert len(first) == len(second) == len(third) == 1
    assert not np.array_equal(first[0], second[0])  # another order and other crops
    np.testing.assert_array_equal(first[0], third[0])


def test_shared_epoch_pickles_as_a_plain_number_outside_process_start() -> None:
    epoch = SharedEpoch(3)
    copy = pickle.loads(pickle.dumps(epoch))
    assert copy.get() == 3
    copy.set(4)
    assert epoch.get() == 3  # a copy, not the shared value
    dataset_epoch = SharedEpoch()
    dataset_epoch.set(9)
    assert repr(dataset_epoch) == "SharedEpoch(9)"


NO_TORCH = """
import multiprocessing
import sys

sys.modules["torch"] = None  # any `import torch` now raises ImportError
from fastpack.reader import CenterCrop, RandomResizedCrop, StreamingDataset


def first_labels(dataset, ready, go, out):
    ready.set()
    go.wait()
    out.put(next(iter(dataset))[0])


if __name__ == "__main__":
    path = sys.argv[1]
    batches = list(StreamingDataset(path, transform=CenterCrop(8), batch_size=50))
    assert [len(labels) for _, labels in batches] == [50, 50, 20], batches
    assert batches[0][0].shape == (50, 8, 8, 3)
    for method in ("fork", "spawn"):
        context = multiprocessing.get_context(method)
        dataset = StreamingDataset(path, transform=RandomResizedCrop(8), batch_size=10)
        ready, go, out = context.Event(), context.Event(), context.Queue()
        child = context.Process(target=first_labels, args=(dataset, ready, go, out))
        child.start()
        ready.wait(60)
        dataset.set_epoch(4)  # after the child started
        go.set()
        got = out.get(timeout=60)
        child.join(60)
        assert (got == next(iter(dataset))[0]).all(), method
        dataset.set_epoch(0)
        assert (got != next(iter(dataset))[0]).any(), method
    print("ok")
"""


def test_batches_and_the_shared_epoch_work_without_torch(built: Path, tmp_path: Path) -> None:
    script = tmp_path / "no_torch.py"
    script.write_text(NO_TORCH)
    done = subprocess.run(
        [sys.executable, str(script), str(built)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_short_last_batch_and_resume_by_sample_count(built: Path) -> None:
    options: dict[str, Any] = {"transform": CenterCrop(8), "seed": 1, "shuffle_window": 2}
    samples = list(StreamingDataset(built, **options))
    dataset = StreamingDataset(built, batch_size=50, **options)
    batches = list(dataset)
    assert [len(labels) for _, labels in batches] == [50, 50, 20]
    images = np.concatenate([b[0] for b in batches])
    np.testing.assert_array_equal(images, np.stack([s[0] for s in samples]))
    assert len(list(StreamingDataset(built, batch_size=500, **options))) == 1  # one short batch

    iterator = iter(dataset)
    next(iterator)
    state = dataset.state_dict()
    assert state["position"] == 50  # counts samples
    resumed = StreamingDataset(built, batch_size=32, **options)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert [len(labels) for _, labels in rest] == [32, 32, 6]
    np.testing.assert_array_equal(
        np.concatenate([b[0] for b in rest]), np.stack([s[0] for s in samples[50:]])
    )
    assert resumed.state_dict()["position"] == N


def test_batches_without_a_transform_need_one_size(
    make_image_folder: Callable[..., Path], tmp_path: Path, built: Path
) -> None:
    dataset = StreamingDataset(built, shuffle=False, batch_size=4)
    with pytest.raises(ValueError, match=r"samples 0 and \d+ have sizes .*batching needs one size"):
        next(iter(dataset))
    same = tmp_path / "same-src" / "class_00"
    same.mkdir(parents=True)
    source = next(make_image_folder(classes=1, per_class=1, name="one").rglob("*.jpg"))
    for k in range(5):
        (same / f"{k}.jpg").write_bytes(source.read_bytes())
    path = build_small(same.parent, tmp_path / "same")
    images, labels = next(iter(StreamingDataset(path, batch_size=3)))
    assert images.shape[0] == len(labels) == 3
    np.testing.assert_array_equal(images[2], Dataset(path)[0][0])


def test_a_sample_that_does_not_decode_is_named_in_a_batch(built: Path) -> None:
    reference = Dataset(built)
    files = reference._opened().files
    i = 37
    shard = int(files.index.shard[i])
    _, offset, size = files.index.locate(i, "jpg", files.shard_path(shard).stat().st_size)
    with files.shard_path(shard).open("r+b") as f:
        f.seek(offset + 2)  # keep the SOI marker, break everything after it
        f.write(b"\x00" * (size - 2))
    key = reference.key(i)
    for transform, size in ((CenterCrop(8), 16), (None, 1)):  # full-size images differ: one
        dataset = StreamingDataset(built, transform=transform, batch_size=size, shuffle=False)
        with pytest.raises(
            ShardFormatError,
            match=rf"sample {i} \(key {key}, shard {shard}\) "
            r"field 'jpg' does not decode",
        ):
            list(dataset)


def test_fields_come_in_batches_as_the_map_style_reader_lays_them_out(tmp_path: Path) -> None:
    root = write_fields_dataset(tmp_path / "fields", 12, samples_per_shard=3)
    options: dict[str, Any] = {"fields": ALL, "transform": RandomResizedCrop(24), "pad": True}
    dataset = StreamingDataset(root, shuffle=False, seed=4, batch_size=5, **options)
    reference = Dataset(root, seed=4, **options)
    batches = list(dataset)
    assert [len(b[ALL.index("cls")]) for b in batches] == [5, 5, 2]
    for b, batch in enumerate(batches):
        want = reference.__getitems__(list(range(5 * b, min(5 * b + 5, 12))))
        for name, got, expected in zip(ALL, batch, want, strict=True):
            _assert_same(got, expected, f"batch {b} field {name}")


def _assert_same(got: Any, want: Any, where: str) -> None:
    if isinstance(want, Padded):
        _assert_same(got.values, want.values, where)
        _assert_same(got.lengths, want.lengths, where)
    elif isinstance(want, np.ndarray):
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{where}[{k}]")
    else:
        assert got == want, where


def test_fields_through_make_loader_in_shared_slots(tmp_path: Path) -> None:
    root = write_fields_dataset(tmp_path / "fields", 12, samples_per_shard=3)
    fields = ("jpg", "seg.png", "boxes.npy", "meta.json", "cls")
    dataset = StreamingDataset(root, fields=fields, transform=RandomResizedCrop(16), seed=1)
    loader = make_loader(dataset, batch_size=4, num_workers=2, timeout=TIMEOUT)
    seen = []
    for images, masks, boxes, meta, labels in loader:
        assert images.shape[1:] == (16, 16, 3)
        assert masks.shape == images.shape[:3]
        assert _in_shared_memory(images, loader)
        assert _in_shared_memory(masks, loader)
        assert isinstance(boxes, list)
        assert all(isinstance(b, torch.Tensor) for b in boxes)
        assert labels.dtype == torch.int64
        seen += [m["k"] for m in meta]
    assert sorted(seen) == list(range(12))
    state = tracker(loader.collate_fn.__self__.slots.token)  # type: ignore[union-attr]
    assert state is not None
    assert state.arrived == state.from_slots  # two streams of 6: batches of 4 and 2
    assert 4 <= state.arrived <= 4 + 2 * 2  # with epoch 1's first batches, prefetched


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shuffle": False}, r"shuffle=False \(the dataset's is True\)"),
        ({"seed": 1, "drop_last": True}, r"seed=1 \(the dataset's is 0\), drop_last=True"),
        ({"batch_size": 0}, "batch_size must be positive, got 0"),
        ({"loader": "dali"}, "loader='dali' .* cannot read a StreamingDataset"),
    ],
)
def test_make_loader_refuses_what_contradicts_the_dataset(
    built: Path, options: dict[str, Any], message: str
) -> None:
    dataset = StreamingDataset(built, transform=CenterCrop(8))
    with pytest.raises(ValueError, match=message):
        make_loader(dataset, **{"batch_size": 4, **options})
    batched = StreamingDataset(built, transform=CenterCrop(8), batch_size=8)
    with pytest.raises(ValueError, match=r"batch_size=4 \(the dataset's is 8\)"):
        make_loader(batched, batch_size=4)
    same = make_loader(dataset, batch_size=4, num_workers=2, shuffle=True, seed=0, drop_last=False)
    assert len(same) == 30


def test_bad_batch_size_is_refused(built: Path) -> None:
    with pytest.raises(ValueError, match=r"batch_size=0: expected >= 1 or None"):
        StreamingDataset(built, batch_size=0)
    with pytest.raises(ValueError, match="num_batches needs a batch_size"):
        StreamingDataset(built).num_batches(2)
