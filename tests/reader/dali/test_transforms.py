"""The torch path's transforms as DALI's operators (reader/dali/transforms.py): what each gives,
the one registry, a transform of one's own that the pipeline builds as it says, and a transform
DALI has no equivalent for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, make_loader
from fastpack.reader.dali import DaliLoader, make_dali_loader, register_transform
from fastpack.reader.dali import transforms as dali_transforms
from fastpack.reader.dali.options import FieldOutput, PipelineOptions
from fastpack.reader.dali.transforms import (
    CROP_ATTEMPTS,
    DaliCenterCrop,
    DaliRandomResizedCrop,
    DaliTransform,
    Operators,
    dali_transform,
)
from fastpack.reader.image.decode import Image, JpegData
from nvidia.dali.data_node import DataNode

from ..conftest import Built


def test_random_resized_crop_gives_its_window_flip_and_decoder_arguments() -> None:
    transform = RandomResizedCrop(
        24, scale=(0.3, 0.9), ratio=(0.8, 1.25), flip_prob=0.25, max_upscale=2.0, fastdct=True
    )
    crop = dali_transform(transform, "ds")
    assert crop == DaliRandomResizedCrop(
        size=24,
        fast_idct=True,
        fancy_upsampling=True,
        scale=(0.3, 0.9),
        ratio=(0.8, 1.25),
        flip_prob=0.25,
    )
    assert crop.random
    assert crop.window_args() == {
        "random_area": [0.3, 0.9],
        "random_aspect_ratio": [0.8, 1.25],
        "num_attempts": CROP_ATTEMPTS,
    }
    assert crop.decoder_args(gpu=False) == {"use_fast_idct": True}
    assert crop.decoder_args(gpu=True) == {"use_fast_idct": True, "jpeg_fancy_upsampling": True}


def test_center_crop_gives_its_resize_and_decoder_arguments() -> None:
    crop = dali_transform(CenterCrop(24, resize=40, fastupsample=True), "ds")
    assert crop == DaliCenterCrop(size=24, fast_idct=False, fancy_upsampling=False, resize_size=40)
    assert not crop.random
    assert crop.decoder_args(gpu=True) == {"use_fast_idct": False, "jpeg_fancy_upsampling": False}
    assert dali_transform(CenterCrop(24), "ds") == DaliCenterCrop(size=24, resize_size=27)


class Grayscale:
    """A transform of the torch path's protocol that DALI has no operators for."""

    output_shape = (8, 8)
    draws = 0

    def __call__(
        self, data: JpegData, draws: object = None, out: Image | None = None
    ) -> Image:  # pragma: no cover - never run here
        return np.zeros((8, 8, 3), np.uint8)

    def __repr__(self) -> str:
        return "Grayscale()"


class JitteredCrop(RandomResizedCrop):
    """A subclass may do more than its base: it is not read as its base."""


@pytest.mark.parametrize(
    ("transform", "name"), [(Grayscale(), "Grayscale"), (JitteredCrop(8), "JitteredCrop")]
)
def test_a_transform_without_dali_equivalent_is_refused_by_name(
    build_dataset: Callable[..., Built], transform: object, name: str
) -> None:
    path = build_dataset().path
    message = (
        rf"the DALI loader: transform {name} \(.*\) has no DALI equivalent; DALI runs "
        r"CenterCrop, RandomResizedCrop"
    )
    with pytest.raises(ValueError, match=message):
        make_dali_loader(path, batch_size=2, transform=transform)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):  # the same through make_loader
        make_loader(Dataset(path, transform=transform), batch_size=2, loader="dali")  # type: ignore[arg-type]


def test_a_registered_transform_is_read(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    def adapter(t: JitteredCrop, where: str) -> DaliTransform:
        return DaliRandomResizedCrop(size=t.output_shape[0], flip_prob=0.0)

    monkeypatch.setattr(dali_transforms, "_ADAPTERS", dict(dali_transforms._ADAPTERS))
    register_transform(JitteredCrop, adapter)
    loader = make_dali_loader(
        build_dataset().path, batch_size=2, transform=JitteredCrop(8), num_workers=1
    )
    assert loader.options.transform == DaliRandomResizedCrop(size=8, flip_prob=0.0)
    images, _ = next(iter(loader))
    assert tuple(images.shape[1:]) == (8, 8, 3)
    loader.close()


@dataclass(frozen=True, kw_only=True)
class DaliSquash(DaliTransform):
    """A transform of its own: the whole image squashed to `size` x `size`, masks alike."""

    def pictures(
        self, ops: Operators, jpg: DataNode, shape: DataNode, masks: Mapping[str, DataNode]
    ) -> tuple[DataNode, dict[str, DataNode]]:
        images = ops.finish(ops.resize(ops.decode(jpg), self.size))
        return images, {
            name: ops.finish_mask(ops.resize(ops.decode_mask(png), self.size, nearest=True))
            for name, png in masks.items()
        }


@dataclass(frozen=True, kw_only=True)
class DaliNothing(DaliTransform):
    """A DaliTransform that does not say how DALI builds it."""


def test_the_pipeline_builds_what_the_transform_says(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new transform is an adapter and a DaliTransform with its operators: the pipeline asks
    the transform, whatever its type (the whole image squashed: no crop, unlike both built-in
    ones)."""
    monkeypatch.setattr(dali_transforms, "_ADAPTERS", dict(dali_transforms._ADAPTERS))
    register_transform(Grayscale, lambda t, where: DaliSquash(size=t.output_shape[0]))
    path = build_dataset(classes=2, per_class=2, size=48).path
    loader = make_dali_loader(
        path, batch_size=4, transform=Grayscale(), shuffle=False, num_workers=1
    )
    squashed, _ = next(iter(loader))
    loader.close()
    assert tuple(squashed.shape) == (4, 8, 8, 3)
    centre = make_dali_loader(
        path, batch_size=4, transform=CenterCrop(8, resize=8), shuffle=False, num_workers=1
    )
    cropped, _ = next(iter(centre))
    centre.close()
    assert not torch.equal(squashed, cropped)  # images of varied shapes squashed, not cropped


def test_a_dali_transform_without_operators_is_refused_by_name(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = build_dataset().path
    monkeypatch.setattr(dali_transforms, "_ADAPTERS", dict(dali_transforms._ADAPTERS))
    register_transform(Grayscale, lambda t, where: DaliNothing(size=8))  # type: ignore[abstract]
    with pytest.raises(TypeError, match=r"abstract class DaliNothing .*pictures"):
        make_dali_loader(path, batch_size=2, transform=Grayscale())
    register_transform(Grayscale, lambda t, where: "grey")  # type: ignore[arg-type,return-value]
    message = (
        r"the DALI loader: the DALI adapter of Grayscale returned str, not a DaliTransform "
        r"\(which says how DALI builds it\)"
    )
    with pytest.raises(TypeError, match=message):
        make_dali_loader(path, batch_size=2, transform=Grayscale())


def test_a_dataset_gives_its_transform_field_and_seed(build_dataset: Callable[..., Built]) -> None:
    """Over a Dataset, make_dali_loader reads its transform; given here, one takes its place."""
    path: Path = build_dataset().path
    dataset = Dataset(path, transform=RandomResizedCrop(16, flip_prob=0.0), seed=4)
    loader = make_dali_loader(dataset, batch_size=2, seed=4, num_workers=1)
    assert isinstance(loader, DaliLoader)
    assert loader.options.transform == DaliRandomResizedCrop(size=16, flip_prob=0.0)
    assert (loader.options.field, loader.options.shuffle, loader.order) == ("jpg", True, None)
    loader.close()
    with pytest.raises(ValueError, match="the Dataset's seed is 4 and the loader's seed is 0"):
        make_dali_loader(dataset, batch_size=2)
    other = make_dali_loader(dataset, batch_size=2, transform=CenterCrop(8), num_workers=1)
    assert other.options.transform == DaliCenterCrop(size=8, resize_size=9)
    assert not other.options.shuffle  # the default follows the transform: not random
    other.close()


@pytest.mark.parametrize("masks", [False, True])
@pytest.mark.parametrize(
    "crop",
    [
        DaliRandomResizedCrop(size=32, fast_idct=True, fancy_upsampling=False),
        DaliCenterCrop(size=32, resize_size=40, fancy_upsampling=False),
    ],
)
def test_the_gpu_graph_takes_the_transforms_arguments(crop: DaliTransform, masks: bool) -> None:
    """The GPU pipeline is defined (not built: no GPU here) with every argument the transform
    gives, nvJPEG's chroma upsampling included; DALI checks argument names as operators are
    made, so a misspelt one fails here."""
    from fastpack.reader.dali.pipeline import build_pipeline  # noqa: PLC0415 -- optional: DALI

    options = PipelineOptions(
        paths=("a.tar",),
        index_paths=("a.idx",),
        batch_size=2,
        transform=crop,
        shuffle=True,
        drop_last=False,
        device="gpu",
        device_id=0,
        num_threads=1,
        seed=0,
        shard_id=0,
        num_shards=1,
        initial_fill=4,
        prefetch_queue_depth=2,
        dont_use_mmap=False,
        mean=(0.5, 0.5, 0.5),
        std=(0.2, 0.2, 0.2),
        fields=(FieldOutput(name="seg.png", kind="mask"),) if masks else (),
    )
    assert build_pipeline(options) is not None
