"""The image policy (formats/SPEC.md section 6): keep a JPEG byte-for-byte once its structure is
checked, convert anything else that decodes to an RGB JPEG, reject the rest."""

from .policy import CHECKS, Check, PreparedImage, Reject, prepare_image

__all__ = ["CHECKS", "Check", "PreparedImage", "Reject", "prepare_image"]
