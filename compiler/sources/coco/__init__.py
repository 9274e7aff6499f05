"""COCO instances files: one sample per image entry, boxes, classes and masks as fields
(`source`)."""

from .source import scan_coco

__all__ = ["scan_coco"]
