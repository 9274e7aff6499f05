"""The loaders the training benchmark compares, by name, over one prepared data folder
(`prepare`): `DATA/fastpack/dataset` (a fastpack build), `DATA/webdataset/*.tar` and
`DATA/corpus.txt` (the ImageFolder root). Each gives a `Feed`: `epoch(e)` iterates epoch `e` once
and yields `(images, labels)`; `stats()` is the loader's own `loader.stats()` where it has one.
A loader that cannot run here says why (`unavailable`), and is never imported then."""

from __future__ import annotations

import importlib.util
import math
import random
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from fastpack.formats import MANIFEST_NAME
from fastpack.reader import DaliOptions, Dataset, RandomResizedCrop, make_dali_loader, make_loader
from fastpack.reader.loader import LoaderName
from torch.utils.data import DataLoader

from benchmarks.readers.peers import fastpack_peer
from benchmarks.readers.peers._base import list_imagefolder
from benchmarks.training._model import to_input

Batch = tuple[Any, Any]

LOADERS: dict[str, str] = {
    "on-device": "data already on the device: one batch of the fastpack dataset, normalized "
    "there, reused (the model's own speed)",
    "fastpack": "fastpack Dataset + make_loader, RandomResizedCrop(224) (max_upscale=1: full "
    "quality)",
    "fastpack-upscale2": "fastpack as above, RandomResizedCrop(224, max_upscale=2)",
    "fastpack-dali": "fastpack make_loader(loader=\"dali\"): DALI's operators in fastpack's "
    "order (on the GPU where CUDA is)",
    "fastpack-nvimgcodec": 'fastpack make_loader(loader="nvimgcodec"): workers read the bytes '
    "and draw the crops, nvImageCodec decodes the crop regions on the trainer's GPU (its CPU "
    "backend without CUDA), resize and normalize there",
    "webdataset": "webdataset tars, simplejpeg full decode + OpenCV crop/resize, DataLoader",
    "imagefolder": "torchvision ImageFolder + RandomResizedCrop + flip on PIL, DataLoader",
    "dali-gpu": 'DALI\'s own GPU pipeline: make_dali_loader(path, dali=DaliOptions(device="gpu"))',
}


_NEEDS = {
    "imagefolder": "torchvision",
    "fastpack-dali": "nvidia.dali",
    "dali-gpu": "nvidia.dali",
    "fastpack-nvimgcodec": "nvidia.nvimgcodec",
}


@dataclass(frozen=True, kw_only=True)
class FeedOptions:
    data: Path  # the prepared folder
    batch_size: int
    workers: int
    seed: int
    device: torch.device


def unavailable(name: str, device: torch.device) -> str | None:
    """Why loader `name` cannot run here ("not installed: torchvision", "needs CUDA"), or None."""
    if name not in LOADERS:
        raise ValueError(f"unknown loader {name!r}; loaders are {', '.join(LOADERS)}")
    module = _NEEDS.get(name)
    if module is not None and not _importable(module):
        return f"not installed: {module}"
    if name == "dali-gpu" and device.type != "cuda":
        return "needs CUDA"
    return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def prepare(corpus: Path, data: Path, workers: int) -> None:
    """Builds every format the loaders read from the ImageFolder `corpus`, once (kept)."""
    data.mkdir(parents=True, exist_ok=True)
    (data / "corpus.txt").write_text(str(corpus.resolve()))
    if not (data / "fastpack" / "dataset" / MANIFEST_NAME).exists():
        shutil.rmtree(data / "fastpack", ignore_errors=True)
        fastpack_peer.convert(corpus, data / "fastpack", workers)
    if not any((data / "webdataset").glob("*.tar")):
        from benchmarks.readers.peers import _wds  # noqa: PLC0415 -- on use

        _wds.write_shards(corpus, data / "webdataset")


def subset(corpus: Path, out: Path, images: int, seed: int = 0) -> Path:
    """An ImageFolder of `images` of `corpus`'s JPEGs (hard links, class folders kept), drawn
    at random with `seed`: the short-epoch case's corpus."""
    samples = list_imagefolder(corpus)
    if images > len(samples):
        raise ValueError(f"{corpus}: {len(samples)} images, fewer than the {images} asked for")
    chosen = random.Random(seed).sample(samples, images)
    shutil.rmtree(out, ignore_errors=True)
    for sample in chosen:
        target = out / sample.path.parent.name / sample.path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.hardlink_to(sample.path)
    return out


class Feed:
    """A loader as the benchmark drives it."""

    def __init__(self, epochs: Any, loader: Any = None, batches: int | None = None) -> None:
        self._epochs = epochs  # has epoch(e), or is re-iterable
        self._loader = loader  # has stats(), or None
        self.batches = batches

    def epoch(self, e: int) -> Iterable[Batch]:
        run = getattr(self._epochs, "epoch", None)
        return run(e) if run is not None else self._epochs  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any] | None:
        return None if self._loader is None else dict(self._loader.stats().to_dict())


class _Resident:
    """`batches` times the same batch per epoch, already on the device."""

    def __init__(self, batch: Batch, batches: int) -> None:
        self.batch = batch
        self.batches = batches

    def epoch(self, e: int) -> Iterator[Batch]:
        for _ in range(self.batches):
            yield self.batch


def make_feed(name: str, options: FeedOptions) -> Feed:
    """The loader `name` over `options.data` (check `unavailable` first)."""
    return _FEEDS[name](options)


def _fastpack(options: FeedOptions, max_upscale: float = 1.0) -> Feed:
    epochs = fastpack_peer.loader(
        options.data / "fastpack",
        options.batch_size,
        options.workers,
        options.seed,
        max_upscale=max_upscale,
    )
    return Feed(epochs, epochs.data)


def _webdataset(options: FeedOptions) -> Feed:
    from benchmarks.readers.peers import wds_simplejpeg_peer  # noqa: PLC0415 -- on use

    loader = wds_simplejpeg_peer.loader(
        options.data / "webdataset", options.batch_size, options.workers, options.seed
    )
    return Feed(loader)


def _on_device(options: FeedOptions) -> Feed:
    dataset = Dataset(options.data / "fastpack" / "dataset", transform=RandomResizedCrop(224))
    items = [dataset[i % len(dataset)] for i in range(options.batch_size)]
    images = torch.from_numpy(np.stack([image for image, _ in items]))
    labels = torch.tensor([int(label) for _, label in items])
    batch = to_input(images, labels, options.device)
    batches = math.ceil(len(dataset) / options.batch_size)
    return Feed(_Resident(batch, batches), batches=batches)


def _fastpack_dali(options: FeedOptions) -> Feed:
    gpu = {"device": "gpu", "device_id": 0} if options.device.type == "cuda" else {}
    return _fastpack_loader(options, "dali", **gpu)


def _fastpack_nvimgcodec(options: FeedOptions) -> Feed:
    return _fastpack_loader(options, "nvimgcodec", device=options.device)


def _fastpack_loader(options: FeedOptions, loader: LoaderName, **extra: Any) -> Feed:
    """fastpack's `make_loader(loader=...)` over the dataset, full-quality crops."""
    dataset = Dataset(
        options.data / "fastpack" / "dataset", transform=RandomResizedCrop(224), seed=options.seed
    )
    made = make_loader(
        dataset,
        batch_size=options.batch_size,
        num_workers=options.workers,
        seed=options.seed,
        loader=loader,
        **extra,
    )
    return Feed(fastpack_peer.FastpackEpochs(dataset, made), made)


def _imagefolder(options: FeedOptions) -> Feed:
    datasets: Any = importlib.import_module("torchvision.datasets")
    transforms: Any = importlib.import_module("torchvision.transforms")
    transform = transforms.Compose(
        [
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.PILToTensor(),
        ]
    )
    root = (options.data / "corpus.txt").read_text().strip()
    folder = datasets.ImageFolder(root, transform=transform)
    loader = DataLoader(
        folder,
        batch_size=options.batch_size,
        shuffle=True,
        num_workers=options.workers,
        persistent_workers=options.workers > 0,
        pin_memory=options.device.type == "cuda",
        generator=torch.Generator().manual_seed(options.seed),
    )
    return Feed(loader)


def _dali_gpu(options: FeedOptions) -> Feed:
    loader = make_dali_loader(
        options.data / "fastpack" / "dataset",
        batch_size=options.batch_size,
        transform=RandomResizedCrop(224),
        num_workers=options.workers,
        seed=options.seed,
        dali=DaliOptions(device="gpu", device_id=0),
    )
    return Feed(loader, loader)


_FEEDS: dict[str, Callable[[FeedOptions], Feed]] = {
    "on-device": _on_device,
    "fastpack": _fastpack,
    "fastpack-upscale2": lambda options: _fastpack(options, max_upscale=2.0),
    "fastpack-dali": _fastpack_dali,
    "fastpack-nvimgcodec": _fastpack_nvimgcodec,
    "webdataset": _webdataset,
    "imagefolder": _imagefolder,
    "dali-gpu": _dali_gpu,
}
