"""nvImageCodec, the decoder of the device path: found (or refused with what to install), and
opened on the trainer's device: the GPU (its hardware JPEG engine where it has one, else CUDA)
or the CPU backend (libjpeg-turbo), which runs the same calls without a GPU."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fastpack.formats import FastpackError
from fastpack.storage import MissingDependencyError

if TYPE_CHECKING:
    import torch

INSTALL = "pip install 'fastpack[nvimgcodec]'"


class DeviceUnavailableError(FastpackError, RuntimeError):
    """The device the decode was asked to run on is not there (a GPU torch cannot see)."""


def nvimgcodec() -> ModuleType:
    """The `nvidia.nvimgcodec` module, or a MissingDependencyError saying what to install."""
    try:
        return importlib.import_module("nvidia.nvimgcodec")
    except ImportError as e:
        raise MissingDependencyError(
            f"loader='nvimgcodec' decodes with nvImageCodec, which is not installed ({e}): "
            f"{INSTALL} (or pip install nvidia-nvimgcodec-cu12 / -cu13 for your CUDA)"
        ) from e


def open_decoder(device: torch.device, threads: int) -> Any:
    """An nvImageCodec `Decoder` for `device`: a CUDA device with every backend nvImageCodec
    has for it (the hardware engine first), or the CPU with its CPU backend and `threads`
    threads (0: one per core). DeviceUnavailableError when CUDA is asked for and absent."""
    import torch  # noqa: PLC0415 -- optional: torch

    codec = nvimgcodec()
    if device.type == "cpu":
        return codec.Decoder(
            device_id=codec.NVIMGCODEC_DEVICE_CPU_ONLY,
            max_num_cpu_threads=threads,
            backends=[codec.Backend(codec.BackendKind.CPU_ONLY)],
        )
    if device.type != "cuda":
        raise ValueError(f"device must be a CUDA device or 'cpu', got {device}")
    if not torch.cuda.is_available():
        raise DeviceUnavailableError(
            f"loader='nvimgcodec' was asked to decode on {device}, and torch sees no CUDA "
            "device here; device='cpu' runs nvImageCodec's CPU backend instead"
        )
    index = torch.cuda.current_device() if device.index is None else device.index
    return codec.Decoder(device_id=index, max_num_cpu_threads=threads)


def decode_params(codec: ModuleType) -> Any:
    """RGB output, EXIF orientation ignored: the pixels the CPU path decodes."""
    return codec.DecodeParams(color_spec=codec.ColorSpec.SRGB, apply_exif_orientation=False)
