"""The blocks of a page that figures fill: `<!-- figure: NAME -->` ... `<!-- /figure: NAME -->`."""

from __future__ import annotations

import re
from collections.abc import Callable

_BLOCK = re.compile(
    r"(?P<open><!-- figure: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- /figure: (?P=name) -->)",
    re.DOTALL,
)


def names(text: str) -> list[str]:
    """The figures a page holds, in order."""
    return [block["name"] for block in _BLOCK.finditer(text)]


def bodies(text: str) -> dict[str, str]:
    return {block["name"]: block["body"] for block in _BLOCK.finditer(text)}


def fill(text: str, render: Callable[[str], str]) -> str:
    """`text` with each block's body replaced by `render(name)` (which ends in a newline)."""
    return _BLOCK.sub(lambda b: b["open"] + render(b["name"]) + b["close"], text)
