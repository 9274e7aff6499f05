"""Dataset(fields=...): each field type read back as stored, batches laid out by the schema,
geometry that follows the image, absent optional members, and the errors that name them."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simplejpeg
from fastpack.formats import (
    AbsentFieldError,
    DatasetFiles,
    Schema,
    ShardFormatError,
)
from fastpack.reader import CenterCrop, Dataset, Padded, RandomResizedCrop
from fastpack.reader.errors import MissingFieldError

from tests.formats._v2 import spec, write_v2_dataset

from ..image.test_geometry import bounds, green_pixels
from ._fields_data import ALL, make_samples, png, write_fields_dataset

N = 10


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_fields_dataset(tmp_path / "fields", N)


def test_default_fields_are_the_image_and_the_label(root: Path) -> None:
    ds = Dataset(root)
    assert ds.fields == ("jpg", "cls")
    assert ds.image_label  # the (images, labels) fast path
    explicit = Dataset(root, fields=("jpg", "cls"), transform=CenterCrop(24))
    assert explicit.image_label
    samples = make_samples(N)
    for i in range(N):
        image, label = ds[i]
        np.testing.assert_array_equal(image, simplejpeg.decode_jpeg(samples[i]["jpg"]))
        assert isinstance(label, np.int64)
        assert label == samples[i]["cls"]
    images, labels = explicit.__getitems__([3, 1])
    assert images.shape == (2, 24, 24, 3)
    assert labels.tolist() == [samples[3]["cls"], samples[1]["cls"]]


def test_every_field_type_reads_back_as_stored(root: Path) -> None:
    ds = Dataset(root, fields=ALL)
    assert not ds.image_label
    for i, sample in enumerate(make_samples(N)):
        values = dict(zip(ALL, ds[i], strict=True))
        np.testing.assert_array_equal(values["jpg"], simplejpeg.decode_jpeg(sample["jpg"]))
        assert isinstance(values["cls"], np.int64)
        assert values["cls"] == sample["cls"]
        mask = values["seg.png"]
        assert (mask.dtype, mask.shape) == (np.uint8, values["jpg"].shape[:2])
        x0, y0, x1, y1 = (int(v) for v in sample["boxes.npy"][0])
        assert (mask[y0:y1, x0:x1] == 1 + i % 5).all()
        assert mask.sum() == (1 + i % 5) * (x1 - x0) * (y1 - y0)
        np.testing.assert_array_equal(values["boxes.npy"], sample["boxes.npy"])
        assert values["boxes.npy"].dtype == np.float32
        assert values["ids.json"].dtype == np.int64
        assert values["ids.json"].tolist() == sample["ids.json"]
        np.testing.assert_array_equal(values["emb.npy"], sample["emb.npy"])
        assert values["txt"] == sample.get("txt")  # None where the member is absent
        assert values["caption.txt.zst"] == sample["caption.txt.zst"]  # zstd + dictionary
        assert values["meta.json"] == sample["meta.json"]
        assert values["raw.bin"] == sample["raw.bin"]
    assert sum(ds[i][ALL.index("txt")] is None for i in range(N)) == 3
    with pytest.raises(AbsentFieldError, match=r"sample 2 has no 'txt' member"):
        ds.read_bytes(2, "txt")
    assert bytes(ds.read_bytes(2, "raw.bin")) == b"\x02" * 3


def test_a_batch_holds_one_value_per_field(root: Path) -> None:
    ds = Dataset(root, fields=ALL, transform=RandomResizedCrop(32), seed=4)
    ds.set_epoch(1)
    rows = [5, 0, 2, 7]
    batch = dict(zip(ALL, ds.__getitems__(rows), strict=True))
    assert (batch["jpg"].shape, batch["jpg"].dtype) == ((4, 32, 32, 3), np.uint8)
    assert (batch["seg.png"].shape, batch["seg.png"].dtype) == ((4, 32, 32), np.uint8)
    assert (batch["cls"].shape, batch["cls"].dtype) == ((4,), np.int64)
    assert (batch["emb.npy"].shape, batch["emb.npy"].dtype) == ((4, 3), np.float32)
    for name in ("boxes.npy", "ids.json", "txt", "caption.txt.zst", "meta.json", "raw.bin"):
        assert isinstance(batch[name], list), name
        assert len(batch[name]) == 4
    assert batch["txt"][2] is None  # sample 2 has no caption
    for k, i in enumerate(rows):  # a batch is its samples, decoded with the same draws
        for name, value in zip(ALL, ds[i], strict=True):
            got = batch[name][k]
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(got, value, err_msg=f"{name} of sample {i}")
            else:
                assert got == value, name
    empty = ds.__getitems__([])
    assert empty[ALL.index("jpg")].shape == (0, 32, 32, 3)
    assert empty[ALL.index("emb.npy")].shape == (0, 3)


def test_pad_gives_padded_arrays_and_lengths(root: Path) -> None:
    ds = Dataset(root, fields=("boxes.npy", "ids.json", "txt"), pad=True, pad_value=-7)
    boxes, ids, txt = ds.__getitems__([0, 1, 2, 3])
    assert isinstance(boxes, Padded)
    assert isinstance(ids, Padded)
    assert isinstance(txt, list)  # not an array: never padded
    assert boxes.values.shape == (4, 2, 4)
    assert boxes.values.dtype == np.float32
    assert boxes.lengths.tolist() == [2, 2, 2, 2]
    assert ids.lengths.tolist() == [0, 1, 2, 3]
    assert ids.values.shape == (4, 3)
    assert ids.values.dtype == np.int64
    assert ids.values.tolist() == [[-7, -7, -7], [0, -7, -7], [0, 1, -7], [0, 1, 2]]


def test_optional_arrays_pad_with_length_minus_one(tmp_path: Path) -> None:
    schema = Schema((spec("cls", "class"), spec("pts.npy", "ndarray", optional=True,
                                                shape=(None, 2), dtype="<i4")))  # fmt: skip
    samples: list[dict[str, Any]] = [
        {"cls": 0, "pts.npy": [[1, 2], [3, 4]]},
        {"cls": 1},
        {"cls": 2, "pts.npy": np.zeros((0, 2))},
    ]
    write_v2_dataset(tmp_path / "pts", schema, samples)
    ds = Dataset(tmp_path / "pts", fields=("pts.npy", "cls"), pad=True)
    assert ds.field is None  # no image in this dataset
    assert Dataset(tmp_path / "pts").fields == ("cls",)  # the label alone by default
    points, labels = ds.__getitems__([0, 1, 2])
    assert points.lengths.tolist() == [2, -1, 0]
    assert points.values.tolist() == [[[1, 2], [3, 4]], [[0, 0], [0, 0]], [[0, 0], [0, 0]]]
    assert labels.tolist() == [0, 1, 2]
    lists = Dataset(tmp_path / "pts", fields=("pts.npy",)).__getitems__([1, 0])[0]
    assert lists[0] is None
    assert lists[1].tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("flip_prob", [0.0, 0.5, 1.0])
def test_geometry_follows_the_image_through_the_dataset(root: Path, flip_prob: float) -> None:
    """The box and the mask of each sample's green rectangle land where the rectangle does,
    in single reads and in batches, over epochs (new draws) and flips."""
    fields = ("jpg", "seg.png", "boxes.npy")
    transform = RandomResizedCrop(40, scale=(0.3, 1.0), flip_prob=flip_prob)
    ds = Dataset(root, fields=fields, transform=transform, seed=9, drop_empty_boxes=False)
    checked = 0
    for epoch in range(3):
        ds.set_epoch(epoch)
        images, masks, boxes = ds.__getitems__(list(range(N)))
        for i in range(N):
            image, mask, box = ds[i]
            np.testing.assert_array_equal(images[i], image)
            np.testing.assert_array_equal(masks[i], mask)
            np.testing.assert_array_equal(boxes[i], box)
            green = green_pixels(image)
            rectangle = box[0]  # the rectangle's box (kept even when cropped away)
            width, height = rectangle[2:] - rectangle[:2]
            if min(width, height) < 2:
                assert green.sum() <= 2 * max(width, height, 1) * 40, (epoch, i)
                continue
            checked += 1
            np.testing.assert_allclose(rectangle, bounds(green), atol=1.6)
            inside = mask == 1 + i % 5
            assert (inside != green).sum() <= 2 * (40 + 40), (epoch, i)
    assert checked >= 20


def test_boxes_without_area_are_dropped_or_kept(root: Path) -> None:
    transform = CenterCrop(32)  # the 4 x 4 box in the top-left corner falls outside
    dropped = Dataset(root, fields=("boxes.npy",), transform=transform)
    kept = Dataset(root, fields=("boxes.npy",), transform=transform, drop_empty_boxes=False)
    for i in range(N):
        assert len(dropped[i][0]) == 1
        box = kept[i][0]
        assert len(box) == 2  # still paired row by row with per-box values
        assert (box[1, 2] - box[1, 0]) * (box[1, 3] - box[1, 1]) == 0


def test_the_batch_allocator_is_called_once_per_array_in_field_order(root: Path) -> None:
    ds = Dataset(root, fields=("seg.png", "cls", "jpg"), transform=CenterCrop((16, 24)))
    expected = ds.__getitems__([0, 1, 2])
    shapes = []

    def allocate(shape: tuple[int, ...]) -> np.ndarray:
        shapes.append(shape)
        return np.full(shape, 7, np.uint8)

    ds.batch_allocator = allocate
    batch = ds.__getitems__([0, 1, 2])
    assert shapes == [(3, 16, 24), (3, 16, 24, 3)]
    for got, want in zip(batch, expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_pickled_dataset_reads_the_same_fields(root: Path) -> None:
    ds = Dataset(root, fields=("meta.json", "jpg"), transform=CenterCrop(16), pad=True)
    ds[0]
    blob = pickle.dumps(ds)
    assert len(blob) < 1000
    copy = pickle.loads(blob)
    assert copy.fields == ("meta.json", "jpg")
    assert copy.pad
    assert copy[4][0] == ds[4][0]
    np.testing.assert_array_equal(copy[4][1], ds[4][1])


def test_images_of_several_sizes_batch_only_with_a_transform(root: Path) -> None:
    ds = Dataset(root, fields=("cls", "seg.png"))
    with pytest.raises(ValueError, match=r"samples 0 and 1 have sizes .* in field 'seg.png'"):
        ds.__getitems__([0, 1])
    masks = ds.__getitems__([4, 4])[1]
    assert masks.shape == (2, *ds[4][1].shape)


def test_fields_that_are_not_there_are_named(root: Path) -> None:
    with pytest.raises(
        MissingFieldError, match=r"fields: no field 'depth.png'; fields are \('jpg',"
    ):
        Dataset(root, fields=("jpg", "depth.png"))
    with pytest.raises(MissingFieldError, match=r"no field 'webp'; fields are \('jpg', 'cls', "):
        Dataset(root, field="webp")
    with pytest.raises(ValueError, match=r"field 'seg.png' holds png values; the image is a jpeg"):
        Dataset(root, field="seg.png")
    with pytest.raises(TypeError, match=r"fields is a sequence of field names, got the string"):
        Dataset(root, fields="jpg")
    with pytest.raises(ValueError, match=r"fields \('cls', 'cls'\) name a field twice"):
        Dataset(root, fields=("cls", "cls"))
    with pytest.raises(ValueError, match=r"fields is empty; the schema's fields are"):
        Dataset(root, fields=())
    with pytest.raises(MissingFieldError, match=r"no field 'depth.png'"):
        Dataset(root).read_bytes(0, "depth.png")


class _Upside:
    """A transform that does not say where its output comes from."""

    output_shape = (8, 8)
    draws = 0

    def __call__(self, data: Any, draws: Any = None, out: Any = None) -> np.ndarray:
        return np.zeros((8, 8, 3), np.uint8)


def test_geometry_needs_a_transform_that_says_its_crop(root: Path) -> None:
    Dataset(root, fields=("jpg", "txt"), transform=_Upside())  # no geometry: fine
    with pytest.raises(ValueError, match=r"fields \['boxes.npy'\] follow the image .* no crop"):
        Dataset(root, fields=("jpg", "boxes.npy"), transform=_Upside())


def _member_span(root: Path, i: int, field: str) -> tuple[Path, int, int]:
    files = DatasetFiles(root)
    path = files.shard_path(int(files.index.shard[i]))
    _, offset, size = files.index.locate(i, field, path.stat().st_size)
    return path, offset, size


@pytest.mark.parametrize(
    ("field", "damage", "message"),
    [
        ("meta.json", b"]", "a json member that does not decode"),
        ("caption.txt.zst", b"\x00", "not a zstd frame"),
        ("seg.png", b"\x00", "not a PNG"),
        ("emb.npy", b"\x00", r"not an \.npy array"),
    ],
)
def test_a_member_that_does_not_decode_is_named(
    root: Path, field: str, damage: bytes, message: str
) -> None:
    path, offset, _ = _member_span(root, 6, field)
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(damage)
    ds = Dataset(root, fields=("cls", field))
    key = ds.key(6)
    pattern = rf"{path.name}: sample 6 \(key {key}\) field '{field}' at offset {offset} does not"
    with pytest.raises(ShardFormatError, match=rf"{pattern} decode: .*{message}"):
        ds[6]
    with pytest.raises(ShardFormatError, match=pattern):
        ds.__getitems__([5, 6])
    assert ds[5][0] == ds.labels[5]  # the other samples read on


def test_a_mask_that_is_not_8_bit_reads_alone_but_does_not_batch(tmp_path: Path) -> None:
    schema = Schema((spec("jpg", "jpeg"), spec("seg.png", "png", geometry="mask")))
    image = np.full((40, 50, 3), 99, np.uint8)
    deep = np.arange(40 * 50, dtype=np.uint16).reshape(40, 50)
    sample = {"jpg": bytes(simplejpeg.encode_jpeg(image)), "seg.png": png(deep)}
    write_v2_dataset(tmp_path / "deep", schema, [sample, sample])
    assert Dataset(tmp_path / "deep", fields=("seg.png",))[0][0].dtype == np.uint16  # as stored
    ds = Dataset(tmp_path / "deep", fields=("jpg", "seg.png"), transform=CenterCrop(16))
    mask = ds[1][1]
    assert (mask.dtype, mask.shape) == (np.uint16, (16, 16))
    assert set(np.unique(mask)) <= set(np.unique(deep))  # nearest neighbour: stored values
    with pytest.raises(
        ShardFormatError, match=r"sample 0 .* field 'seg.png' .* 8-bit, one channel"
    ):
        ds.__getitems__([0, 1])
