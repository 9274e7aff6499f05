"""Sample fields: which fields a reader returns, how each is decoded (images through the
transform, masks and boxes following them, the rest by the dataset's codecs), and how a batch
holds them (one array, a padded array and lengths, or a list)."""

from .batch import Padded, assemble, assemble_columns, collate, pad_arrays
from .images import IMAGE_READERS, ImageReader, image_reader
from .layout import BatchLayout, Column, ColumnKind, plan_columns
from .sample import SampleDecoder, check_geometry
from .select import choose_fields, image_field

__all__ = [
    "IMAGE_READERS",
    "BatchLayout",
    "Column",
    "ColumnKind",
    "ImageReader",
    "Padded",
    "SampleDecoder",
    "assemble",
    "assemble_columns",
    "check_geometry",
    "choose_fields",
    "collate",
    "image_field",
    "image_reader",
    "pad_arrays",
    "plan_columns",
]
