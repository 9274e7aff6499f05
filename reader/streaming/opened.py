"""What one process opens of a streaming dataset and keeps across its iterations (`Opened`): the
dataset files (the index map) and the decoder of the fields asked for. Each process opens its
own: a copy or a pickle of it holds nothing opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import DatasetFiles, Manifest

from ..fields import SampleDecoder
from ..image.batch import Allocate
from .options import StreamingOptions
from .reading import Columns, WindowReader, sample_decoder


class Opened:
    """The files of the dataset at `root` (named `path` in messages) that `manifest` describes
    (the version it describes, however the dataset grows meanwhile), and the decoder of its
    `columns`, opened when first asked for."""

    def __init__(self, path: str, root: Path, columns: Columns, manifest: Manifest) -> None:
        self.path, self.root, self.columns, self.manifest = path, root, columns, manifest
        self._files: DatasetFiles | None = None
        self._decoder: SampleDecoder | None = None

    def files(self) -> DatasetFiles:
        if self._files is None:
            self._files = DatasetFiles(self.root, self.manifest)
        return self._files

    def reader(self, options: StreamingOptions, allocate: Allocate | None) -> WindowReader:
        """The reader of an iteration's samples, with `options`' transform and padding, batch
        arrays from `allocate` (None: `np.empty`)."""
        files, layout, image = self.files(), self.columns.layout, self.columns.field
        if self._decoder is None and not layout.image_label:
            self._decoder = sample_decoder(
                self.path,
                files,
                layout,
                image=image,
                transform=options.transform,
                drop_empty_boxes=options.drop_empty_boxes,
            )
        return WindowReader(
            path=self.path,
            files=files,
            layout=layout,
            image=image,
            transform=options.transform,
            decoder=None if layout.image_label else self._decoder,
            allocate=allocate or _new_array,
            pad_value=options.pad_value,
        )

    def close(self) -> None:
        """Drop what is open; what iterations in progress hold stays open until they end."""
        self._files = self._decoder = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_files": None, "_decoder": None}


def _new_array(shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
    return np.empty(shape, np.uint8)
