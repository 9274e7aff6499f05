"""COCO instances files (`instances_val2017.json`): one sample per image entry, in the file's order.

The file is loaded whole (COCO files are one JSON object); beyond it the scan keeps a few numpy
arrays (image ids, and the annotations of each image as a range of one argsort), no Python
object per sample. A sample's image is the file `file_name` under the images directory; its
fields, by column (what a schema file's `column` names):

- `boxes` (default field `boxes.npy`): ndarray `<f4` (N, 4), geometry boxes: x0 y0 x1 y1 in
  pixels, from COCO's x y w h;
- `labels` (`labels.json`): class_ids, each annotation's category as 0..K-1 in sorted
  category-id order; the field's `classes` are the categories' names in that order;
- `iscrowd` (`iscrowd.npy`): ndarray `|u1` (N,), each annotation's `iscrowd` (0 when absent);
- `seg` (`seg.png`, with `render_masks` only): a PNG label map of the image's size, geometry
  mask: a pixel is its annotation's category index + 1 (0: none), later annotations over
  earlier;
- `image_id` (only when a schema names it): json, the image entry's `id`.

N is the image's annotations, in file order; an image without any has empty fields. With a
schema, its first jpeg field is the image and every other field names one of these columns (a
class field cannot: an image has no single class); `render_masks` adds `seg.png` to a schema
without a `seg` field.

The images directory is `SourceOptions.images_root`, else the first of these that holds the first
image's file: for `<dir>/instances_val2017.json`, `<dir>/../val2017`, `<dir>/val2017`,
`<dir>/images/val2017`, `<dir>/images`, `<dir>` (the split is the file name's part after its last
`_`). A missing image file is rejected by its shard job.

Bad annotations do not stop the scan; they get their sample rejected by its shard job, with the
field and the reason (`InvalidValue`) in rejects.jsonl: a `bbox` that is not 4 finite numbers,
an unknown `category_id`, a segmentation that cannot be rendered. Annotations whose `image_id`
names no image entry belong to no sample: they are left out, with one `LeftOutWarning`.

Masks are rendered while the scan runs (pycocotools, then a PNG encode) into a spill file in the
build directory that the shard jobs read by offset. That keeps the shard jobs plain readers, at a
cost paid in the one scanning process: it renders and encodes every image's mask in turn (most of
that time in pycocotools' RLE decode), and the spill file takes build-directory disk for a PNG
per image.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import FieldSpec, Schema

from ...build_schema import BuildSchema
from ...errors import SourceError
from ...images.masks import SegmentationError, mask_png, render_mask
from ..left_out import warn_left_out
from ..sample_fields import FieldValue, InvalidValue, pack_fields
from ..scan import NO_CONTAINER, PlanRow, SourceOptions, SourceScan
from ..spill import SPILL_DIR, SpillFile

SPILL_NAME = "coco-masks"
IMAGE_FIELD, IMAGE_COLUMN = "jpg", "image"
_MISSING = np.iinfo(np.int64).min  # an image_id that is not an integer
_BOX_NUMBERS = 4  # a bbox: x, y, width, height


@dataclass(frozen=True)
class _Field:
    """A field of the dataset and the COCO column that fills it."""

    spec: FieldSpec
    column: str


def _default_specs(classes: tuple[str, ...]) -> dict[str, FieldSpec]:
    """Each column's field when no schema names it."""
    return {
        "boxes": FieldSpec(
            name="boxes.npy", type="ndarray", dtype="<f4", shape=(None, 4), geometry="boxes"
        ),
        "labels": FieldSpec(name="labels.json", type="class_ids", classes=classes),
        "iscrowd": FieldSpec(name="iscrowd.npy", type="ndarray", dtype="|u1", shape=(None,)),
        "seg": FieldSpec(name="seg.png", type="png", geometry="mask"),
        "image_id": FieldSpec(name="image_id.json", type="json"),
    }


COLUMNS = tuple(_default_specs(()))
_INLINE_TYPES = ("class_ids", "ndarray", "json", "text")


def _check_field(spec: FieldSpec, column: str) -> None:
    where = f"schema: field {spec.name!r}"
    if column not in COLUMNS:
        raise SourceError(
            f"{where}: column {column!r} is not a COCO column; the columns are {list(COLUMNS)}"
        )
    if column == "seg" and spec.type != "png":
        raise SourceError(f"{where}: the seg column is a PNG mask: a png field, not {spec.type}")
    if column == "boxes" and spec.type != "ndarray":
        raise SourceError(f"{where}: the boxes column is an ndarray field, not {spec.type}")
    if column not in ("seg", "boxes") and spec.type not in _INLINE_TYPES:
        raise SourceError(f"{where}: column {column!r} cannot fill a {spec.type} field")


def _fields(schema: BuildSchema | None, classes: tuple[str, ...], masks: bool) -> list[_Field]:
    """The fields in tar order, the image's first unless the schema orders them otherwise (the
    image's column is "image", whatever the schema says)."""
    defaults = _default_specs(classes)
    if schema is None:
        columns = ["boxes", "labels", "iscrowd", *(["seg"] if masks else [])]
        image = _Field(FieldSpec(name=IMAGE_FIELD, type="jpeg"), IMAGE_COLUMN)
        return [image, *(_Field(defaults[c], c) for c in columns)]
    dataset = schema.schema
    if dataset.image_field is None:
        raise SourceError(
            f"schema: no jpeg field for the COCO images; fields: {list(dataset.names)}"
        )
    if dataset.label_field is not None:
        raise SourceError(
            f"schema: field {dataset.label_field!r} is a class field, which a COCO image cannot "
            "fill (it has no single class); its annotations' categories are a class_ids field "
            "of column 'labels'"
        )
    fields = []
    for source in schema.fields:
        spec = source.spec
        if spec.name == dataset.image_field:
            fields.append(_Field(spec, IMAGE_COLUMN))
            continue
        _check_field(spec, source.column)
        if source.column == "labels" and spec.type == "class_ids" and not spec.classes:
            spec = dataclasses.replace(spec, classes=classes)
        fields.append(_Field(spec, source.column))
    if masks and all(f.column != "seg" for f in fields):
        fields.append(_Field(defaults["seg"], "seg"))
    return fields


def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            data = json.load(file)
    except FileNotFoundError as e:
        raise SourceError(f"{path}: not found") from e
    except OSError as e:
        raise SourceError(f"{path}: cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise SourceError(f"{path}: not UTF-8 JSON ({e.reason} at byte {e.start})") from e
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    keys = sorted(data)[:10] if isinstance(data, dict) else type(data).__name__
    if not isinstance(data, dict) or not {"images", "annotations"} <= set(data):
        raise SourceError(
            f"{path}: not a COCO instances file: expected an object with 'images', "
            f"'annotations' and 'categories', found {keys}"
        )
    for key in ("images", "annotations", "categories"):
        if not isinstance(data.get(key), list):
            found = type(data[key]).__name__ if key in data else "none"
            raise SourceError(f"{path}: {key!r} should be a list, found {found}")
    return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _categories(path: Path, entries: list[Any]) -> tuple[dict[int, int], tuple[str, ...]]:
    """Category id -> contiguous index (sorted id order), and the names in that order."""
    names: dict[int, str] = {}
    for k, entry in enumerate(entries):
        where = f"{path}: categories[{k}]"
        if not isinstance(entry, dict) or not _is_int(entry.get("id")):
            raise SourceError(f"{where}: expected an object with an integer 'id'")
        if not isinstance(entry.get("name"), str):
            raise SourceError(f"{where}: expected a string 'name'")
        if entry["id"] in names:
            raise SourceError(f"{where}: category id {entry['id']} appears twice")
        names[entry["id"]] = entry["name"]
    ids = sorted(names)
    return {c: i for i, c in enumerate(ids)}, tuple(names[c] for c in ids)


def _image_ids(path: Path, images: list[Any], masks: bool) -> npt.NDArray[np.int64]:
    """The images' ids, each entry checked: an object with an integer `id`, a `file_name`, and
    (for masks) a positive `height` and `width`."""
    ids = np.empty(len(images), np.int64)
    for k, entry in enumerate(images):
        where = f"{path}: images[{k}]"
        if not isinstance(entry, dict) or not _is_int(entry.get("id")):
            raise SourceError(f"{where}: expected an object with an integer 'id'")
        if not _MISSING < entry["id"] < 2**63:
            raise SourceError(f"{where}: id {entry['id']} is out of the 64-bit range")
        name = entry.get("file_name")
        if not isinstance(name, str) or not name:
            raise SourceError(f"{where}: expected a non-empty string 'file_name'")
        if masks and not all(_is_int(entry.get(n)) and entry[n] > 0 for n in ("height", "width")):
            raise SourceError(f"{where}: masks need an integer 'height' and 'width' above 0")
        ids[k] = entry["id"]
    return ids


def _annotation_image(annotation: Any) -> int:
    """The `image_id` of an annotation, or `_MISSING` if it is not a 64-bit integer."""
    image: Any = annotation.get("image_id") if isinstance(annotation, dict) else None
    if _is_int(image) and _MISSING < image < 2**63:
        return int(image)
    return int(_MISSING)


@dataclass(frozen=True)
class _Groups:
    """The annotations of image `i` are `order[starts[i]:starts[i + 1]]`, in file order."""

    order: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]

    def of(self, image: int) -> npt.NDArray[np.int64]:
        return self.order[self.starts[image] : self.starts[image + 1]]


def _groups(path: Path, ids: npt.NDArray[np.int64], annotations: list[Any]) -> _Groups:
    """Annotations grouped by image; those of no image are left out, with a warning."""
    sorter = np.argsort(ids, kind="stable")
    ordered = ids[sorter]
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
    if repeated.size:
        first, second = sorted(sorter[repeated[0] : repeated[0] + 2].tolist())
        raise SourceError(f"{path}: images[{first}] and images[{second}] have one id, {ids[first]}")
    wanted = np.fromiter(map(_annotation_image, annotations), np.int64, len(annotations))
    owner = np.full(len(annotations), -1, np.int64)
    if len(ids):
        at = np.minimum(np.searchsorted(ordered, wanted), len(ids) - 1)
        found = (ordered[at] == wanted) & (wanted != _MISSING)
        owner[found] = sorter[at[found]]
    orphans = np.flatnonzero(owner < 0)
    if orphans.size:
        first = annotations[int(orphans[0])]
        image = first.get("image_id") if isinstance(first, dict) else first
        warn_left_out(
            f"{path}: annotations of no image of the file, left out: {orphans.size} (the first, "
            f"annotations[{orphans[0]}], has image_id {image!r:.60})"
        )
    counts = np.bincount(owner[owner >= 0], minlength=len(ids))
    starts = np.concatenate(([orphans.size], orphans.size + np.cumsum(counts))).astype(np.int64)
    return _Groups(np.argsort(owner, kind="stable"), starts)


def _images_root(path: Path, images: list[Any], given: Path | None) -> Path:
    if given is not None:
        if not given.is_dir():
            raise SourceError(f"{given}: the images directory is not a directory")
        return given
    here = path.parent
    split = path.stem.rpartition("_")[2]
    candidates = list(
        dict.fromkeys(
            [here.parent / split, here / split, here / "images" / split, here / "images", here]
        )
    )
    if not images:
        return here
    first = images[0]["file_name"]
    for candidate in candidates:
        if (candidate / first).is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise SourceError(
        f"{path}: cannot find the images: the first, {first!r}, is in none of {tried}; give "
        "their directory (--images DIR)"
    )


def _annotation_name(annotation: Any, k: int) -> str:
    if isinstance(annotation, dict) and "id" in annotation:
        return f"annotation {annotation['id']!r:.40}"
    return f"annotations[{k}]"


def _boxes(annotations: Sequence[Any], numbers: Sequence[int]) -> list[Any] | InvalidValue:
    """x0 y0 x1 y1, rounded to float32 (so that the `<f4` field takes them exactly); the reason
    the first bbox that is not 4 finite numbers makes the sample a reject."""
    rows: list[Any] = []
    for annotation, k in zip(annotations, numbers, strict=True):
        bbox = annotation.get("bbox")
        if (
            isinstance(bbox, list)
            and len(bbox) == _BOX_NUMBERS
            and all(_is_number(v) and math.isfinite(v) for v in bbox)
        ):
            x, y, w, h = bbox
            rows.append(np.array([x, y, x + w, y + h], np.float32).tolist())
        else:
            name = _annotation_name(annotation, k)
            return InvalidValue(f"{name}: bbox {bbox!r:.80} is not 4 finite numbers")
    return rows


class _Sample:
    """One image entry and its annotations (`numbers`: their positions in the file)."""

    def __init__(self, image: dict[str, Any], annotations: list[Any], numbers: list[int]) -> None:
        self.image, self.annotations, self.numbers = image, annotations, numbers

    def labels(self, categories: dict[int, int]) -> list[int] | InvalidValue:
        found: list[int] = []
        for annotation, k in zip(self.annotations, self.numbers, strict=True):
            category = annotation.get("category_id")
            index = categories.get(category) if _is_int(category) else None
            if index is None:
                name = _annotation_name(annotation, k)
                return InvalidValue(f"{name}: unknown category {category!r:.40}")
            found.append(index)
        return found

    def mask(self, categories: dict[int, int], spill: SpillFile) -> FieldValue:
        """The rendered mask's bytes in `spill`, or the reason it cannot be rendered."""
        instances = []
        for annotation, k in zip(self.annotations, self.numbers, strict=True):
            category = annotation.get("category_id")
            index = categories.get(category) if _is_int(category) else None
            if index is None or "segmentation" not in annotation:
                what = "no segmentation" if index is not None else "an unknown category"
                return InvalidValue(f"{_annotation_name(annotation, k)} has {what}")
            instances.append((index + 1, annotation["segmentation"]))
        try:
            label = render_mask(self.image["height"], self.image["width"], instances)
        except SegmentationError as e:
            k = e.instance or 0
            reason = e.__cause__ if isinstance(e.__cause__, SegmentationError) else e
            return InvalidValue(
                f"{_annotation_name(self.annotations[k], self.numbers[k])}: {reason}"
            )
        return spill.add(mask_png(label))


Getter = Callable[[_Sample], FieldValue]


def _getters(categories: dict[int, int], spill: SpillFile | None) -> dict[str, Getter]:
    """Each column's value of a sample (`seg` only with a spill file)."""
    getters: dict[str, Getter] = {
        "boxes": lambda s: _boxes(s.annotations, s.numbers),
        "labels": lambda s: s.labels(categories),
        "iscrowd": lambda s: [a.get("iscrowd", 0) for a in s.annotations],
        "image_id": lambda s: s.image["id"],
    }
    if spill is not None:
        getters["seg"] = lambda s: s.mask(categories, spill)
    return getters


@dataclass(frozen=True)
class _Scan:
    """What the rows of a scan are made from."""

    data: dict[str, Any]
    groups: _Groups
    root: Path
    fields: list[_Field]
    categories: dict[int, int]

    def rows(self, spill: SpillFile | None) -> Iterator[PlanRow]:
        getters = _getters(self.categories, spill)
        annotations = self.data["annotations"]
        container = 0 if spill is None else NO_CONTAINER
        for i, image in enumerate(self.data["images"]):
            numbers = self.groups.of(i).tolist()
            sample = _Sample(image, [annotations[k] for k in numbers], numbers)
            values = {
                f.spec.name: getters[f.column](sample)
                for f in self.fields
                if f.column != IMAGE_COLUMN
            }
            name = image["file_name"]
            try:
                size = os.stat(self.root / name).st_size
            except OSError:  # kept: rejected when its shard job cannot read it
                size = 0
            yield PlanRow(os.fsencode(name), -1, size, container, 0, pack_fields(values))

    def spilled_rows(self, work_dir: Path) -> Iterator[PlanRow]:
        with SpillFile(work_dir, SPILL_NAME, container=0) as spill:
            yield from self.rows(spill)


def scan_coco(
    path: Path, work_dir: Path | None = None, options: SourceOptions | None = None
) -> SourceScan:
    """Open a COCO instances file (see the module's docstring); masks, when rendered, go to a
    spill file under `work_dir`."""
    options = options or SourceOptions()
    data = _load(path)
    categories, classes = _categories(path, data["categories"])
    fields = _fields(options.schema, classes, options.render_masks)
    masks = any(f.column == "seg" for f in fields)
    ids = _image_ids(path, data["images"], masks)
    groups = _groups(path, ids, data["annotations"])
    root = _images_root(path, data["images"], options.images_root)
    schema = Schema(tuple(f.spec for f in fields))
    scan = _Scan(data, groups, root, fields, categories)
    if not masks:
        return SourceScan(kind="coco", root=root, rows=scan.rows(None), schema=schema)
    if work_dir is None:
        raise SourceError(f"{path}: rendering masks needs a build directory to write them to")
    return SourceScan(
        kind="coco",
        root=root,
        rows=scan.spilled_rows(work_dir),
        containers=(str((work_dir / SPILL_DIR / SPILL_NAME).absolute()),),
        schema=schema,
    )


class CocoSource:
    """A COCO instances `.json` file; never a directory."""

    kind = "coco"
    description = "a COCO instances .json file, its images in --images (or found beside it)"
    suffixes = (".json",)
    directory_files: str | None = None
    file_only = True
    shard_urls = False
    member_images = True

    def names_file(self, name: str) -> bool:
        return False

    def open(self, source: str, work_dir: Path | None, options: SourceOptions | None) -> SourceScan:
        return scan_coco(Path(source), work_dir, options)


COCO = CocoSource()
