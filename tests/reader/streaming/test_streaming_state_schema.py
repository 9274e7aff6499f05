"""The states of a StreamingDataset (one stream's, what StatefulDataLoader saves per worker) and
of its StreamingLoader (the whole epoch's) are checked field by field before use: a missing,
unknown, mistyped or out-of-range field, nested ones included, and another version are refused
with a LoaderStateError (a ValueError) naming the field, what was expected and what was found;
nothing of a refused state is used."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastpack.reader import CenterCrop, StreamingDataset, make_loader
from fastpack.reader.errors import LoaderStateError

from tests.conftest import jpeg_bytes
from tests.reader.streaming._streaming_data import build_small

SEGMENTS = "a list of at most 4096 items"
SEGMENT = "a list [world, workers, batch_size, batches] of integers"
INT = "an integer in [0, 2**63 - 1]"
STREAM = "a list [rank, world, worker, workers] of integers"
HANDED = f"{INT} (samples handed out)"
BATCHES = f"{INT} (batches per rank)"
BUDGET = f"None or {INT}"
VERSION = "1 (the version this reader reads)"
OUTSIDE = "outside that range"
STREAM_FIELDS = (
    "['format', 'version', 'epoch', 'position', 'stream', 'seed', 'segments', 'resident_budget', "
    "'dataset_version']"
)
WORLD = "an integer in [1, 1048576] (world: ranks)"
WORKERS = "an integer in [0, 1048576] (workers: DataLoader workers per rank)"
STREAMS = "at most 1048576 streams (world x max(1, workers))"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("states")
    for label in range(23):
        folder = root / "src" / f"c{label:02d}"
        folder.mkdir(parents=True)
        (folder / "a.jpg").write_bytes(jpeg_bytes(12, 12, seed=label))
    return build_small(root / "src", root / "ds", shard_size=3000)


def _dataset(built: Path, **options: Any) -> StreamingDataset:
    return StreamingDataset(built, transform=CenterCrop(8), seed=3, shuffle_window=2, **options)


def _refused(where: Path, kind: str, field: str, expected: str, found: str) -> str:
    text = f"{where}: {kind} state field {field!r}: expected {expected}, found {found}"
    return re.escape(text)


# -- one stream's state ---------------------------------------------------------------------------


def test_a_stream_state_as_saved_resumes(built: Path) -> None:
    dataset = _dataset(built)
    iterator = iter(dataset)
    head = [int(next(iterator)[1]) for _ in range(5)]
    state = dataset.state_dict()
    assert state == {
        "format": "fastpack-stream-state",
        "version": 1,
        "epoch": 0,
        "position": 5,
        "stream": [0, 1, 0, 1],
        "seed": 3,
    }
    resumed = _dataset(built)
    resumed.load_state_dict(state)
    assert sorted(head + [int(label) for _, label in resumed]) == list(range(23))


@pytest.mark.parametrize(
    ("changes", "field", "expected", "found"),
    [
        ({"epoch": 2**64}, "epoch", INT, f"18446744073709551616, {OUTSIDE}"),
        ({"epoch": 0.5}, "epoch", INT, "0.5 (float)"),
        ({"position": "12"}, "position", HANDED, "'12' (str)"),
        ({"position": 12.5}, "position", HANDED, "12.5 (float)"),
        ({"position": False}, "position", HANDED, "False (bool)"),
        ({"seed": None}, "seed", INT, "None (NoneType)"),
        ({"stream": [0, 1, 0]}, "stream", STREAM, "[0, 1, 0]"),
        ({"stream": [0, 1, "0", 1]}, "stream[2]", "an integer in [0, 0] (worker < workers)", "'0'"),
        (
            {"stream": [2, 2, 0, 1]},
            "stream[0]",
            "an integer in [0, 1] (rank < world)",
            "2, outside",
        ),
        ({"stream": [0, 0, 0, 1]}, "stream[1]", "an integer in [1, 1048576] (world)", "0, outside"),
        ({"segments": [[1, 0, 8]]}, "segments[0]", SEGMENT, "[1, 0, 8]"),
        ({"segments": [[1, 0, 8, 2.0]]}, "segments[0][3]", BATCHES, "2.0 (float)"),
        ({"segments": "[[1, 0, 8, 2]]"}, "segments", SEGMENTS, "'[[1, 0, 8, 2]]' (str)"),
        ({"segments": [], "resident_budget": "0"}, "resident_budget", BUDGET, "'0' (str)"),
        ({"rank": 0}, "rank", f"only the fields {STREAM_FIELDS}", "an unknown field holding 0"),
        ({"version": 2}, "version", VERSION, "2 (int)"),
        ({"version": "1"}, "version", VERSION, "'1' (str)"),
    ],
)
def test_a_stream_state_is_refused_field_by_field(
    built: Path, changes: dict[str, Any], field: str, expected: str, found: str
) -> None:
    dataset = _dataset(built)
    state = {**dataset.state_dict(), **changes}
    message = _refused(built, "StreamingDataset", field, expected, found)
    with pytest.raises(LoaderStateError, match=message):
        dataset.load_state_dict(state)
    assert dataset.state_dict()["position"] == 0  # nothing of it was used
    assert dataset.current_epoch() == 0


def test_a_missing_stream_field_or_format_is_refused(built: Path) -> None:
    dataset = _dataset(built)
    state = dataset.state_dict()
    del state["stream"]
    expected = "a list [rank, world, worker, workers] of integers"
    missing = _refused(
        built, "StreamingDataset", "stream", expected, "nothing: the field is missing"
    )
    with pytest.raises(LoaderStateError, match=missing):
        dataset.load_state_dict(state)
    with pytest.raises(ValueError, match="not a StreamingDataset state"):
        dataset.load_state_dict({"epoch": 0, "position": 3, "stream": [0, 1, 0, 1], "seed": 3})
    with pytest.raises(LoaderStateError, match="StreamingDataset state saved with seed 7"):
        dataset.load_state_dict({**dataset.state_dict(), "seed": 7})


def test_set_epoch_keeps_to_the_shared_int64(built: Path) -> None:
    dataset = _dataset(built)
    dataset.set_epoch(2**63 - 1)
    assert dataset.current_epoch() == 2**63 - 1
    with pytest.raises(
        ValueError, match=rf"epoch must be >= 0 and at most 2\*\*63 - 1, got {2**63}"
    ):
        dataset.set_epoch(2**63)
    with pytest.raises(TypeError):
        dataset.set_epoch(1.5)  # type: ignore[arg-type]
    assert dataset.current_epoch() == 2**63 - 1


# -- the loader's state ---------------------------------------------------------------------------


def _loader(built: Path, workers: int = 0) -> Any:
    return make_loader(_dataset(built), batch_size=4, num_workers=workers)


LOADER_FIELDS = (
    "['format', 'version', 'dataset', 'view', 'seed', 'shuffle', 'drop_last', 'shuffle_window', "
    "'resident_budget', 'epoch', 'segments', 'dataset_version', 'origin']"
)


@pytest.mark.parametrize(
    ("changes", "field", "expected", "found"),
    [
        ({"epoch": 2**64}, "epoch", INT, f"18446744073709551616, {OUTSIDE}"),
        ({"epoch": 0.5}, "epoch", INT, "0.5 (float)"),
        ({"epoch": "1"}, "epoch", INT, "'1' (str)"),
        ({"drop_last": 0}, "drop_last", "True or False", "0 (int)"),
        ({"shuffle_window": 0}, "shuffle_window", "an integer in [1, 2**63 - 1]", f"0, {OUTSIDE}"),
        ({"resident_budget": 1.5}, "resident_budget", BUDGET, "1.5 (float)"),
        ({"view": "half"}, "view", "None or a mapping of ['name', 'digest']", "'half' (str)"),
        ({"view": {"name": "half"}}, "view.digest", "a non-empty string", "nothing: the field is"),
        ({"segments": None}, "segments", SEGMENTS, "None (NoneType)"),
        ({"segments": [[1, 0, 4, "2"]]}, "segments[0][3]", BATCHES, "'2' (str)"),
        ({"segments": [[1, 0, 4, 2], [True, 0, 4, 1]]}, "segments[1][0]", WORLD, "True (bool)"),
        ({"segments": [[1, -1, 4, 2]]}, "segments[0][1]", WORKERS, f"-1, {OUTSIDE}"),
        ({"segments": [[4096, 512, 4, 2]]}, "segments[0]", STREAMS, "[4096, 512, 4, 2]"),
        ({"segments": [[1, 0, 4, 2]] * 4097}, "segments", SEGMENTS, "4097 items"),
        ({"rank": 0}, "rank", f"only the fields {LOADER_FIELDS}", "an unknown field holding 0"),
        ({"version": 2}, "version", VERSION, "2 (int)"),
    ],
)
def test_a_loader_state_is_refused_field_by_field(
    built: Path, changes: dict[str, Any], field: str, expected: str, found: str
) -> None:
    loader = _loader(built)
    state = {**loader.state_dict(), **changes}
    message = _refused(built, "StreamingLoader", field, expected, found)
    with pytest.raises(LoaderStateError, match=message):
        loader.load_state_dict(state)
    assert loader.dataset.current_epoch() == 0  # nothing of it was used
    assert len(loader) == loader.dataset.num_batches(0)


def test_a_loader_state_missing_a_field_or_counting_too_many_batches_is_refused(
    built: Path,
) -> None:
    loader = _loader(built)
    state = loader.state_dict()
    missing = {k: v for k, v in state.items() if k != "segments"}
    with pytest.raises(
        LoaderStateError, match=r"field 'segments': expected .* the field is missing"
    ):
        loader.load_state_dict(missing)
    counted = r"field 'segments': expected the batches of each layout's streams, found segment"
    with pytest.raises(LoaderStateError, match=counted + r" \[2, 1, 4, 99\]: 99 batches of 4"):
        loader.load_state_dict({**state, "segments": [[2, 1, 4, 99]]})
    loader.load_state_dict({**state, "epoch": 2, "segments": [[2, 1, 4, 1]]})
    assert loader.dataset.current_epoch() == 2
    assert len(loader) == -(-(23 - 8) // 4)  # 2 ranks read 4 each: 15 left, each once
