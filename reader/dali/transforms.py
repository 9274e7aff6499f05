"""The torch path's transforms (`fastpack.reader.image`) as DALI's operators: one adapter per
transform class, in a registry that `make_dali_loader` reads, so that DALI is told what to do by
the same `RandomResizedCrop` or `CenterCrop` object as a `Dataset`.

    dali_transform(RandomResizedCrop(224, flip_prob=0.25), where)
    # DaliRandomResizedCrop(size=224, scale=(0.08, 1.0), ratio=(0.75, 1.33..), flip_prob=0.25, ..)

An adapter gives a `DaliTransform`: the transform's settings, and how DALI builds it
(`pictures`, from the `Operators` that pipeline.py hands it), so the pipeline asks the transform
and never looks at its type. A transform class is looked up by its exact type (a subclass may
change what it does, so it needs an adapter of its own: `register_transform`); one with no
adapter is refused with a ValueError that names it. Free of DALI imports.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..image.transforms import CenterCrop, RandomResizedCrop

if TYPE_CHECKING:
    from nvidia.dali.data_node import DataNode as Node

    Window = tuple[Node, Node]  # (anchor, shape) of a crop, in (height, width) order
    Pictures = tuple[Node, dict[str, Node]]  # the images, and each mask by field name

# Random boxes tried before the centre-crop fallback: torchvision's and RandomResizedCrop's 10.
CROP_ATTEMPTS = 10


class Operators(Protocol):
    """The DALI operators a transform builds its images and masks from (pipeline.py's, on its
    device: the decoders take the transform's `decoder_args`, `finish` gives the pipeline's
    output layout and dtype)."""

    def coin_flip(self, probability: float) -> Node:
        """True with `probability`, drawn per sample."""

    def decode(self, jpg: Node) -> Node:
        """The whole image, RGB."""

    def decode_random_crop(self, jpg: Node, window: Mapping[str, Any]) -> Node:
        """A random window drawn with `window` (`window_args`), only it decoded."""

    def crop_window(self, shape: Node, window: Mapping[str, Any]) -> Window:
        """A random window of each image of `shape`, drawn as `decode_random_crop` draws it,
        as data that the image and its masks share."""

    def decode_window(self, jpg: Node, window: Window) -> Node:
        """The image's `window` decoded."""

    def decode_mask(self, png: Node) -> Node:
        """A mask as stored (its channels, no colour conversion), 8 bits."""

    def slice_window(self, masks: Node, window: Window) -> Node:
        """The masks' `window`, zero-padded past a smaller mask's edge."""

    def resize(self, images: Node, size: int, *, nearest: bool = False) -> Node:
        """Resized to `size` x `size` (`nearest`: nearest neighbour, for masks)."""

    def resize_shorter(self, images: Node, size: int, *, nearest: bool = False) -> Node:
        """The shorter side resized to `size`, the aspect ratio kept."""

    def finish(
        self, images: Node, *, mirror: Node | int = 0, crop: Sequence[float] | None = None
    ) -> Node:
        """The images cropped (the centre `crop`), flipped where `mirror`, as the pipeline
        outputs them."""

    def finish_mask(
        self, masks: Node, *, mirror: Node | int = 0, crop: Sequence[float] | None = None
    ) -> Node:
        """`finish` for masks: values kept, uint8."""


@dataclass(frozen=True, kw_only=True)
class DaliTransform(ABC):
    """What DALI does to every image: decode (with libjpeg-turbo's fast IDCT where
    `fast_idct`; nvJPEG upsamples chroma the fast way where not `fancy_upsampling`), then crop
    and resize to `size` x `size`; `pictures` says with which operators."""

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

    @abstractmethod
    def pictures(
        self, ops: Operators, jpg: Node, shape: Node, masks: Mapping[str, Node]
    ) -> Pictures:
        """The images made from the encoded `jpg` (whose decoded `shape` is known), and each
        of `masks` (png members by field name) cropped, resized and flipped with its image."""


@dataclass(frozen=True, kw_only=True)
class DaliRandomResizedCrop(DaliTransform):
    """`RandomResizedCrop`: a window of `scale` of the area and aspect ratio in `ratio`
    (`fn.decoders.image_random_crop`, which decodes only the window, or
    `fn.random_crop_generator` where masks share it), resized to `size`, mirrored by a coin of
    `flip_prob`. DALI draws its own windows: the same kind of crop, not the same crops."""

    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_prob: float = 0.5

    def __post_init__(self) -> None:
        low, high = self.scale  # DALI crops within the image: a window is at most the whole
        if not 0 < low <= high <= 1:
            raise ValueError(
                f"DALI's crop scale must satisfy 0 < low <= high <= 1, got {self.scale}"
            )

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

    def pictures(
        self, ops: Operators, jpg: Node, shape: Node, masks: Mapping[str, Node]
    ) -> Pictures:
        """One coin flips an image and its masks. Without masks only the window is decoded
        (`image_random_crop`); with them one window is drawn from the image's shape and cuts
        the image and each mask (resized nearest-neighbour)."""
        mirror = ops.coin_flip(self.flip_prob)
        if not masks:
            decoded = ops.decode_random_crop(jpg, self.window_args())
            return ops.finish(ops.resize(decoded, self.size), mirror=mirror), {}
        box = ops.crop_window(shape, self.window_args())
        images = ops.finish(ops.resize(ops.decode_window(jpg, box), self.size), mirror=mirror)
        cropped = {}
        for name, png in masks.items():
            mask = ops.slice_window(ops.decode_mask(png), box)
            cropped[name] = ops.finish_mask(
                ops.resize(mask, self.size, nearest=True), mirror=mirror
            )
        return images, cropped


@dataclass(frozen=True, kw_only=True)
class DaliCenterCrop(DaliTransform):
    """`CenterCrop`: the shorter side resized to `resize_size` (`fn.resize(resize_shorter=)`),
    then the central `size` x `size` (`crop_mirror_normalize(crop=)`)."""

    resize_size: int

    def pictures(
        self, ops: Operators, jpg: Node, shape: Node, masks: Mapping[str, Node]
    ) -> Pictures:
        """The image and its masks (nearest-neighbour) resized alike, then centre-cropped."""
        crop = (self.size, self.size)
        images = ops.finish(ops.resize_shorter(ops.decode(jpg), self.resize_size), crop=crop)
        cropped = {}
        for name, png in masks.items():
            mask = ops.resize_shorter(ops.decode_mask(png), self.resize_size, nearest=True)
            cropped[name] = ops.finish_mask(mask, crop=crop)
        return images, cropped


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
    made = adapter(transform, where)
    if not isinstance(made, DaliTransform):
        raise TypeError(
            f"{where}: the DALI adapter of {type(transform).__name__} returned "
            f"{type(made).__name__}, not a DaliTransform (which says how DALI builds it)"
        )
    return made


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
