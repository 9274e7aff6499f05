"""`make_nvimgcodec_loader`: a loader whose workers only read and draw, and whose trainer
decodes on its device (`make_loader(loader="nvimgcodec")`)."""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..image.normalize import IMAGENET_MEAN, IMAGENET_STD
from ..image.transforms import GeometryTransform
from ..map_style.dataset import Dataset
from ..order.sampler import EpochBatchSampler
from ..order.stream import SkipStale
from ..stats import LoaderMeter, LoaderStats
from ..stats.verdict import device_decode_verdict
from .crops import EncodedCrops, crop_tensors
from .device_decode import DeviceDecoder

if TYPE_CHECKING:
    import torch

    from ..torch_loader.dataloader import FastpackLoader

DEFAULT_WORKERS = 4  # reading and drawing: a few workers feed a GPU's decoder


def make_nvimgcodec_loader(  # noqa: PLR0913 -- public signature
    dataset: Dataset,
    *,
    batch_size: int,
    shuffle: bool = True,
    num_workers: int | None = None,
    drop_last: bool = False,
    seed: int = 0,
    prefetch_factor: int = 2,
    persistent_workers: bool = True,
    device: str | torch.device = "cuda",
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
    dtype: torch.dtype | None = None,
    channels_last: bool = True,
    decode_threads: int = 0,
) -> NvImageCodecLoader:
    """A loader yielding `(images, labels)`: images a `(B, 3, H, W)` float tensor on `device`
    (float32 unless `dtype` says otherwise; channels_last strides unless `channels_last=False`),
    normalized as `(pixel / 255 - mean) / std`, and labels a `(B,)` int64 tensor on `device`.

    The DataLoader's workers (default `min(4, cpu count)`) read each batch's JPEG bytes from the
    shards and draw each image's crop with the dataset's transform and `sample_draws`, as the
    CPU path does: the same batches, in the same order (`EpochBatchSampler` with `shuffle`,
    `drop_last`, `seed`, ranks), with the same regions, flips and labels. The trainer decodes
    each batch with nvImageCodec on `device`: a GPU (its hardware JPEG engine where it has one),
    or `device="cpu"`, nvImageCodec's CPU backend (`decode_threads` threads, 0: one per core).
    Only each crop's region is decoded; torch resizes it (bilinear, antialiased), mirrors and
    normalizes on the device. Pixels differ from the CPU path's by resampling alone
    (tests/reader/nvimgcodec_loader: at least 30 dB PSNR).

    `dataset` is a `Dataset` of `(image, label)` samples whose transform says its crops
    (`RandomResizedCrop`, `CenterCrop`); anything else is refused with a ValueError naming it.
    Without nvImageCodec it raises a `MissingDependencyError` (an ImportError) naming the extra
    to install (`pip install 'fastpack[nvimgcodec]'`); asked for a GPU torch cannot see, a
    `DeviceUnavailableError` (a RuntimeError) that says `device="cpu"` runs the CPU backend.

    As the torch loader: `state_dict()`/`load_state_dict()` resume at any batch boundary,
    persistent workers read on into the next epoch's first batches, and `stats()` gives a
    `LoaderStats` whose `wait_seconds` is the trainer's time in `next()`, decode included,
    and whose `device_decode_seconds` is the part of it spent decoding.
    """
    import torch  # noqa: PLC0415 -- optional: torch

    from ..torch_loader.dataloader import FastpackLoader  # noqa: PLC0415 -- optional: torch

    transform = _geometry_transform(dataset)
    where = str(dataset.path)
    decoder = DeviceDecoder(
        transform.output_shape,
        device=torch.device(device),
        mean=mean,
        std=std,
        dtype=torch.float32 if dtype is None else dtype,
        channels_last=channels_last,
        threads=decode_threads,
        name=lambda i: f"{where}: sample {i} ({dataset.key(i)})",
    )
    if num_workers is None:
        num_workers = min(DEFAULT_WORKERS, os.cpu_count() or 1)
    sampler = EpochBatchSampler(
        dataset,
        batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        seed=seed,
        ahead_stride=max(1, num_workers) if dataset.io == "pread" else 0,
    )
    meter = LoaderMeter.for_workers(num_workers)
    run = multiprocessing.RawValue(ctypes.c_int64, 0)  # the epoch stream's restarts
    options: dict[str, Any] = {
        "batch_sampler": sampler,
        "num_workers": num_workers,
        "collate_fn": crop_tensors,
        "worker_init_fn": _WorkerStart(meter, run),
    }
    if num_workers > 0:
        options["prefetch_factor"] = prefetch_factor
        options["persistent_workers"] = persistent_workers
        if sys.platform.startswith("linux"):
            options["multiprocessing_context"] = "fork"
    inner = FastpackLoader(EncodedCrops(dataset, transform), **options)  # type: ignore[arg-type]
    inner.stream_run = run
    return NvImageCodecLoader(inner, decoder, meter)


def _geometry_transform(dataset: Dataset) -> GeometryTransform:
    """The dataset's transform, which must say where its crops come from."""
    if not isinstance(dataset, Dataset):
        raise ValueError(
            f"loader='nvimgcodec' reads a Dataset, got {type(dataset).__name__}; read a "
            "StreamingDataset or a Mix with loader='torch'"
        )
    if not dataset.layout.image_label:
        raise ValueError(
            f"{dataset.path}: loader='nvimgcodec' reads (image, label) samples, this Dataset "
            f"reads fields {dataset.fields}; use loader='torch'"
        )
    transform = dataset.transform
    if transform is None or not callable(getattr(transform, "crop", None)):
        raise ValueError(
            f"{dataset.path}: loader='nvimgcodec' needs a transform that says its crops "
            f"(RandomResizedCrop, CenterCrop), got {transform!r}"
        )
    return transform  # type: ignore[return-value]


class _WorkerStart:
    """Each worker's init: its stats recorder, and the skip of a restarted stream's batches."""

    def __init__(self, meter: LoaderMeter, run: Any) -> None:
        self.record = meter.worker_init(None)
        self.run = run

    def __call__(self, worker_id: int) -> None:
        from torch.utils.data import get_worker_info  # noqa: PLC0415 -- optional: torch

        self.record(worker_id)
        info = get_worker_info()
        if info is not None and hasattr(info.dataset, "__getitems__"):
            info.dataset.__getitems__ = SkipStale(info.dataset.__getitems__, self.run)


class NvImageCodecLoader:
    """The loader `make_nvimgcodec_loader` makes: a DataLoader of `CropBatch`es, each decoded
    on the device as the trainer takes it."""

    def __init__(self, inner: FastpackLoader, decoder: DeviceDecoder, meter: LoaderMeter) -> None:
        self.inner, self.decoder, self.meter = inner, decoder, meter
        self._decoded = 0.0  # decoder.seconds at the previous stats()

    @property
    def dataset(self) -> Dataset:
        crops: EncodedCrops = self.inner.dataset  # type: ignore[assignment]
        return crops.dataset

    @property
    def batch_sampler(self) -> EpochBatchSampler:
        sampler: EpochBatchSampler = self.inner.batch_sampler  # type: ignore[assignment]
        return sampler

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self.meter.watch(self._decoded_batches())

    def _decoded_batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        device = self.decoder.device
        for batch in self.inner:
            labels = batch.labels.to(device, non_blocking=True)
            yield self.decoder.decode(batch), labels

    def stats(self) -> LoaderStats:
        """What the loader did since the previous call (`LoaderStats`), with the trainer's
        time decoding on the device (`device_decode_seconds`, part of `wait_seconds`)."""
        decoded, self._decoded = self.decoder.seconds - self._decoded, self.decoder.seconds
        stats = self.meter.stats()
        verdict = device_decode_verdict(stats.wait_share, decoded, stats.wait_seconds)
        return dataclasses.replace(
            stats, device_decode_seconds=decoded, verdict=verdict or stats.verdict
        )

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch has been read to (`FastpackLoader.state_dict`)."""
        return self.inner.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from `state_dict()`, of this loader or of the torch loader over the same
        dataset (`FastpackLoader.load_state_dict`)."""
        self.inner.load_state_dict(state)
