"""`make_loader(loader=...)`: each loader by its name, the same dataset and transform through
DALI's CPU operators (`loader="dali"`) as through the torch loader, and `decoder=`, the old
name of the switch, still read with a DeprecationWarning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fastpack.reader import CenterCrop, DaliLoader, Dataset, RandomResizedCrop, make_loader
from fastpack.reader.dali.transforms import DaliCenterCrop, DaliRandomResizedCrop
from fastpack.reader.errors import MissingFieldError
from fastpack.reader.torch_loader.dataloader import FastpackLoader

from .conftest import Built


def test_the_dali_loader_matches_the_torch_loader_for_evaluation(
    build_dataset: Callable[..., Built],
) -> None:
    built = build_dataset(classes=3, per_class=5, size=96)
    dataset = Dataset(built.path, transform=CenterCrop(48))
    ours = make_loader(dataset, batch_size=4, shuffle=False, num_workers=0)
    dali = make_loader(dataset, batch_size=4, shuffle=False, num_workers=2, loader="dali")
    ours_images = torch.cat([images for images, _ in ours]).numpy()
    ours_labels = torch.cat([labels for _, labels in ours]).numpy()
    dali_batches = list(dali)
    dali_images = torch.cat([images for images, _ in dali_batches]).numpy()
    dali_labels = torch.cat([labels for _, labels in dali_batches]).numpy()
    assert dali_images.dtype == np.uint8
    assert dali_images.shape == ours_images.shape == (len(dataset), 48, 48, 3)
    np.testing.assert_array_equal(dali_labels, ours_labels)
    # Decoders and resize filters differ (DCT scaling + bilinear here, DALI's antialiased
    # resize there), most on these noisy test images: the same picture, a few levels apart.
    diff = np.abs(dali_images.astype(np.int16) - ours_images.astype(np.int16)).mean(axis=(1, 2, 3))
    assert diff.mean() < 5.0, diff
    assert diff.max() < 12.0, diff
    other = np.roll(ours_images, 1, axis=0).astype(np.int16)
    shifted = np.abs(dali_images.astype(np.int16) - other).mean(axis=(1, 2, 3))
    assert shifted.min() > diff.max(), shifted  # the comparison tells images apart


def test_the_dali_loader_training_shapes(build_dataset: Callable[..., Built]) -> None:
    built = build_dataset(classes=2, per_class=6, size=96)
    dataset = Dataset(built.path, transform=RandomResizedCrop(32), seed=3)
    loader = make_loader(dataset, batch_size=5, num_workers=1, loader="dali", seed=3)
    batches = list(loader)
    assert [len(labels) for _, labels in batches] == [5, 5, 2]
    assert all(images.shape[1:] == (32, 32, 3) for images, _ in batches)
    seen = sorted(torch.cat([labels for _, labels in batches]).tolist())
    assert seen == sorted(dataset.labels.tolist())


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        (None, r"needs a transform \(CenterCrop, RandomResizedCrop\), got None"),
        (CenterCrop((32, 48)), r"makes square crops, but CenterCrop\(.*\) makes \(32, 48\)"),
    ],
)
def test_the_dali_loader_refuses_what_it_cannot_do(
    build_dataset: Callable[..., Built], transform: CenterCrop | None, message: str
) -> None:
    dataset = Dataset(build_dataset().path, transform=transform)
    with pytest.raises(ValueError, match=message):
        make_loader(dataset, batch_size=2, loader="dali")


def test_an_unknown_loader_is_refused_by_name(build_dataset: Callable[..., Built]) -> None:
    dataset = Dataset(build_dataset().path, transform=CenterCrop(16))
    names = "'torch', 'dali', 'nvimgcodec'"
    with pytest.raises(ValueError, match=rf"^loader must be one of {names}, got 'pil'$"):
        make_loader(dataset, batch_size=2, loader="pil")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("decoder", "kind", "name"),
    [("simplejpeg", FastpackLoader, "torch"), ("dali", DaliLoader, "dali")],
)
def test_the_old_decoder_keyword_chooses_its_loader_and_says_what_to_write(
    build_dataset: Callable[..., Built], decoder: str, kind: type, name: str
) -> None:
    dataset = Dataset(build_dataset().path, transform=CenterCrop(16))
    message = rf"^make_loader\(decoder='{decoder}'\) is deprecated: write loader='{name}'$"
    with pytest.warns(DeprecationWarning, match=message) as warned:
        loader = make_loader(dataset, batch_size=2, num_workers=1, decoder=decoder)
    assert warned[0].filename == __file__  # the warning points at the caller
    assert isinstance(loader, kind)
    labels = torch.cat([batch[1] for batch in loader])
    assert sorted(labels.tolist()) == sorted(dataset.labels.tolist())
    if isinstance(loader, DaliLoader):
        loader.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"decoder": "pil"},
            r"decoder must be 'simplejpeg' or 'dali', got 'pil' \(decoder= is deprecated: write "
            r"loader='torch' or loader='dali'\)",
        ),
        (
            {"decoder": "simplejpeg", "loader": "dali"},
            r"loader='dali' and decoder='simplejpeg' choose different loaders: write loader= ",
        ),
    ],
)
def test_a_decoder_keyword_that_names_no_loader_or_another_is_refused(
    build_dataset: Callable[..., Built], options: dict[str, Any], message: str
) -> None:
    dataset = Dataset(build_dataset().path, transform=CenterCrop(16))
    with pytest.raises(ValueError, match=message):
        make_loader(dataset, batch_size=2, **options)


def test_dali_options_follow_the_training_transform_and_dataset(
    build_dataset: Callable[..., Built],
) -> None:
    transform = RandomResizedCrop(
        24, scale=(0.3, 0.9), ratio=(0.8, 1.25), flip_prob=0.25, max_upscale=1.0, fastdct=True
    )
    dataset = Dataset(build_dataset().path, transform=transform, seed=7, io="pread")
    loader = make_loader(
        dataset,
        batch_size=2,
        num_workers=2,
        prefetch_factor=3,
        seed=7,
        pin_memory=False,
        loader="dali",
        initial_fill=16,
    )
    assert isinstance(loader, DaliLoader)
    o = loader.options
    assert o.transform == DaliRandomResizedCrop(
        size=24,
        scale=(0.3, 0.9),
        ratio=(0.8, 1.25),
        flip_prob=0.25,
        fast_idct=True,
        fancy_upsampling=True,
    )
    assert (o.train, o.shuffle, o.seed, o.field, o.dont_use_mmap) == (True, True, 7, "jpg", True)
    assert (o.num_threads, o.prefetch_queue_depth, o.initial_fill) == (2, 3, 16)
    loader.close()


def test_dali_options_follow_the_evaluation_transform(
    build_dataset: Callable[..., Built],
) -> None:
    # CenterCrop draws nothing, so the Dataset's seed has no say: make_loader's seeds the order
    dataset = Dataset(build_dataset().path, transform=CenterCrop(24, resize=40), seed=5)
    loader = make_loader(dataset, batch_size=2, num_workers=1, shuffle=False, loader="dali")
    assert isinstance(loader, DaliLoader)
    o = loader.options
    assert o.transform == DaliCenterCrop(size=24, resize_size=40)
    assert (o.train, o.shuffle) == (False, False)
    assert (o.seed, o.dont_use_mmap, o.prefetch_queue_depth) == (0, False, 2)
    loader.close()


def test_dali_flip_prob_mirrors_the_crops(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset(classes=2, per_class=3, size=64).path

    def images(flip_prob: float) -> torch.Tensor:
        transform = RandomResizedCrop(24, flip_prob=flip_prob)
        dataset = Dataset(path, transform=transform, seed=1)
        loader = make_loader(
            dataset, batch_size=3, shuffle=False, num_workers=1, seed=1, loader="dali"
        )
        return torch.cat([batch for batch, _ in loader])

    never, always = images(0.0), images(1.0)
    assert not torch.equal(never, always)  # the crops are not symmetric
    assert torch.equal(always, never.flip(2))  # same crops (same seed), every one mirrored


def test_dali_follows_the_dataset_epoch(build_dataset: Callable[..., Built]) -> None:
    """DALI reads the order of the dataset's epoch, whichever it is: the torch loader's."""
    path = build_dataset().path
    dataset = Dataset(path, transform=CenterCrop(16))
    dataset.set_epoch(2)  # a loader may start at any epoch
    loader = make_loader(dataset, batch_size=4, num_workers=1, loader="dali")
    ours = Dataset(path, transform=CenterCrop(16))
    reference = make_loader(ours, batch_size=4, num_workers=0)
    for epoch in (2, 7, 0, 0):
        dataset.set_epoch(epoch)
        ours.set_epoch(epoch)
        assert [y.tolist() for _, y in loader] == [y.tolist() for _, y in reference]


@pytest.mark.parametrize(
    ("transform", "dataset_seed", "kwargs", "message"),
    [
        (None, 0, {"pin_memory": True}, "cannot honour pin_memory=True: DALI's CPU batches"),
        (None, 0, {"persistent_workers": False}, "cannot honour persistent_workers=False"),
        (None, 0, {"num_workers": 0}, r"num_workers=0 \(loading in the main process\) has no"),
        (None, 0, {"prefetch_factor": 0}, "prefetch_factor .* must be at least 1, got 0"),
        (
            None, 0, {"timeout": 5, "worker_init_fn": print},
            "cannot honour timeout, worker_init_fn: not options of the DALI loader",
        ),
        (None, 0, {"scale": (0.5, 1.0)}, "cannot honour scale: not options of the DALI loader"),
        (None, 0, {"num_threads": 3}, "cannot honour num_threads: not options of the DALI"),
        (None, 0, {"dont_use_mmap": True}, "cannot honour dont_use_mmap: not options of the"),
        (None, 1, {"seed": 2}, "the Dataset's seed is 1 and the loader's seed is 2"),
        (
            RandomResizedCrop(16, fastupsample=True), 0, {},
            "cannot honour fastupsample=True on the CPU",
        ),
    ],
)  # fmt: skip
def test_dali_refuses_options_it_cannot_honour(
    build_dataset: Callable[..., Built],
    transform: RandomResizedCrop | None,
    dataset_seed: int,
    kwargs: dict[str, Any],
    message: str,
) -> None:
    transform = transform or RandomResizedCrop(16)
    dataset = Dataset(build_dataset().path, transform=transform, seed=dataset_seed)
    with pytest.raises(ValueError, match=message):
        make_loader(dataset, batch_size=2, loader="dali", **kwargs)


def test_dali_reads_the_dataset_field(build_dataset: Callable[..., Built]) -> None:
    dataset = Dataset(build_dataset().path, transform=CenterCrop(16))
    dataset.field = "webp"  # as if the dataset had such a member; it has not
    with pytest.raises(MissingFieldError, match=r"fields \['jpg', 'cls'\], no webp"):
        make_loader(dataset, batch_size=2, loader="dali")
