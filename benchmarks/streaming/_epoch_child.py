"""One timed epoch in a process of its own, for `install_ab`: run as a script (not `-m`), so that
`import fastpack` finds the install on PYTHONPATH, not the checkout's folders.

    python benchmarks/streaming/_epoch_child.py DATASET KIND WORKERS EPOCH [CACHE_DIR]

KIND is `streaming` (`StreamingDataset` of a local DATASET), `map` (`Dataset`) or `url`
(`StreamingDataset` of the URL DATASET, fetched into CACHE_DIR, with the storage options given
as JSON in `FASTPACK_AB_STORAGE`). Prints one JSON line: images/s, seconds to the first batch,
images, and where fastpack was imported from.
"""

from __future__ import annotations

import json
import os
import sys
import time

from fastpack.reader import Dataset, RandomResizedCrop, StreamingDataset, make_loader

import fastpack

BATCH = 64


def main(argv: list[str]) -> None:
    path, kind, workers, epoch = argv[0], argv[1], int(argv[2]), int(argv[3])
    started = time.perf_counter()
    crop = RandomResizedCrop(224)
    dataset: Dataset | StreamingDataset
    if kind == "map":
        dataset = Dataset(path, transform=crop)
    elif kind == "url":
        storage = json.loads(os.environ["FASTPACK_AB_STORAGE"])
        dataset = StreamingDataset(path, transform=crop, cache_dir=argv[4], storage_options=storage)
    else:
        dataset = StreamingDataset(path, transform=crop)
    dataset.set_epoch(epoch)
    loader = make_loader(dataset, batch_size=BATCH, num_workers=workers)
    seen, first = 0, 0.0
    for images, _labels in loader:
        if not seen:
            first = time.perf_counter() - started
        seen += int(images.shape[0])
    elapsed = time.perf_counter() - started
    report = {"rate": seen / elapsed, "first_batch_s": first, "images": seen}
    print(json.dumps({**report, "fastpack": fastpack.__file__}))


if __name__ == "__main__":
    main(sys.argv[1:])
