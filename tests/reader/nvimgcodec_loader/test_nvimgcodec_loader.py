"""`make_loader(loader="nvimgcodec")` on nvImageCodec's CPU backend: the code path a GPU runs,
with the decode on the CPU. It reads the batches, labels and crops of the CPU path, and its
pixels agree with the CPU path's to within a stated PSNR."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fastpack.formats import DatasetFiles, ShardFormatError
from fastpack.reader import (
    CenterCrop,
    Dataset,
    DeviceUnavailableError,
    MissingDependencyError,
    RandomResizedCrop,
    make_loader,
)
from fastpack.reader.image.normalize import IMAGENET_MEAN, IMAGENET_STD

from ..conftest import Built

BATCH = 8
MIN_PSNR_DB = 30.0  # resampling differs (a full-size region resized, or a DCT-scaled decode)


def _cpu(ds: Dataset, **kw: Any) -> Any:
    return make_loader(ds, batch_size=BATCH, num_workers=1, seed=3, **kw)


def _device(ds: Dataset, **kw: Any) -> Any:
    return make_loader(
        ds, batch_size=BATCH, num_workers=1, seed=3, loader="nvimgcodec", device="cpu", **kw
    )


def _pixels(images: torch.Tensor) -> np.ndarray:
    """Normalized float (B, 3, H, W) back to 0-255 values (B, H, W, 3)."""
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1) * 255
    return (images * std + mean).permute(0, 2, 3, 1).numpy()


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float(10 * np.log10(255**2 / max(mse, 1e-12)))


@pytest.mark.parametrize(
    "transform",
    [RandomResizedCrop(48), RandomResizedCrop((40, 56), flip_prob=1.0), CenterCrop(48)],
    ids=repr,
)
def test_same_batches_labels_and_pixels_within_psnr(
    build_dataset: Callable[..., Built], transform: Any
) -> None:
    built = build_dataset(classes=3, per_class=10, size=96)
    ds = Dataset(built.path, transform=transform, seed=5)
    ds.set_epoch(2)
    cpu, device = _cpu(ds), _device(ds)
    assert len(device) == len(cpu)
    seen = 0
    for (cpu_images, cpu_labels), (images, labels) in zip(cpu, device, strict=True):
        assert torch.equal(labels, cpu_labels)
        assert images.dtype == torch.float32
        assert images.shape == (len(labels), 3, *transform.output_shape)
        assert images.is_contiguous(memory_format=torch.channels_last)
        psnr = _psnr(_pixels(images), cpu_images.numpy())
        assert psnr >= MIN_PSNR_DB, f"PSNR {psnr:.1f} dB against the CPU path"
        seen += len(labels)
    assert seen == len(ds)


def test_a_crop_that_is_mirrored_differs_from_one_that_is_not(
    build_dataset: Callable[..., Built],
) -> None:
    """The flips are the transform's: with flip_prob 1 every image is the mirror of the one
    with flip_prob 0 (same draws, same regions)."""
    built = build_dataset(classes=2, per_class=8, size=80)
    plain = Dataset(built.path, transform=RandomResizedCrop(32, flip_prob=0.0), seed=1)
    mirrored = Dataset(built.path, transform=RandomResizedCrop(32, flip_prob=1.0), seed=1)
    (a, _), (b, _) = next(iter(_device(plain))), next(iter(_device(mirrored)))
    assert torch.allclose(a.flip(-1), b, atol=1e-5)
    assert not torch.allclose(a, b, atol=1e-3)


def test_resume_reads_what_the_cpu_loader_would(build_dataset: Callable[..., Built]) -> None:
    built = build_dataset(classes=3, per_class=8, size=64)
    ds = Dataset(built.path, transform=RandomResizedCrop(32), seed=0)
    device = _device(ds)
    batches = iter(device)
    next(batches)
    state = device.state_dict()
    rest = [labels for _, labels in batches]
    resumed = _device(ds)
    resumed.load_state_dict(state)
    assert [labels.tolist() for _, labels in resumed] == [t.tolist() for t in rest]
    cpu = _cpu(ds)
    cpu.load_state_dict(state)  # the torch loader takes the same state
    assert [labels.tolist() for _, labels in cpu] == [t.tolist() for t in rest]


def test_stats_count_the_device_decode(build_dataset: Callable[..., Built]) -> None:
    built = build_dataset(classes=2, per_class=8, size=64)
    ds = Dataset(built.path, transform=RandomResizedCrop(32), seed=0)
    device = _device(ds)
    taken = sum(len(labels) for _, labels in device)
    stats = device.stats()
    assert stats.samples == taken == len(ds)
    assert stats.device_decode_seconds is not None
    assert 0 < stats.device_decode_seconds <= stats.wait_seconds
    assert sum(w.samples for w in stats.workers) >= len(ds)
    assert "decoding on its device" in stats.format()
    assert device.stats().device_decode_seconds == 0  # nothing since


def test_an_image_that_does_not_decode_is_named(build_dataset: Callable[..., Built]) -> None:
    """Its scan names a component the frame does not have: the frame header reads (the
    workers check it), the decode fails, and the error names the sample."""
    built = build_dataset(classes=1, per_class=4, size=64)
    ds = Dataset(built.path, transform=CenterCrop(32))
    files = DatasetFiles(built.path)
    start, size = int(files.index.offsets("jpg")[0]), int(files.index.sizes("jpg")[0])
    with files.shard_path(int(files.index.shard[0])).open("r+b") as f:
        f.seek(start)
        member = f.read(size)
        sos = member.index(b"\xff\xda")  # FFDA, length (2), count (1), first component id
        f.seek(start + sos + 5)
        f.write(b"\x09")
    with pytest.raises(ShardFormatError, match=r"sample 0 .* does not decode"):
        for _ in make_loader(
            ds, batch_size=4, num_workers=0, shuffle=False, loader="nvimgcodec", device="cpu"
        ):
            pass


def test_refusals_name_what_to_do(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    built = build_dataset(classes=1, per_class=4, size=64)
    ds = Dataset(built.path, transform=RandomResizedCrop(32))
    with pytest.raises(ValueError, match="needs a transform that says its crops"):
        make_loader(Dataset(built.path), batch_size=2, loader="nvimgcodec", device="cpu")
    with pytest.raises(ValueError, match="pin_memory"):
        make_loader(ds, batch_size=2, loader="nvimgcodec", device="cpu", pin_memory=True)
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="device='cpu' runs"):
            make_loader(ds, batch_size=2, loader="nvimgcodec")
    real_import = builtins.__import__

    def no_nvimgcodec(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("nvidia.nvimgcodec"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nvimgcodec)
    monkeypatch.delitem(__import__("sys").modules, "nvidia.nvimgcodec", raising=False)
    with pytest.raises(MissingDependencyError, match=r"fastpack\[nvimgcodec\]"):
        make_loader(ds, batch_size=2, loader="nvimgcodec", device="cpu")
