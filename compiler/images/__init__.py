"""The image policy (formats/SPEC.md section 6): keep a JPEG byte-for-byte once its structure is
checked (progressive ones transcoded to baseline where asked), convert anything else that decodes
to an RGB JPEG, reject the rest."""

from .baseline import (
    BaselineUnavailableError,
    TranscodeNotLosslessError,
    baseline_available,
    to_baseline,
    to_baseline_lossless,
)
from .policy import CHECKS, Check, PreparedImage, Reject, prepare_image

__all__ = [
    "CHECKS",
    "BaselineUnavailableError",
    "Check",
    "PreparedImage",
    "Reject",
    "TranscodeNotLosslessError",
    "baseline_available",
    "prepare_image",
    "to_baseline",
    "to_baseline_lossless",
]
