"""`to_float`: uint8 NHWC batches to normalized float NCHW, on the GPU when one is given.

Host memory and the host-to-device copy stay uint8 (a quarter of float32's bytes); the float
conversion and normalization run on `device`. torch is imported on call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_ONE_IMAGE_DIMS = 3  # (channels, height, width); a batch has 4


def to_float(
    images: torch.Tensor,
    *,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
    device: torch.device | str | None = None,
    channels_last: bool = True,
) -> torch.Tensor:
    """`(images / 255 - mean) / std` as float32 `(B, C, H, W)` on `device` (default: where
    `images` is). Copies to the device with `non_blocking=True` (fast from pinned memory).

    The result has channels_last strides (what a permuted NHWC batch has) unless
    `channels_last=False`, which makes it contiguous NCHW. A single `(H, W, C)` image gives
    `(C, H, W)`.
    """
    import torch  # noqa: PLC0415 -- optional: torch

    if images.dtype != torch.uint8 or images.dim() not in (3, 4):
        raise ValueError(
            f"expected a uint8 (B, H, W, C) or (H, W, C) tensor, got {images.dtype} "
            f"{tuple(images.shape)}"
        )
    if images.dim() == _ONE_IMAGE_DIMS:
        single = to_float(
            images[None], mean=mean, std=std, device=device, channels_last=channels_last
        )
        return single[0]
    channels = images.shape[-1]
    if len(mean) != channels or len(std) != channels:
        raise ValueError(
            f"mean and std need {channels} values (one per channel), got {len(mean)} and {len(std)}"
        )
    if device is not None:
        images = images.to(device, non_blocking=True)
    scale = torch.tensor([[255.0 * m for m in mean], [255.0 * s for s in std]])
    scale = scale.to(images.device, non_blocking=True).view(2, 1, channels, 1, 1)
    x = images.permute(0, 3, 1, 2).float().sub_(scale[0]).div_(scale[1])
    return x if channels_last else x.contiguous()
