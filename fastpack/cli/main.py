"""The `fastpack` command: parses arguments and calls the typed functions that do the work. Each
command's arguments and call live in one module: `build`, `datasets` (info, verify, view) and
`tools` (demo, bench)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..formats import FastpackError
from .append import add_append
from .build import add_build
from .datasets import add_info, add_verify, add_view
from .index import add_index
from .tools import add_bench, add_demo

Handler = Callable[[argparse.Namespace], int]
# A command whose reader went away (`fastpack info D | head`) exits as a shell reports it: 128 +
# SIGPIPE.
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastpack",
        description="Compile labeled images into tar shards with a memory-mapped index; read them.",
    )
    parser.add_argument("--version", action="version", version=f"fastpack {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (
        add_build,
        add_append,
        add_index,
        add_info,
        add_verify,
        add_view,
        add_demo,
        add_bench,
    ):
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help, --version and bad arguments
        return e.code if isinstance(e.code, int) else 2
    handler: Handler = args.handler
    try:
        return handler(args)
    except FastpackError as e:
        print(f"fastpack: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fastpack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout has gone: say nothing more, and keep Python's flush at exit from
        # failing again on the same pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
