"""The DALI reader's extra fields on version-2 datasets, CPU-only: masks that follow their image
through crops, flips and resizes, class fields, member bytes (zstd decompressed, absent members
None), and the fields it refuses."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
import torch
from fastpack.formats import FastpackError, Schema, ShardFormatError, decode_value
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, make_loader
from fastpack.reader.dali import DaliLoader, make_dali_loader
from fastpack.reader.errors import DaliReadError, MissingFieldError
from PIL import Image

from tests.formats._golden_v2 import caption
from tests.formats._v2 import spec, wants_dictionary, write_v2_dataset

N = 12
SIZE, RESIZE = 32, 40
CELL = 12  # pixels per mask cell
# The colour of each mask value (1..4); 0 is never stored, it marks padding.
PALETTE = np.array([[0, 0, 0], [230, 30, 30], [30, 230, 30], [30, 30, 230], [230, 230, 30]])

SCHEMA = Schema(
    (
        spec("jpg", "jpeg"),
        spec("cls", "class"),
        spec("seg.png", "png", geometry="mask"),
        spec("txt", "text", optional=True),
        spec("caption.txt.zst", "text", zstd=wants_dictionary("caption.txt.zst")),
        spec("id", "class"),
        spec("tags.json", "class_ids"),
        spec("emb.npy", "ndarray", dtype="<f4", shape=(3,)),
        spec("boxes.npy", "ndarray", dtype="<f4", shape=(None, 4), geometry="boxes"),
    )
)


def cells(height: int, width: int, shift: int) -> npt.NDArray[np.uint8]:
    """A mask of CELL-pixel cells valued 1..4, a pattern that no flip or shift maps onto
    itself."""
    y, x = np.mgrid[0:height, 0:width]
    values: npt.NDArray[np.uint8] = (
        (x // CELL + 2 * (y // CELL) + x // (3 * CELL) + shift) % 4 + 1
    ).astype(np.uint8)
    return values


def png(pixels: npt.NDArray[Any]) -> bytes:
    ok, data = cv2.imencode(".png", pixels)
    assert ok
    return data.tobytes()


def text_of(i: int) -> str | None:
    """Sample `i`'s `txt`: absent for every third sample, empty for sample 1."""
    return None if i % 3 == 0 else "" if i == 1 else f"text {i} ✓"


def sample(i: int) -> dict[str, Any]:
    height, width = 48 + 4 * (i % 5), 80 - 3 * (i % 7)
    mask = cells(height, width, i)
    image = PALETTE[mask].astype(np.uint8)
    value: dict[str, Any] = {
        "jpg": simplejpeg.encode_jpeg(image, quality=95, colorsubsampling="444"),
        "cls": i,
        "seg.png": png(mask),
        "caption.txt.zst": caption(i),
        "id": 100 + i,
        "tags.json": list(range(i % 3)),
        "emb.npy": [i, -i, 0.5],
        "boxes.npy": [[0, 0, 4, 4]],
    }
    if (text := text_of(i)) is not None:
        value["txt"] = text
    return value


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dali-v2") / "ds"
    write_v2_dataset(root, SCHEMA, [sample(i) for i in range(N)], samples_per_shard=5)
    return root


EVAL = CenterCrop(SIZE, resize=RESIZE)


def _crop(train: bool, **options: Any) -> CenterCrop | RandomResizedCrop:
    """The training crop with `options`, or the evaluation one."""
    return RandomResizedCrop(SIZE, **options) if train else EVAL


def _loader(path: Path | Dataset, **kwargs: Any) -> DaliLoader:
    options: dict[str, Any] = {"batch_size": 4, "transform": EVAL, "num_workers": 2}
    options.update(kwargs)
    return make_dali_loader(path, **options)


def _samples(loader: DaliLoader) -> dict[int, tuple[torch.Tensor, dict[str, Any]]]:
    """label -> (image, {field: this sample's value}) over one epoch."""
    out = {}
    for images, labels, fields in loader:
        for k, label in enumerate(labels.tolist()):
            out[label] = (images[k].clone(), {name: values[k] for name, values in fields.items()})
    return out


def agreement(image: torch.Tensor, mask: torch.Tensor) -> float:
    """The share of pixels whose colour is nearest the palette colour of their mask value."""
    pixels = image.numpy().astype(np.int32)[:, :, None, :]
    nearest = np.abs(pixels - PALETTE[None, None, 1:]).sum(axis=3).argmin(axis=2) + 1
    return float((nearest == mask.numpy()[:, :, 0]).mean())


@pytest.mark.parametrize("train", [False, True])
def test_masks_follow_their_images(dataset: Path, train: bool) -> None:
    loader = _loader(dataset, transform=_crop(train, scale=(0.3, 1.0)), fields=("seg.png",), seed=3)
    seen = _samples(loader)
    assert sorted(seen) == list(range(N))
    flipped = []
    for image, fields in seen.values():
        mask = fields["seg.png"]
        assert (image.shape, mask.shape) == ((SIZE, SIZE, 3), (SIZE, SIZE, 1))
        assert mask.dtype == torch.uint8
        assert set(np.unique(mask.numpy())) <= {1, 2, 3, 4}  # nearest-neighbour: stored values
        assert agreement(image, mask) > 0.85
        flipped.append(agreement(image, torch.flip(mask, dims=[1])))
    assert min(flipped) < 0.6  # the check would see a mask that missed its image's flip


def test_train_crops_with_masks_vary_and_are_seeded(dataset: Path) -> None:
    first, second = (
        _loader(dataset, transform=_crop(True), fields=("seg.png",), seed=9, batch_size=6)
        for _ in range(2)
    )
    epochs = [_samples(first), _samples(first)]
    again = _samples(second)
    assert all(torch.equal(epochs[0][k][0], again[k][0]) for k in range(N))
    assert any(not torch.equal(epochs[0][k][0], epochs[1][k][0]) for k in range(N))


def test_one_coin_flips_image_and_mask(dataset: Path) -> None:
    """The same seed draws the same windows; flip_prob 1 then mirrors both image and mask."""
    kept, flipped = (
        _samples(_loader(dataset, transform=_crop(True, flip_prob=p), fields=("seg.png",), seed=4))
        for p in (0.0, 1.0)
    )
    for k in range(N):
        assert torch.equal(flipped[k][0], torch.flip(kept[k][0], dims=[1]))
        assert torch.equal(flipped[k][1]["seg.png"], torch.flip(kept[k][1]["seg.png"], dims=[1]))


def test_member_bytes(dataset: Path) -> None:
    fields = ("txt", "caption.txt.zst", "id", "tags.json", "emb.npy")
    seen = _samples(_loader(dataset, fields=fields))
    assert sorted(seen) == list(range(N))
    for i, (_, values) in seen.items():
        text = values["txt"]
        if text_of(i) is None:
            assert text is None
        else:
            assert (text.dtype, text.dim()) == (torch.uint8, 1)
            assert bytes(text.numpy()).decode() == text_of(i)
        assert bytes(values["caption.txt.zst"].numpy()).decode() == caption(i)  # decompressed
        assert values["id"].dtype == torch.int64
        assert int(values["id"]) == 100 + i
        assert (
            bytes(values["tags.json"].numpy()) == str(list(range(i % 3))).replace(" ", "").encode()
        )
        array = decode_value(SCHEMA["emb.npy"], bytes(values["emb.npy"].numpy()))
        assert array.tolist() == [i, -i, 0.5]


@pytest.mark.parametrize("train", [False, True])
def test_fed_samples_give_the_readers_fields(dataset: Path, train: bool) -> None:
    """Over a Dataset (fastpack's order, feed.py) masks come from DALI as from its reader, the
    other fields from the dataset: the same values."""
    fields = ("seg.png", "txt", "caption.txt.zst", "id", "tags.json", "emb.npy")
    options: dict[str, Any] = {"fields": fields, "seed": 3, "transform": _crop(train)}
    reader, fed = (
        _samples(_loader(dataset, **options)),
        _samples(_loader(Dataset(dataset), **options)),
    )
    assert sorted(fed) == sorted(reader) == list(range(N))
    for k, (image, values) in fed.items():
        expected = reader[k][1]
        assert set(values) == set(expected)
        for name in ("txt", "caption.txt.zst", "id", "tags.json", "emb.npy"):
            if expected[name] is None:
                assert values[name] is None
            else:
                assert torch.equal(values[name], expected[name])
        if not train:  # the same crop: the same pixels
            assert torch.equal(image, reader[k][0])
            assert torch.equal(values["seg.png"], expected["seg.png"])
        assert agreement(image, values["seg.png"]) > 0.85  # a training crop follows its image


def test_without_fields_batches_are_pairs(dataset: Path) -> None:
    batches = list(_loader(dataset))
    assert all(len(batch) == 2 for batch in batches)
    assert sorted(int(v) for _, labels in batches for v in labels) == list(range(N))


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        (("boxes.npy",), ValueError, "field 'boxes.npy' holds boxes, which follow the image's"),
        (("depth.png",), MissingFieldError, r"no 'depth.png'; fields names the extra fields"),
        (("jpg",), ValueError, "field 'jpg' is returned as the images already"),
        (("cls",), ValueError, "field 'cls' is returned as the labels already"),
        (("txt", "txt"), ValueError, r"fields names a field twice: \['txt', 'txt'\]"),
        ("txt", ValueError, "fields is a sequence of field names, not the string 'txt'"),
    ],
)
def test_refused_fields(dataset: Path, fields: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        _loader(dataset, fields=fields)


def _one_field_dataset(root: Path, *specs: Any, samples: list[dict[str, Any]]) -> Path:
    schema = Schema((spec("jpg", "jpeg"), spec("cls", "class"), *specs))
    write_v2_dataset(root, schema, samples, samples_per_shard=3)
    return root


def _image(i: int, height: int = 40, width: int = 40) -> bytes:
    return bytes(simplejpeg.encode_jpeg(PALETTE[cells(height, width, i)].astype(np.uint8)))


def _palette_png(pixels: npt.NDArray[np.uint8]) -> bytes:
    image = Image.fromarray(pixels, mode="P")
    image.putpalette(PALETTE.astype(np.uint8).ravel().tolist())
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("palette", [False, True])
def test_masks_are_decoded_as_opencv_decodes_them(tmp_path: Path, palette: bool) -> None:
    """8-bit grey values as stored; a palette expanded to its RGB colours (OpenCV's
    IMREAD_UNCHANGED, as RGB). No resize: the output size is the images' own."""
    masks = [cells(SIZE, SIZE, i) for i in range(4)]
    encoded = [_palette_png(m) if palette else png(m) for m in masks]
    samples = [{"jpg": _image(i, SIZE, SIZE), "cls": i, "seg.png": encoded[i]} for i in range(4)]
    path = _one_field_dataset(tmp_path, spec("seg.png", "png", geometry="mask"), samples=samples)
    loader = make_dali_loader(
        path, batch_size=2, transform=CenterCrop(SIZE, resize=SIZE), fields=("seg.png",)
    )
    seen = _samples(loader)
    for i, data in enumerate(encoded):
        expected = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
        assert expected is not None
        if palette:
            expected = cv2.cvtColor(expected, cv2.COLOR_BGR2RGB)
            assert np.array_equal(expected, PALETTE[masks[i]])
        got = seen[i][1]["seg.png"].numpy()
        assert np.array_equal(got, expected.reshape(SIZE, SIZE, -1))


def test_optional_masks_are_refused(tmp_path: Path) -> None:
    samples = [{"jpg": _image(i), "cls": i, "seg.png": png(cells(40, 40, i))} for i in range(4)]
    path = _one_field_dataset(
        tmp_path, spec("seg.png", "png", geometry="mask", optional=True), samples=samples
    )
    with pytest.raises(ValueError, match=r"mask field 'seg\.png' is optional; a DALI batch of"):
        _loader(path, fields=("seg.png",))


def test_an_optional_image_is_refused(tmp_path: Path) -> None:
    schema = Schema((spec("jpg", "jpeg", optional=True), spec("cls", "class")))
    write_v2_dataset(tmp_path, schema, [{"jpg": _image(i), "cls": i} for i in range(4)])
    with pytest.raises(MissingFieldError, match="field 'jpg' is optional; the DALI reader needs"):
        _loader(tmp_path)


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (png(cells(40, 40, 0).astype(np.uint16) * 1000), "mask 'seg.png' is a 16-bit PNG"),
        (png(cells(40, 44, 0)), "mask 'seg.png' is 40x44 pixels, its image 40x40"),
    ],
)
@pytest.mark.parametrize("train", [False, True])
def test_masks_the_reader_cannot_follow(
    tmp_path: Path, mask: bytes, message: str, train: bool
) -> None:
    samples = [{"jpg": _image(i), "cls": i, "seg.png": png(cells(40, 40, i))} for i in range(5)]
    samples[3]["seg.png"] = mask
    path = _one_field_dataset(tmp_path, spec("seg.png", "png", geometry="mask"), samples=samples)
    with pytest.raises(ShardFormatError, match=rf"shards/000001\.tar: key 000000003: {message}"):
        list(_loader(path, fields=("seg.png",), transform=_crop(train)))


def test_a_required_member_that_is_absent(tmp_path: Path) -> None:
    samples = [{"jpg": _image(i), "cls": i, "txt": f"t{i}", "json": "{}"} for i in range(5)]
    del samples[2]["txt"]  # the writer leaves it out, as it would an optional one
    path = _one_field_dataset(
        tmp_path, spec("txt", "text"), spec("json", "json", optional=True), samples=samples
    )
    with pytest.raises(ShardFormatError, match=r"key 000000002: no 'txt' member, but the field"):
        list(_loader(path, fields=("txt", "json")))
    with pytest.raises(DaliReadError):  # DALI's missing_component_behavior="error"
        list(_loader(path, fields=("txt",)))


def test_a_damaged_zstd_member(dataset: Path, tmp_path: Path) -> None:
    samples = [{"jpg": _image(i), "cls": i, "txt.zst": caption(i)} for i in range(4)]
    schema_spec = spec("txt.zst", "text", zstd=wants_dictionary("txt.zst"))
    path = _one_field_dataset(tmp_path, schema_spec, samples=samples * 2)
    (path / "dicts" / "txt.zst.zdict").write_bytes(
        (dataset / "dicts" / "caption.txt.zst.zdict").read_bytes()
    )
    with pytest.raises(
        FastpackError, match=r"key 000000000: member 'txt.zst': zstd frame does not"
    ):
        list(_loader(path, fields=("txt.zst",)))


def test_make_loader_gives_dali_batches_the_torch_paths_shape(dataset: Path) -> None:
    """Through `make_loader`, both loaders yield one value per asked field, in the order
    asked: the image and mask arrays agree in shape, the label is the label."""

    fields = ("seg.png", "jpg", "txt", "cls")
    ds = Dataset(dataset, transform=CenterCrop(SIZE, resize=RESIZE), fields=fields)
    shapes = {}
    for name in ("torch", "dali"):
        loader = make_loader(ds, batch_size=4, shuffle=False, num_workers=1, loader=name)
        masks, images, texts, labels = next(iter(loader))
        assert labels.tolist() == [0, 1, 2, 3], name
        assert [t is None for t in texts] == [True, False, False, True], name
        shapes[name] = (tuple(images.shape), tuple(masks.shape[:3]))
    assert shapes["dali"] == shapes["torch"] == ((4, SIZE, SIZE, 3), (4, SIZE, SIZE))


def test_make_dali_loader_reads_a_datasets_own_fields_in_its_shape(dataset: Path) -> None:
    """Over a Dataset, `make_dali_loader` reads its transform and fields as `make_loader`
    does: one value per field in the Dataset's order; fields given here take their place."""
    fields = ("seg.png", "jpg", "txt", "cls")
    ds = Dataset(dataset, transform=EVAL, fields=fields)
    loader = make_dali_loader(ds, batch_size=4, num_workers=1)
    assert (loader.options.shuffle, loader.order) == (False, fields)  # CenterCrop: not random
    masks, images, texts, labels = next(iter(loader))
    assert labels.tolist() == [0, 1, 2, 3]
    assert [t is None for t in texts] == [True, False, False, True]
    assert (tuple(images.shape), tuple(masks.shape[:3])) == ((4, SIZE, SIZE, 3), (4, SIZE, SIZE))
    loader.close()
    asked = make_dali_loader(ds, batch_size=4, num_workers=1, fields=("txt",))
    images, labels, values = next(iter(asked))
    assert (asked.order, list(values)) == (None, ["txt"])
    asked.close()
