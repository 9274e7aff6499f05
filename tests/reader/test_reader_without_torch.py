"""torch is an optional extra: the Dataset, transforms and verification work without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable

from .conftest import Built

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.modules["torch"] = None  # any `import torch` now raises ImportError
    from fastpack.reader import CenterCrop, Dataset, verify_dataset

    ds = Dataset(sys.argv[1], transform=CenterCrop(8))
    images, labels = ds.__getitems__([0, len(ds) - 1])
    assert images.shape == (2, 8, 8, 3), images.shape
    assert verify_dataset(sys.argv[1]).ok
    try:
        from fastpack.reader import make_loader
        make_loader(ds, batch_size=2)
    except ImportError as e:
        print("make_loader:", e)
    """
)


def test_reader_works_without_torch(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset(per_class=2).path
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "make_loader: import of torch halted" in done.stdout
