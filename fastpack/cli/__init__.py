"""The `fastpack` command (`main`), one module per group of commands."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
