"""A batch's values as torch tensors: arrays without a copy (`torch.from_numpy`), lists
element by element, padded arrays as a `Padded` of tensors; strings, bytes, JSON values and
None as they are."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..fields import ColumnKind, Padded


def _tensor(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, np.generic):
        return torch.from_numpy(np.asarray(value))
    return value


def to_tensors(value: Any, kind: ColumnKind) -> Any:
    """The batch value of a column of `kind` with its arrays as tensors."""
    if kind == "list":
        return [_tensor(v) for v in value]
    if kind == "padded":
        return Padded(torch.from_numpy(value.values), torch.from_numpy(value.lengths))  # type: ignore[arg-type]
    return _tensor(value)
