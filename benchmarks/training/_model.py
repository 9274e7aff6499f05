"""The models the training benchmark trains, and one training step: forward, loss, backward and
an SGD update, in channels_last, under bf16 autocast on CUDA. On CUDA the step ends with
`torch.cuda.synchronize()`, so that the time the loop then spends in `next()` is time the GPU
sits idle. torchvision is imported only when a ResNet is asked for."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

CLASSES = 1000  # every label of the benchmark's corpora is below this
MODELS = ("small", "resnet18", "resnet50")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

Step = Callable[[torch.Tensor, torch.Tensor], None]


def small_cnn() -> nn.Module:
    """Four strided 3x3 convolutions (16 to 128 channels) with batch norm, pooled, one linear
    layer: about 50 million multiply-adds per 224x224 image forward, for CPU-only runs."""
    layers: list[nn.Module] = []
    channels = 3
    for width in (16, 32, 64, 128):
        layers += [
            nn.Conv2d(channels, width, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
        ]
        channels = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, CLASSES)]
    return nn.Sequential(*layers)


def make_model(name: str) -> nn.Module:
    """`small` (defined here) or torchvision's `resnet18` / `resnet50`, randomly initialised."""
    if name == "small":
        return small_cnn()
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; models are {', '.join(MODELS)}")
    models: Any = importlib.import_module("torchvision.models")
    model: nn.Module = getattr(models, name)(num_classes=CLASSES)
    return model


def make_step(name: str, device: torch.device) -> Step:
    """A training step of model `name` on `device`: SGD (lr 0.1, momentum 0.9), cross entropy."""
    model = make_model(name).to(device)
    model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    cuda = device.type == "cuda"

    def step(images: torch.Tensor, labels: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize(device)

    return step


def to_input(images: Any, labels: Any, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A loader's batch as the model takes it: float32 NCHW normalized by ImageNet's mean and std,
    channels_last, on `device`. uint8 batches may be NHWC (fastpack, the peers) or NCHW
    (torchvision's `PILToTensor`); float batches (DALI's GPU pipeline) are already normalized."""
    x = torch.as_tensor(images).to(device, non_blocking=True)
    y = torch.as_tensor(labels).to(device, non_blocking=True).long().view(-1)
    if x.dtype == torch.uint8:
        if x.shape[-1] == len(MEAN):
            x = x.permute(0, 3, 1, 2)
        mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255
        std = torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255
        x = (x.float() - mean) / std
    return x.contiguous(memory_format=torch.channels_last), y
