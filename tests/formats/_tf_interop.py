"""TensorFlow as the reference for Examples and TFRecord files, run in a subprocess so that the
test process never imports TensorFlow (about 3 s each time): a test gathers its cases into one
job, `run_tf` runs them all in one `python _tf_interop.py job.json answer.json`.

An Example travels as JSON: `{name: [kind, values]}`, kind `bytes` (values hex), `int64` or
`float`. The job's keys, each optional:

- `read`: TFRecord paths; each is read with `tf.data.TFRecordDataset`, every record parsed by
  protobuf (`tf.train.Example.FromString`) and by `tf.io.parse_single_example` (a VarLenFeature
  of each feature's kind), and a `jpeg` `image/encoded` decoded by `tf.io.decode_jpeg`.
- `write`: `{"path", "examples"}`; the Examples built with `tf.train.Example`, written with
  `tf.io.TFRecordWriter`; the answer holds their serialized bytes (hex).
- `frame`: `{"path", "payloads"}`: raw payloads (hex) written with `tf.io.TFRecordWriter`.
- `serialize`: Examples to serialize (hex).
- `parse`: serialized Examples (hex) to parse with protobuf: an Example, or `{"error": ...}`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

Example = dict[str, list[Any]]  # name -> [kind, values]
_LISTS = {"bytes": "bytes_list", "int64": "int64_list", "float": "float_list"}


def run_tf(job: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Run `job` in one TensorFlow subprocess; skip the test when TensorFlow is not installed."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed: no reference to compare with")
    job_path, answer_path = tmp_path / "tf_job.json", tmp_path / "tf_answer.json"
    job_path.write_text(json.dumps(job))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, __file__, str(job_path), str(answer_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the TensorFlow helper failed:\n{done.stderr[-4000:]}")
    answer: dict[str, Any] = json.loads(answer_path.read_text())
    return answer


def as_json(features: dict[str, tuple[str, list[Any]]]) -> Example:
    """`{name: (kind, values)}` with bytes values as the JSON form above."""
    return {
        name: [kind, [v.hex() for v in values] if kind == "bytes" else list(values)]
        for name, (kind, values) in features.items()
    }


# ---- what runs in the subprocess ------------------------------------------------------------


def _to_json(example: Any) -> Example:
    out: Example = {}
    for name, feature in example.features.feature.items():
        which = feature.WhichOneof("kind")
        if which is None:
            out[name] = ["none", []]
            continue
        kind = {v: k for k, v in _LISTS.items()}[which]
        values = list(getattr(feature, which).value)
        out[name] = [kind, [v.hex() for v in values] if kind == "bytes" else values]
    return out


def _from_json(tf: Any, features: Example) -> Any:
    example = tf.train.Example()
    for name, (kind, values) in features.items():
        target = getattr(example.features.feature[name], _LISTS[kind])
        target.value.extend([bytes.fromhex(v) for v in values] if kind == "bytes" else values)
    return example


def _read(tf: Any, path: str) -> list[dict[str, Any]]:
    dtypes = {"bytes": tf.string, "int64": tf.int64, "float": tf.float32}
    records = []
    for record in tf.data.TFRecordDataset(path):
        proto = _to_json(tf.train.Example.FromString(record.numpy()))
        spec = {n: tf.io.VarLenFeature(dtypes[k]) for n, (k, _) in proto.items() if k != "none"}
        parsed = tf.io.parse_single_example(record, spec) if spec else {}  # {}: refused
        values = {}
        for name, tensor in parsed.items():
            found = tensor.values.numpy().tolist()
            values[name] = [v.hex() for v in found] if proto[name][0] == "bytes" else found
        shape = None
        if proto.get("image/format", [None, [None]])[1] == [b"jpeg".hex()]:
            shape = tf.io.decode_jpeg(parsed["image/encoded"].values[0]).shape.as_list()
        records.append({"proto": proto, "parsed": values, "image_shape": shape})
    return records


def _parse(tf: Any, data: bytes) -> dict[str, Any]:
    try:
        return {"example": _to_json(tf.train.Example.FromString(data))}
    except Exception as e:  # protobuf's DecodeError, whatever its module
        return {"error": f"{type(e).__name__}: {e}"}


def main(job_path: str, answer_path: str) -> None:
    tf: Any = importlib.import_module("tensorflow")
    job = json.loads(Path(job_path).read_text())
    answer: dict[str, Any] = {"read": [_read(tf, path) for path in job.get("read", [])]}
    answer["write"] = []
    for item in job.get("write", []):
        serialized = [_from_json(tf, e).SerializeToString() for e in item["examples"]]
        with tf.io.TFRecordWriter(item["path"]) as writer:
            for data in serialized:
                writer.write(data)
        answer["write"].append([data.hex() for data in serialized])
    for item in job.get("frame", []):
        with tf.io.TFRecordWriter(item["path"]) as writer:
            for payload in item["payloads"]:
                writer.write(bytes.fromhex(payload))
    answer["serialize"] = [
        _from_json(tf, e).SerializeToString().hex() for e in job.get("serialize", [])
    ]
    answer["parse"] = [_parse(tf, bytes.fromhex(data)) for data in job.get("parse", [])]
    Path(answer_path).write_text(json.dumps(answer))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
