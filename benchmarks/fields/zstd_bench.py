"""zstd on small per-sample fields: per-member frames with and without a trained dictionary.

    python -m benchmarks.fields.zstd_bench --samples 10000 --out benchmarks/fields/FIELDS_ZSTD.md \
        --json benchmarks/fields/fields_zstd_results.json

For each field (COCO-like captions as `text`, COCO-like image metadata as `json`), the member
bytes of every sample are compressed one frame per member, as `fastpack build` stores a `.zst`
field: without a dictionary, and with one trained the way the compiler trains it (on up to
`TRAIN_SAMPLES` members spread evenly over the samples, `--dictionary-size` bytes). Reported: the
total member bytes, the ratio to the no-dictionary frames, the bytes the members take in a tar
shard (512-byte header plus data padded to 512 bytes each), and the decode cost per sample
(`FieldCodec.decode`: decompress and decode) as the median and range over `--repeats` rounds.
The text is synthetic (benchmarks/fields/_captions.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import zstandard
from fastpack.formats import FieldSpec, Zstd, encode_value
from fastpack.formats.field_codec import FieldCodec, train_dictionary
from fastpack.formats.schema import Dictionary, dictionary_name

from benchmarks import sysinfo as _sysinfo
from benchmarks.fields._captions import captions, image_metadata

TRAIN_SAMPLES = 2000
BLOCK = 512


def _spread(items: Sequence[bytes], count: int) -> list[bytes]:
    """Up to `count` items at even steps over `items`."""
    step = max(1, len(items) // count)
    return list(items[::step][:count])


def _tar_bytes(sizes: Sequence[int]) -> int:
    return sum(BLOCK + -(-s // BLOCK) * BLOCK for s in sizes)


def _decode_seconds(codec: FieldCodec, members: Sequence[bytes], repeats: int) -> list[float]:
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for m in members:
            codec.decode(m)
        rounds.append((time.perf_counter() - start) / len(members))
    return rounds


def _row(
    label: str, codec: FieldCodec, values: Sequence[Any], repeats: int, baseline: int | None
) -> tuple[str, int, str, int, list[float]]:
    members = [codec.encode(v) for v in values]
    total = sum(map(len, members))
    ratio = f"{baseline / total:.2f}x" if baseline else "1.00x"
    return (
        label,
        total,
        ratio,
        _tar_bytes([len(m) for m in members]),
        _decode_seconds(codec, members, repeats),
    )


def bench_field(  # noqa: PLR0913 -- keyword inputs
    name: str,
    kind: str,
    values: Sequence[Any],
    *,
    levels: Sequence[int],
    dict_size: int,
    repeats: int,
) -> list[tuple[str, int, str, int, list[float]]]:
    raw_spec = FieldSpec(name=name, type=kind)
    raw = [encode_value(raw_spec, v) for v in values]
    rows = [_row("no compression", FieldCodec(raw_spec), values, repeats, None)]
    trained = train_dictionary(_spread(raw, TRAIN_SAMPLES), dict_size)
    if trained is None:
        raise SystemExit(f"{name}: too few samples to train a dictionary")
    zname = f"{name}.zst"
    for level in levels:
        plain = FieldCodec(FieldSpec(name=zname, type=kind, zstd=Zstd(level=level)))
        row = _row(f"zstd {level}, no dictionary", plain, values, repeats, None)
        rows.append(row)
        d = Dictionary(name=dictionary_name(zname), bytes=len(trained), sha256="")
        spec = FieldSpec(name=zname, type=kind, zstd=Zstd(level=level, dictionary=d))
        label = f"zstd {level}, {len(trained) // 1024} KiB dictionary"
        rows.append(_row(label, FieldCodec(spec, trained), values, repeats, row[1]))
    return rows


def _us(seconds: list[float]) -> str:
    us = [s * 1e6 for s in seconds]
    return f"{statistics.median(us):.2f} ({min(us):.2f}-{max(us):.2f})"


def report(
    results: dict[str, list[tuple[str, int, str, int, list[float]]]],
    samples: int,
    args: argparse.Namespace,
) -> str:
    lines = [
        "# zstd on small fields: dictionary versus per-member frames",
        "",
        f"{samples:,} samples per field; dictionary trained on {min(samples, TRAIN_SAMPLES):,} "
        f"members spread evenly (as `fastpack build` trains it), at most "
        f"{args.dictionary_size // 1024} KiB. Synthetic COCO-like text "
        f"(benchmarks/fields/_captions.py). "
        "`vs no dict` is the no-dictionary frames' bytes over these bytes, at the same level. "
        "`in tar` counts each member's 512-byte header and its data padded to 512 bytes. "
        f"Decode: `FieldCodec.decode` per sample, median (range) over {args.repeats} rounds, "
        "one core.",
        "",
        f"Command: `python -m benchmarks.fields.zstd_bench --samples {samples}`; measured "
        f"{dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f"; raw numbers: `{args.json.name}`" if args.json else ""),
        "",
        "| field | storage | member bytes | vs no dict | in tar | decode us/sample |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for field, rows in results.items():
        for label, total, ratio, tar, seconds in rows:
            shown = ratio if "dictionary" in label and "no dictionary" not in label else ""
            lines.append(f"| {field} | {label} | {total:,} | {shown} | {tar:,} | {_us(seconds)} |")
    versions = {**_sysinfo.versions(), "zstandard": zstandard.__version__}
    lines += [
        "",
        f"Machine: `{json.dumps(_sysinfo.machine())}`; load `{_sysinfo.load()}`",
        f"Versions: `{json.dumps(versions)}`; fastpack "
        f"`{_sysinfo.fastpack_commit(Path(__file__).resolve().parent.parent)}`",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--dictionary-size", type=int, default=64 * 1024)
    parser.add_argument("--levels", default="3,19")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path, help="the raw numbers")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    bench: Callable[..., list[tuple[str, int, str, int, list[float]]]] = bench_field
    results = {
        "caption (text)": bench(
            "txt",
            "text",
            captions(args.samples),
            levels=levels,
            dict_size=args.dictionary_size,
            repeats=args.repeats,
        ),
        "metadata (json)": bench(
            "json",
            "json",
            image_metadata(args.samples),
            levels=levels,
            dict_size=args.dictionary_size,
            repeats=args.repeats,
        ),
    }
    text = report(results, args.samples, args)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        raw = {
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": _sysinfo.fastpack_commit(Path(__file__).resolve().parent.parent),
            "machine": _sysinfo.machine(),
            "load": _sysinfo.load(),
            "versions": {**_sysinfo.versions(), "zstandard": zstandard.__version__},
            "args": {k: str(v) for k, v in vars(args).items()},
            "fields": {
                field: [
                    {
                        "storage": label,
                        "member_bytes": total,
                        "vs_no_dict": ratio,
                        "in_tar": tar,
                        "decode_seconds": seconds,
                    }
                    for label, total, ratio, tar, seconds in rows
                ]
                for field, rows in results.items()
            },
        }
        args.json.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
