"""COCO instances files: one sample per image entry, boxes, categories, iscrowd and rendered
masks; where the images are; bad annotations that reject a sample; malformed files; and the
end-to-end build read back."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.compiler.sources import LeftOutWarning, SourceOptions, detect_kind
from fastpack.compiler.sources.sample_fields import InvalidValue, MemberRef, unpack_fields
from fastpack.compiler.sources.scan import NO_CONTAINER
from fastpack.formats import decode_value, encode_value
from pycocotools import mask as coco_mask

from tests.compiler._fields import read_fields
from tests.compiler.sources._scans import image_bytes, png_pixels, resolved, scan_all
from tests.conftest import jpeg_bytes

SIZES = {1: (40, 50), 5: (32, 48), 9: (36, 40)}  # image id: (height, width)
CATEGORIES = [{"id": 7, "name": "dog"}, {"id": 1, "name": "person"}, {"id": 3, "name": "car"}]
RECTANGLE = [10.0, 10.0, 30.0, 10.0, 30.0, 20.0, 10.0, 20.0]  # 20 x 10 pixels


def block(height: int, width: int, rows: slice, cols: slice) -> np.ndarray:
    mask = np.zeros((height, width), np.uint8)
    mask[rows, cols] = 1
    return mask


def compressed_rle(mask: np.ndarray) -> dict[str, Any]:
    rle = coco_mask.encode(np.asfortranarray(mask))
    return {"size": list(mask.shape), "counts": rle["counts"].decode("ascii")}


def uncompressed_rle(mask: np.ndarray) -> dict[str, Any]:
    flat, counts, value, run = mask.flatten(order="F"), [], 0, 0
    for pixel in flat:
        if pixel != value:
            counts.append(run)
            value, run = int(pixel), 0
        run += 1
    return {"size": list(mask.shape), "counts": [*counts, run]}


def coco_annotations() -> list[dict[str, Any]]:
    """Out of image order: image 1 has a polygon (person) and an uncompressed RLE (car) over it;
    image 5 none; image 9 a crowd of dogs as compressed RLE."""
    h1, w1 = SIZES[1]
    h9, w9 = SIZES[9]
    return [
        {
            "id": 11,
            "image_id": 1,
            "category_id": 1,
            "bbox": [10, 10, 20, 10.5],
            "segmentation": [RECTANGLE],
            "iscrowd": 0,
        },
        {
            "id": 12,
            "image_id": 9,
            "category_id": 7,
            "bbox": [0, 0, 8, 6],
            "segmentation": compressed_rle(block(h9, w9, slice(0, 6), slice(0, 8))),
            "iscrowd": 1,
        },
        {
            "id": 13,
            "image_id": 1,
            "category_id": 3,
            "bbox": [15.25, 5, 10, 10],
            "segmentation": uncompressed_rle(block(h1, w1, slice(5, 15), slice(15, 25))),
        },
    ]


def coco_dir(root: Path, anns: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    """`root/annotations/instances_val2017.json` and its images in `root/val2017/`."""
    images = []
    for n, (image_id, (height, width)) in enumerate(SIZES.items()):
        name = f"{image_id:012d}.jpg"
        path = root / "val2017" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg_bytes(height, width, seed=n))
        images.append({"id": image_id, "file_name": name, "height": height, "width": width})
    anns = coco_annotations() if anns is None else anns
    data = {"info": {}, "images": images, "annotations": anns, "categories": CATEGORIES, **extra}
    path = root / "annotations" / "instances_val2017.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def coco(tmp_path: Path) -> Path:
    return coco_dir(tmp_path / "coco")


def test_samples_boxes_categories_and_crowds(coco: Path, tmp_path: Path) -> None:
    assert detect_kind(coco, "auto") == "coco"
    scan, rows = scan_all(coco, tmp_path / "work")
    assert scan.kind == "coco"
    assert scan.root == coco.parent.parent / "val2017"
    assert scan.containers == ()
    schema = scan.schema
    assert schema.names == ("jpg", "boxes.npy", "labels.json", "iscrowd.npy")
    assert schema["labels.json"].classes == ("person", "car", "dog")  # sorted category ids
    assert schema["boxes.npy"].geometry == "boxes"
    assert [r.source.decode() for r in rows] == [f"{i:012d}.jpg" for i in SIZES]
    assert [r.label for r in rows] == [-1, -1, -1]
    for n, row in enumerate(rows):
        assert image_bytes(scan, row) == jpeg_bytes(*SIZES[[1, 5, 9][n]], seed=n)
        assert row.size == len(image_bytes(scan, row))
    first, empty, crowd = (unpack_fields(r.fields) for r in rows)
    assert first == {
        "boxes.npy": [[10.0, 10.0, 30.0, 20.5], [15.25, 5.0, 25.25, 15.0]],
        "labels.json": [0, 1],
        "iscrowd.npy": [0, 0],
    }
    assert empty == {"boxes.npy": [], "labels.json": [], "iscrowd.npy": []}
    assert crowd == {"boxes.npy": [[0.0, 0.0, 8.0, 6.0]], "labels.json": [2], "iscrowd.npy": [1]}
    for values in (first, empty, crowd):  # every value fits its field
        for name, value in values.items():
            encode_value(schema[name], value)


def test_boxes_are_float32_exactly(tmp_path: Path) -> None:
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [473.07, 395.93, 38.65, 28.67]}]
    scan, rows = scan_all(coco_dir(tmp_path / "c", anns), tmp_path / "work")
    boxes = unpack_fields(rows[0].fields)["boxes.npy"]
    expected = np.array([[473.07, 395.93, 473.07 + 38.65, 395.93 + 28.67]], np.float32)
    spec = scan.schema["boxes.npy"]
    np.testing.assert_array_equal(decode_value(spec, encode_value(spec, boxes)), expected)


def test_masks_are_rendered_into_a_spill_file(coco: Path, tmp_path: Path) -> None:
    scan, rows = scan_all(coco, tmp_path / "work", SourceOptions(render_masks=True))
    assert scan.schema.names[-1] == "seg.png"
    assert scan.schema["seg.png"].geometry == "mask"
    assert scan.containers == (str(tmp_path / "work" / "sources" / "coco-masks"),)
    assert {r.container for r in rows} == {NO_CONTAINER}
    assert isinstance(unpack_fields(rows[0].fields)["seg.png"], MemberRef)
    maps = []
    for row, (height, width) in zip(rows, SIZES.values(), strict=True):
        png = resolved(scan, row)["seg.png"]
        label = png_pixels(png)
        assert label.shape == (height, width)
        maps.append(label)
        assert image_bytes(scan, row) == (scan.root / row.source.decode()).read_bytes()
    first, empty, crowd = maps
    car = block(*SIZES[1], slice(5, 15), slice(15, 25))
    person = block(*SIZES[1], slice(10, 20), slice(10, 30))
    assert int((first == 2).sum()) == int(car.sum())  # the later car over the person
    assert int((first == 1).sum()) == int(person.sum()) - int((person & car).sum())
    assert int((first == 0).sum()) == first.size - int((person | car).sum())
    assert not empty.any()
    assert int((crowd == 3).sum()) == 48
    assert set(np.unique(crowd).tolist()) == {0, 3}


def test_bad_annotations_reject_their_sample(tmp_path: Path) -> None:
    anns = [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3], "segmentation": []},
        {"id": 2, "image_id": 5, "category_id": 42, "bbox": [1, 2, 3, 4], "segmentation": []},
        {
            "id": 3,
            "image_id": 9,
            "category_id": 3,
            "bbox": [1, 2, 3, 4],
            "segmentation": [[1.0, 2.0, 3.0, 4.0, 5.0]],
        },
        {"id": 4, "image_id": 404, "category_id": 3, "bbox": [1, 2, 3, 4]},
        {"id": 5, "image_id": "x", "category_id": 3, "bbox": [1, 2, 3, 4]},
    ]
    with pytest.warns(
        LeftOutWarning,
        match=r"annotations of no image of the file, left out: 2 "
        r"\(the first, annotations\[3\], has image_id 404\)",
    ):
        scan, rows = scan_all(
            coco_dir(tmp_path / "c", anns), tmp_path / "work", SourceOptions(render_masks=True)
        )
    schema = scan.schema
    bad_box, bad_category, bad_polygon = (resolved(scan, r) for r in rows)
    assert bad_box["boxes.npy"] == InvalidValue(
        "annotation 1: bbox [1, 2, 3] is not 4 finite numbers"
    )
    assert bad_category["labels.json"] == InvalidValue("annotation 2: unknown category 42")
    assert bad_category["seg.png"] == InvalidValue("annotation 2 has an unknown category")
    assert bad_polygon["seg.png"] == InvalidValue(
        "annotation 3: polygon 0 has 5 coordinates, expected an even number >= 6"
    )
    encode_value(schema["seg.png"], bad_box["seg.png"])  # an empty polygon list: an empty mask


def test_bad_annotations_are_named_in_rejects(tmp_path: Path) -> None:
    """The reason a scan found reaches rejects.jsonl, with the field, and the build goes on."""
    anns = [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3], "segmentation": []},
        {
            "id": 3,
            "image_id": 9,
            "category_id": 3,
            "bbox": [1, 2, 3, 4],
            "segmentation": [[1.0, 2.0, 3.0, 4.0, 5.0]],
        },
    ]
    out = tmp_path / "out"
    summary = build(
        coco_dir(tmp_path / "c", anns),
        out,
        BuildOptions(workers=1, progress=False, render_masks=True),
    )
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert [(r["field"], r["reason"]) for r in rejects] == [
        ("boxes.npy", "annotation 1: bbox [1, 2, 3] is not 4 finite numbers"),
        ("seg.png", "annotation 3: polygon 0 has 5 coordinates, expected an even number >= 6"),
    ]
    assert (summary.samples, summary.rejected) == (len(SIZES) - 2, 2)


def test_images_root_next_to_the_json_or_given(tmp_path: Path) -> None:
    coco = coco_dir(tmp_path / "c")
    moved = coco.parent / "val2017"
    (tmp_path / "c" / "val2017").rename(moved)
    scan, _ = scan_all(coco, tmp_path / "work")
    assert scan.root == moved
    elsewhere = tmp_path / "pictures"
    moved.rename(elsewhere)
    with pytest.raises(
        SourceError,
        match=r"instances_val2017\.json: cannot find the images: the first, '000000000001\.jpg', "
        r"is in none of .*val2017.*; give their directory \(--images DIR\)",
    ):
        scan_all(coco, tmp_path / "work")
    scan, rows = scan_all(coco, tmp_path / "work", SourceOptions(images_root=elsewhere))
    assert scan.root == elsewhere
    assert rows[0].size == len(jpeg_bytes(*SIZES[1], seed=0))
    with pytest.raises(SourceError, match=r"missing: the images directory is not a directory"):
        scan_all(coco, tmp_path / "work", SourceOptions(images_root=tmp_path / "missing"))


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


IMAGE = {"id": 1, "file_name": "a.jpg", "height": 4, "width": 4}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"images": [', r"c\.json: not valid JSON \(.* at line 1\)"),
        ([1, 2], r"c\.json: not a COCO instances file: expected an object with 'images'"),
        ({"images": [], "categories": []}, r"not a COCO instances file: .*found \['categories'"),
        ({"images": {}, "annotations": [], "categories": []}, r"'images' should be a list"),
        ({"images": [], "annotations": []}, r"c\.json: 'categories' should be a list, found none"),
        (
            {"images": [IMAGE, {"id": 2}], "annotations": [], "categories": []},
            r"c\.json: images\[1\]: expected a non-empty string 'file_name'",
        ),
        (
            {"images": [{"id": "1", "file_name": "a.jpg"}], "annotations": [], "categories": []},
            r"images\[0\]: expected an object with an integer 'id'",
        ),
        (
            {
                "images": [IMAGE, {**IMAGE, "file_name": "b.jpg"}],
                "annotations": [],
                "categories": [],
            },
            r"c\.json: images\[0\] and images\[1\] have one id, 1",
        ),
        (
            {"images": [], "annotations": [], "categories": [{"id": 1}]},
            r"c\.json: categories\[0\]: expected a string 'name'",
        ),
        (
            {
                "images": [],
                "annotations": [],
                "categories": [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}],
            },
            r"categories\[1\]: category id 1 appears twice",
        ),
    ],
)
def test_malformed_files(tmp_path: Path, data: Any, message: str) -> None:
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes(4, 4))
    path = write_json(tmp_path / "c.json", data)
    with pytest.raises(SourceError, match=message):
        scan_all(path, tmp_path / "work")


def test_masks_need_image_sizes(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes(4, 4))
    data = {"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [], "categories": []}
    path = write_json(tmp_path / "c.json", data)
    scan_all(path, tmp_path / "work")  # without masks, sizes are not needed
    with pytest.raises(SourceError, match=r"images\[0\]: masks need an integer 'height' and"):
        scan_all(path, tmp_path / "work", SourceOptions(render_masks=True))


def coco_schema(fields: list[dict[str, Any]]) -> SourceOptions:
    return SourceOptions(schema=parse_build_schema(fields, "schema.json"))


def test_a_schema_picks_columns(coco: Path, tmp_path: Path) -> None:
    options = coco_schema(
        [
            {"name": "image.jpg", "type": "jpeg", "column": "image"},
            {"name": "id.json", "type": "json", "column": "image_id"},
            {"name": "cats.json", "type": "class_ids", "column": "labels"},
            {"name": "masks.png", "type": "png", "column": "seg", "geometry": "mask"},
        ]
    )
    scan, rows = scan_all(coco, tmp_path / "work", options)
    assert scan.schema.names == ("image.jpg", "id.json", "cats.json", "masks.png")
    assert scan.schema["cats.json"].classes == ("person", "car", "dog")
    values = unpack_fields(rows[2].fields)
    assert (values["id.json"], values["cats.json"]) == (9, [2])
    assert isinstance(values["masks.png"], MemberRef)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([{"name": "txt", "type": "text"}], r"schema: no jpeg field for the COCO images"),
        (
            [{"name": "jpg", "type": "jpeg"}, {"name": "cls", "type": "class"}],
            r"field 'cls' is a class field, which a COCO image cannot fill",
        ),
        (
            [{"name": "jpg", "type": "jpeg"}, {"name": "area.json", "type": "json"}],
            r"field 'area\.json': column 'area' is not a COCO column; the columns are",
        ),
        (
            [{"name": "jpg", "type": "jpeg"}, {"name": "seg.txt", "type": "text"}],
            r"field 'seg\.txt': the seg column is a PNG mask",
        ),
        (
            [{"name": "jpg", "type": "jpeg"}, {"name": "boxes.json", "type": "json"}],
            r"field 'boxes\.json': the boxes column is an ndarray field, not json",
        ),
    ],
)
def test_schema_errors(
    coco: Path, tmp_path: Path, fields: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(SourceError, match=message):
        scan_all(coco, tmp_path / "work", coco_schema(fields))


def test_detection(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(SourceError, match=r"dir: a coco source must be a file, found a directory"):
        detect_kind(tmp_path / "dir", "coco")
    path = write_json(tmp_path / "c.json", {})
    assert detect_kind(path, "coco") == "coco"
    with pytest.raises(SourceError, match=r"a parquet source cannot be a \.json file"):
        detect_kind(path, "parquet")


def test_no_per_sample_warnings(coco: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scan_all(coco, tmp_path / "work", SourceOptions(render_masks=True))


# --- end to end ------------------------------------------------------------------------------


def test_build_reads_back_boxes_categories_and_masks(coco: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(coco, out, BuildOptions(workers=1, progress=False, render_masks=True))
    stored = read_fields(out)
    assert [s["source"] for s in stored] == [f"{i:012d}.jpg" for i in SIZES]
    np.testing.assert_array_equal(
        stored[0]["boxes.npy"], np.array([[10, 10, 30, 20.5], [15.25, 5, 25.25, 15]], np.float32)
    )
    assert stored[1]["boxes.npy"].shape == (0, 4)
    assert [s["labels.json"].tolist() for s in stored] == [[0, 1], [], [2]]
    assert [s["iscrowd.npy"].tolist() for s in stored] == [[0, 0], [], [1]]
    crowd = png_pixels(stored[2]["seg.png"])
    assert int((crowd == 3).sum()) == 48
