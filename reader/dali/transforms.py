"""The torch path's transforms (`fastpack.reader.image`) as DALI's operator arguments: one
adapter per transform class, in a registry that `make_dali_loader` reads, so that DALI is told
what to do by the same `RandomResizedCrop` or `CenterCrop` object as a `Dataset`.

    dali_transform(RandomResizedCrop(224, flip_prob=0.25), where)
    # DaliRandomResizedCrop(size=224, scale=(0.08, 1.0), ratio=(0.75, 1.33..), flip_prob=0.25, ..)

A transform class is looked up by its exact type (a subclass may change what it does, so it
needs an adapter of its own: `register_transform`); one with no adapter is refused with a
ValueError that names it. Free of DALI imports (pipeline.py turns these into operators).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..image.transforms import CenterCrop, RandomResizedCrop

# Random boxes tried before the centre-crop fallback: torchvision's and RandomResizedCrop's 10.
CROP_ATTEMPTS = 10


@dataclass(frozen=True, kw_only=True)
class DaliTransform:
    """What DALI does to every image: decode (with libjpeg-turbo's fast IDCT where
    `fast_idct`; nvJPEG upsamples chroma the fast way where not `fancy_upsampling`), then crop
    and resize to `size` x `size`."""

    size: int
    fast_idct: bool = False
    fancy_upsampling: bool = True

    @property
    def random(self) -> bool:
        """Whether DALI draws the crop and flip (training), else the same crop for every image."""
        return False

    def decoder_args(self, gpu: bool) -> dict[str, Any]:
        """The IDCT and chroma arguments of DALI's decoders (`gpu`: nvJPEG, `device="mixed"`;
        the CPU decoder always upsamples chroma smoothly and takes no such argument)."""
        args: dict[str, Any] = {"use_fast_idct": self.fast_idct}
        if gpu:
            args["jpeg_fancy_upsampling"] = self.fancy_upsampling
        return args


@dataclass(frozen=True, kw_only=True)
class DaliRandomResizedCrop(DaliTransform):
    """`RandomResizedCrop`: a window of `scale` of the area and aspect ratio in `ratio`
    (`fn.decoders.image_random_crop`, which decodes only the window, or
    `fn.random_crop_generator` where masks share it), resized to `size`, mirrored by a coin of
    `flip_prob`. DALI draws its own windows: the same kind of crop, not the same crops."""

    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_prob: float = 0.5

    @property
    def random(self) -> bool:
        return True

    def window_args(self) -> dict[str, Any]:
        """The arguments that draw a window (`image_random_crop`, `random_crop_generator`)."""
        return {
            "random_area": list(self.scale),
            "random_aspect_ratio": list(self.ratio),
            "num_attempts": CROP_ATTEMPTS,
        }


@dataclass(frozen=True, kw_only=True)
class DaliCenterCrop(DaliTransform):
    """`CenterCrop`: the shorter side resized to `resize_size` (`fn.resize(resize_shorter=)`),
    then the central `size` x `size` (`crop_mirror_normalize(crop=)`)."""

    resize_size: int


T = TypeVar("T")
Adapter = Callable[[Any, str], DaliTransform]

_ADAPTERS: dict[type, Adapter] = {}


def register_transform(cls: type[T], adapter: Callable[[T, str], DaliTransform]) -> None:
    """Make transforms of exactly `cls` readable by DALI: `adapter(transform, where)` gives
    its `DaliTransform`, or a ValueError starting with `where` for a setting DALI cannot
    honour."""
    _ADAPTERS[cls] = adapter


def dali_transform(transform: object, where: str) -> DaliTransform:
    """What `transform` (a torch-path transform, or None) asks of DALI; a ValueError starting
    with `where` that names the transform when DALI has no equivalent."""
    known = ", ".join(sorted(c.__name__ for c in _ADAPTERS))
    if transform is None:
        raise ValueError(f"{where} needs a transform ({known}), got None")
    adapter = _ADAPTERS.get(type(transform))
    if adapter is None:
        raise ValueError(
            f"{where}: transform {type(transform).__name__} ({transform!r}) has no DALI "
            f"equivalent; DALI runs {known}"
        )
    return adapter(transform, where)


def _square(shape: tuple[int, int], transform: object, where: str) -> int:
    if shape[0] != shape[1]:
        raise ValueError(f"{where} makes square crops, but {transform!r} makes {shape}")
    return shape[0]


def _random_resized_crop(t: RandomResizedCrop, where: str) -> DaliTransform:
    # max_upscale bounds a reduced-scale (DCT) decode's enlargement; DALI decodes the window at
    # full scale, which is within every bound
    return DaliRandomResizedCrop(
        size=_square(t.output_shape, t, where),
        fast_idct=t.options.fastdct,
        fancy_upsampling=not t.options.fastupsample,
        scale=t.scale,
        ratio=t.ratio,
        flip_prob=t.flip_prob,
    )


def _center_crop(t: CenterCrop, where: str) -> DaliTransform:
    return DaliCenterCrop(
        size=_square(t.output_shape, t, where),
        fast_idct=t.options.fastdct,
        fancy_upsampling=not t.options.fastupsample,
        resize_size=t.resize,
    )


register_transform(RandomResizedCrop, _random_resized_crop)
register_transform(CenterCrop, _center_crop)
