"""`python -m benchmarks.figures [--check | --status]`: render the pages' figures from JSON."""

from __future__ import annotations

import argparse
import difflib
import sys

from benchmarks.figures.history import ROOT, commits_between
from benchmarks.figures.pages import pages, rendered, used
from benchmarks.figures.picture import shows
from benchmarks.figures.provenance import load_json, provenance
from benchmarks.figures.registry import FIGURES, PICTURES, draw_picture


def check() -> int:
    differences = 0
    for page in pages():
        now, want = page.read_text("utf-8"), rendered(page)
        if now != want:
            differences += 1
            name = str(page.relative_to(ROOT))
            sys.stdout.writelines(
                difflib.unified_diff(now.splitlines(True), want.splitlines(True), name, name)
            )
    for name, (path, data) in PICTURES.items():
        if shows(ROOT / path, data()):
            continue
        differences += 1
        print(f"{path}: does not show what its JSON holds now ({name})")
    return 1 if differences else 0


def write(redraw: bool) -> None:
    for page in pages():
        text = rendered(page)
        if text != page.read_text("utf-8"):
            page.write_text(text, "utf-8")
            print(f"rendered {page.relative_to(ROOT)}")
    for name, (path, data) in PICTURES.items():
        if redraw or not shows(ROOT / path, data()):
            draw_picture()
            print(f"drew {path} ({name})")


def status() -> None:
    on_pages = used()
    for figure in FIGURES.values():
        for source in figure.sources:
            p = provenance(load_json(ROOT / source))
            code = commits_between(p.commit, "HEAD", figure.measures)
            every = commits_between(p.commit)
            where = ", ".join(str(page.relative_to(ROOT)) for page in on_pages.get(figure.name, []))
            print(
                f"{figure.name}: {source} at {p.commit} ({'clean' if p.clean else 'DIRTY'}), "
                f"{p.date}; {every} commits behind HEAD, {code} of them change what it "
                f"measures{' (GPU)' if figure.gpu else ''}; on {where or 'no page'}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only say what differs (exit 1)")
    mode.add_argument("--status", action="store_true", help="each figure's commit and age")
    mode.add_argument("--redraw", action="store_true", help="draw the pictures even if current")
    args = parser.parse_args()
    if args.check:
        return check()
    if args.status:
        status()
        return 0
    write(args.redraw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
