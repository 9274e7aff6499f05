"""`DeviceDecoder`: a `CropBatch` decoded on the trainer's device into the normalized float
batch the model takes.

nvImageCodec decodes each image's crop region alone (a region of interest: the rows and
columns outside it are not turned into pixels), all images of the batch in one call; torch
then resizes each region to the output with antialiased bilinear filtering, mirrors the
flipped ones and normalizes, on the same device. torch is imported when one is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np
from fastpack.formats import ShardFormatError

from .codec import decode_params, nvimgcodec, open_decoder
from .crops import CropBatch

if TYPE_CHECKING:
    import torch

SampleName = Callable[[int], str]
_RGB = 3  # channels


class DeviceDecoder:
    """Decodes `CropBatch`es into `(B, 3, H, W)` tensors of `dtype` on `device` with
    channels_last strides (contiguous NCHW with `channels_last=False`): `(pixel / 255 - mean)
    / std`, each region resampled onto `output_shape`. `name(i)` says which member sample `i`
    is, for the error of an image that does not decode (a ShardFormatError). `seconds` adds
    up the time spent in `decode` (on a GPU, until its work is queued)."""

    def __init__(  # noqa: PLR0913 -- keyword inputs
        self,
        output_shape: tuple[int, int],
        *,
        device: torch.device,
        mean: Sequence[float],
        std: Sequence[float],
        dtype: torch.dtype,
        channels_last: bool,
        threads: int,
        name: SampleName,
    ) -> None:
        import torch  # noqa: PLC0415 -- optional: torch

        if len(mean) != _RGB or len(std) != _RGB:
            raise ValueError(f"mean and std need 3 values (RGB), got {len(mean)} and {len(std)}")
        self.codec = nvimgcodec()
        self.decoder = open_decoder(device, threads)
        self.params = decode_params(self.codec)
        self.output_shape = output_shape
        self.device, self.dtype, self.channels_last = device, dtype, channels_last
        self.name = name
        shift = torch.tensor([255.0 * m for m in mean], device=device).view(1, 3, 1, 1)
        scale = torch.tensor([255.0 * s for s in std], device=device).view(1, 3, 1, 1)
        self.shift, self.scale = shift, scale
        self.seconds = 0.0

    def decode(self, batch: CropBatch) -> torch.Tensor:
        """The batch's images, decoded, cropped, resized, mirrored and normalized."""
        start = perf_counter()
        try:
            return self._decode(batch)
        finally:
            self.seconds += perf_counter() - start

    def _decode(self, batch: CropBatch) -> torch.Tensor:
        import torch  # noqa: PLC0415 -- optional: torch
        import torch.nn.functional as F  # noqa: PLC0415 -- optional: torch

        codec, data = self.codec, batch.data.numpy()
        offsets, regions = batch.offsets.tolist(), batch.regions.tolist()
        streams = []
        for k, (top, left, height, width) in enumerate(regions):
            stream = codec.CodeStream(data[offsets[k] : offsets[k + 1]])
            region = codec.Region(top, left, top + height, left + width)
            streams.append(stream.get_sub_code_stream(region=region))
        images = self.decoder.decode(streams, params=self.params, cuda_stream=self._stream())
        out = torch.empty((len(regions), 3, *self.output_shape), device=self.device)
        for k, image in enumerate(images):
            if image is None:
                i = int(batch.indices[k])
                raise ShardFormatError(f"{self.name(i)} does not decode (nvImageCodec)")
            pixels = self._tensor(image).permute(2, 0, 1)[None].float()
            out[k] = F.interpolate(pixels, size=self.output_shape, mode="bilinear", antialias=True)[
                0
            ]
        flips = batch.flips.to(self.device, non_blocking=True).view(-1, 1, 1, 1)
        out = torch.where(flips, out.flip(-1), out)
        out = out.clamp_(0, 255).sub_(self.shift).div_(self.scale).to(self.dtype)
        if self.channels_last:
            return out.contiguous(memory_format=torch.channels_last)
        return out

    def _stream(self) -> int:
        """torch's current CUDA stream, which the decode is ordered with (0 on the CPU)."""
        import torch  # noqa: PLC0415 -- optional: torch

        if self.device.type != "cuda":
            return 0
        return int(torch.cuda.current_stream(self.device).cuda_stream)

    def _tensor(self, image: Any) -> torch.Tensor:
        """An nvImageCodec image as a `(h, w, 3)` uint8 tensor on the device, without a copy
        (on the GPU, ordered after the decode's stream)."""
        import torch  # noqa: PLC0415 -- optional: torch

        if self.device.type == "cpu":
            return torch.from_numpy(np.asarray(image))
        return torch.as_tensor(image, device=self.device)
