"""`raw`: bytes as they are."""

from __future__ import annotations

from ._base import FieldTypeDef, as_bytes

RAW = FieldTypeDef(name="raw", encode=as_bytes, compressible=True, file_value=True)
