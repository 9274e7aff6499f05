"""`make_loader(decoder="dali")`: the same dataset and transform through DALI's CPU operators."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, make_loader

from .conftest import Built


def test_dali_decoder_matches_simplejpeg_for_evaluation(
    build_dataset: Callable[..., Built],
) -> None:
    built = build_dataset(classes=3, per_class=5, size=96)
    dataset = Dataset(built.path, transform=CenterCrop(48))
    ours = make_loader(dataset, batch_size=4, shuffle=False, num_workers=0)
    dali = make_loader(dataset, batch_size=4, shuffle=False, num_workers=2, decoder="dali")
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


def test_dali_decoder_training_shapes(build_dataset: Callable[..., Built]) -> None:
    built = build_dataset(classes=2, per_class=6, size=96)
    dataset = Dataset(built.path, transform=RandomResizedCrop(32))
    loader = make_loader(dataset, batch_size=5, num_workers=1, decoder="dali", seed=3)
    batches = list(loader)
    assert [len(labels) for _, labels in batches] == [5, 5, 2]
    assert all(images.shape[1:] == (32, 32, 3) for images, _ in batches)
    seen = sorted(torch.cat([labels for _, labels in batches]).tolist())
    assert seen == sorted(dataset.labels.tolist())


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        (None, "needs a RandomResizedCrop or CenterCrop transform, got None"),
        (CenterCrop((32, 48)), r"makes square crops, got \(32, 48\)"),
    ],
)
def test_dali_decoder_refuses_what_it_cannot_do(
    build_dataset: Callable[..., Built], transform: CenterCrop | None, message: str
) -> None:
    dataset = Dataset(build_dataset().path, transform=transform)
    with pytest.raises(ValueError, match=message):
        make_loader(dataset, batch_size=2, decoder="dali")


def test_unknown_decoder(build_dataset: Callable[..., Built]) -> None:
    dataset = Dataset(build_dataset().path, transform=CenterCrop(16))
    with pytest.raises(ValueError, match="decoder must be 'simplejpeg' or 'dali', got 'pil'"):
        make_loader(dataset, batch_size=2, decoder="pil")  # type: ignore[arg-type]
