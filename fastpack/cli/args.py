"""Argument types that more than one command uses: a number in bounds."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from e
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: expected {bounds}")
        return value

    return parse


def float_above(minimum: float, *, or_equal: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"invalid number {text!r}") from e
        if not (value >= minimum if or_equal else value > minimum):
            expected = f"{'>=' if or_equal else '>'} {minimum:g}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: expected {expected}")
        return value

    return parse
