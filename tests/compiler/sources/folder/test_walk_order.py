"""`walk_order`: a listing in S3 key order or in folder order comes out in the order of a local
walk (paths by their tuples of parts), holding few names, with few probes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastpack.compiler.sources.folder.walk_order import walk_order
from hypothesis import given, settings
from hypothesis import strategies as st

Order = Callable[[str], Any]
KEY_ORDER: Order = str  # S3: UTF-8 byte order of whole keys (code point order of str)


def folder_order(name: str) -> tuple[str, ...]:  # SeaweedFS, and a local walk
    return tuple(name.split("/"))


class Store:
    """Objects listed in `order`, as `walk_order` asks for them; counts what it does."""

    def __init__(self, names: list[str], order: Order = KEY_ORDER) -> None:
        self.order = order
        self.names = sorted(names, key=order)
        self.listed = self.probes = self.held = 0
        self.emitted = 0

    def list_from(self, folder: str, start_after: str) -> Iterator[tuple[str, int]]:
        after = self.order(start_after) if start_after else None
        for name in self.names:
            if name.startswith(folder) and (after is None or self.order(name) > after):
                self.listed += 1
                self.held = max(self.held, self.listed - self.emitted)
                yield name, len(name)

    def probe(self, folder: str) -> bool:
        self.probes += 1
        return any(name.startswith(folder) for name in self.names)

    def walk(
        self, prefix: str = "", hold: int | None = None, keep: Callable[[str], bool] = bool
    ) -> list[str]:
        out = []
        for name, size in walk_order(self.list_from, self.probe, prefix, keep=keep, hold=hold):
            assert size == len(name)
            self.emitted += 1
            out.append(name)
        return out


def walk_sorted(names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: n.split("/"))


# names of one to three parts made of the characters around "/" in code point order
PART = st.text(alphabet=[" ", "-", ".", "0", "a", "b", "\u00e9"], min_size=1, max_size=3)
NAME = st.lists(PART, min_size=1, max_size=3).map("/".join)


def a_tree(names: list[str]) -> list[str]:
    """`names` without those that would be a folder of another (no file can be both)."""
    kept: list[str] = []
    for name in names:
        if not any(k.startswith(name + "/") or name.startswith(k + "/") for k in kept):
            kept.append(name)
    return sorted(set(kept))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(NAME, min_size=1, max_size=40).map(a_tree),
    st.sampled_from([KEY_ORDER, folder_order]),
    st.sampled_from([1, 2, 5, None]),
)
def test_any_tree_comes_out_in_walk_order(names: list[str], order: Order, hold: int | None) -> None:
    assert Store(names, order).walk(hold=hold) == walk_sorted(names)


def test_the_orders_differ_where_a_name_goes_on_below_slash() -> None:
    names = ["cat/a.b.jpg", "cat/a/x.jpg", "cat/a-1/y.jpg", "cat/a b.jpg", "cat/a/b.jpg"]
    store = Store(names)
    assert store.names == [
        "cat/a b.jpg",
        "cat/a-1/y.jpg",
        "cat/a.b.jpg",
        "cat/a/b.jpg",
        "cat/a/x.jpg",
    ]
    assert store.walk("cat/") == [
        "cat/a/b.jpg",
        "cat/a/x.jpg",
        "cat/a b.jpg",
        "cat/a-1/y.jpg",
        "cat/a.b.jpg",
    ]
    assert store.probes == 0  # few names held: no probe


def test_keep_filters_names_and_a_prefix_limits_the_walk() -> None:
    names = ["c/x.jpg", "c/.hidden/y.jpg", "c/n.txt", "d/z.jpg"]
    store = Store(names)
    assert store.walk("c/", keep=lambda n: n.endswith(".jpg") and "/." not in n) == ["c/x.jpg"]


@pytest.mark.parametrize("order", [KEY_ORDER, folder_order], ids=["key", "folder"])
def test_few_names_are_held_and_few_probes_made(order: Order) -> None:
    """A folder `b` beside 3000 files `b.NNNN.jpg` (in key order all 3000 come before `b/`),
    and 3000 `frame-NNNN.jpg` (each waits on a folder `frame` that is not there)."""
    names = [f"b/{i}.jpg" for i in range(3)] + [f"b.{i:04d}.jpg" for i in range(3000)]
    names += [f"frame-{i:04d}.jpg" for i in range(3000)]
    store = Store(names, order)
    assert store.walk(hold=16) == walk_sorted(names)
    assert store.held <= 2 * 16 + 3
    assert store.probes <= 2
    if order is KEY_ORDER:  # the folder walked early is skipped, after its first name
        assert store.listed == len(names) + 1


def test_without_a_bound_everything_may_be_held() -> None:
    names = [f"b.{i:04d}.jpg" for i in range(300)] + ["b/x.jpg"]
    store = Store(names)
    assert store.walk(hold=10_000) == walk_sorted(names)
    assert (store.held, store.probes) == (len(names), 0)


def test_a_listing_in_neither_order_is_an_error() -> None:
    store = Store([])
    store.names = ["b.jpg", "c.jpg", "a.jpg"]  # `b.jpg` is out before `a.jpg` comes
    with pytest.raises(ValueError, match=r"gave 'a\.jpg' after 'b\.jpg': it is in neither"):
        store.walk()
