"""Object names in the order of a local folder walk, from a listing in the store's order.

`folder.scan_folder` walks a tree depth first, each folder's entries sorted by name: paths come
in the order of their tuples of parts (`a/x.jpg` < `a.b.jpg`, since `a` < `a.b.jpg`). An S3
listing comes in the UTF-8 byte order of whole keys, where `/` is a character that sorts after
`` !"#$%&'()*+,-.``: there `a.b.jpg` comes before `a/x.jpg`. (SeaweedFS lists in the walk's
order already.)

`walk_order` turns either order into the walk's, holding few names. A name is held until no
name still to come can precede it. Past the latest name `k`, a name that precedes a held one
can still come only from a folder `k[:i]` with `k[i] < "/"` (a candidate: its keys
`k[:i] + "/..."` sort after `k`); the shortest candidate not yet settled bounds what can come.
When more than `hold` names are held, that candidate is probed (a listing of one key): a folder
that is not there is settled; one that is there is walked at once, its names put out, and
skipped when the listing reaches it (the listing restarts after its last name). A candidate is
also settled once the listing has shown a name inside it (a store in walk order). So each
folder level holds about `hold` names, and a probe costs one request per `hold` names at most.

The output is checked: a name that does not come after the one before it in the walk's order
(from a listing in neither order) raises `ValueError`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

Entry = tuple[str, int]  # (name, size)
# (folder, start_after) -> the entries under `folder` ("" or ending in "/") after the name
# `start_after`, in the store's order; names are relative to one root throughout
ListFrom = Callable[[str, str], Iterator[Entry]]
Probe = Callable[[str], bool]  # whether any object lies under the folder (ending in "/")
Keep = Callable[[str], bool]

HOLD = 4096
_Held = tuple[tuple[str, ...], str, int]


@dataclass
class _Settled:
    """A candidate folder whose place is known: `walked` (with the greatest name listed under
    it, and whether the listing has restarted after it) or not (absent, or listed in place)."""

    walked: bool = False
    last: str = ""
    restarted: bool = False


_IN_PLACE = _Settled()  # shared: only walked folders change


def _parts(name: str) -> tuple[str, ...]:
    return tuple(name.split("/"))


def _release(held: list[_Held], floor: tuple[str, ...]) -> Iterator[Entry]:
    while held and held[0][0] < floor:
        _, name, size = heapq.heappop(held)
        yield name, size


class _Walk:
    def __init__(self, list_from: ListFrom, probe: Probe, keep: Keep, hold: int) -> None:
        self._list_from, self._probe, self._keep, self._hold = list_from, probe, keep, hold

    def folder(self, prefix: str) -> Generator[Entry, None, str]:
        """The kept entries under `prefix` in walk order; returns the greatest name listed."""
        held: list[_Held] = []
        settled: dict[str, _Settled] = {}
        greatest, start_after = "", ""
        while True:
            restart = None
            for name, size in self._list_from(prefix, start_after):
                greatest = max(greatest, name)
                for folder in [f for f in settled if not name.startswith(f)]:
                    del settled[folder]  # no name to come can be in it or a candidate of it
                walked = next(
                    (s for f, s in settled.items() if s.walked and name.startswith(f + "/")), None
                )
                if walked is not None:  # a folder already put out
                    if not walked.restarted:
                        walked.restarted, restart = True, walked.last
                        break
                    continue
                for i in range(len(prefix), len(name)):
                    if name[i] == "/" and name[:i] not in settled:
                        settled[name[:i]] = _IN_PLACE
                if self._keep(name):
                    heapq.heappush(held, (_parts(name), name, size))
                greatest = max(greatest, (yield from self._settle(held, settled, name, prefix)))
            if restart is None:
                break
            start_after = restart
        while held:
            _, name, size = heapq.heappop(held)
            yield name, size
        return greatest

    def _settle(
        self, held: list[_Held], settled: dict[str, _Settled], name: str, prefix: str
    ) -> Generator[Entry, None, str]:
        """Put out the held entries that nothing to come can precede, probing candidates while
        more than `hold` are held; returns the greatest name of the folders walked."""
        greatest = ""
        yield from _release(held, self._floor(name, prefix, settled))
        while len(held) > self._hold:
            candidate = self._candidate(name, prefix, settled)
            if candidate is None:
                break
            found = _Settled()
            if self._probe(candidate + "/"):
                found.walked, found.last = True, (yield from self.folder(candidate + "/"))
                greatest = max(greatest, found.last)
            settled[candidate] = found
            yield from _release(held, self._floor(name, prefix, settled))
        return greatest

    @staticmethod
    def _candidate(name: str, prefix: str, settled: dict[str, _Settled]) -> str | None:
        """The shortest folder not yet settled that may hold names preceding `name`."""
        for i in range(len(prefix), len(name)):
            if name[i] < "/" and name[:i] not in settled:
                return name[:i]
        return None

    @classmethod
    def _floor(cls, name: str, prefix: str, settled: dict[str, _Settled]) -> tuple[str, ...]:
        """A bound below every name still to come, in walk order."""
        candidate = cls._candidate(name, prefix, settled)
        return _parts(name if candidate is None else candidate)


def walk_order(
    list_from: ListFrom,
    probe: Probe,
    prefix: str = "",
    *,
    keep: Keep = lambda name: True,
    hold: int | None = None,
) -> Iterator[Entry]:
    """The entries under the folder `prefix` ("" or ending in "/") whose names `keep` accepts,
    in the order of a local walk; `hold` (default `HOLD`) bounds the names held per level."""
    previous: tuple[str, ...] | None = None
    for name, size in _Walk(list_from, probe, keep, hold or HOLD).folder(prefix):
        parts = _parts(name)
        if previous is not None and parts <= previous:
            raise ValueError(
                f"the listing gave {name!r} after {'/'.join(previous)!r}: it is in neither key "
                "order nor folder order"
            )
        previous = parts
        yield name, size
