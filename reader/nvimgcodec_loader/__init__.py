"""Decode on the trainer's device: DataLoader workers read each batch's JPEG bytes and draw its
crops, and nvImageCodec decodes the crops' regions in the training process, on the GPU (or
on its CPU backend), resized and normalized there (`make_nvimgcodec_loader`)."""

from .codec import DeviceUnavailableError
from .loader import NvImageCodecLoader, make_nvimgcodec_loader

__all__ = ["DeviceUnavailableError", "NvImageCodecLoader", "make_nvimgcodec_loader"]
