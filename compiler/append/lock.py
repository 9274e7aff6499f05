"""`append.lock`: one append at a time per dataset.

A local dataset's lock is a file created with `O_CREAT | O_EXCL`; a dataset in an object store
gets a lock object written with a conditional put (`If-None-Match: *`), which the store refuses
when the object exists. A store that does not honour the condition writes it anyway: there the
lock is best effort (a look before the put), as the error says. The lock holds JSON
`{"host", "pid", "started", "version"}`. A lock whose process is gone (same host, no such pid)
is stale: a resume takes it over.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from fastpack.formats.layout import LOCK_NAME
from fastpack.storage import Location

from .errors import AppendError, AppendLockedError


@dataclass(frozen=True, kw_only=True)
class LockInfo:
    """Who holds a lock: host, process id, start (UTC, ISO 8601) and the version it makes."""

    host: str
    pid: int
    started: str
    version: int

    @classmethod
    def mine(cls, version: int) -> LockInfo:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return cls(host=socket.gethostname(), pid=os.getpid(), started=started, version=version)

    def to_bytes(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes, where: str) -> LockInfo:
        try:
            found: Any = json.loads(data)
            return cls(
                host=str(found["host"]),
                pid=int(found["pid"]),
                started=str(found["started"]),
                version=int(found["version"]),
            )
        except (ValueError, TypeError, KeyError) as e:
            raise AppendError(
                f"{where}: unreadable append lock ({e!r}); if no append runs on this dataset, "
                f"remove {where}"
            ) from e

    def describe(self) -> str:
        return f"host {self.host}, pid {self.pid}, since {self.started}"

    @property
    def stale(self) -> bool:
        """Whether the holder is gone: a process of this host that no longer exists."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # another user's live process
            return False
        return False


def held_error(where: str, held: LockInfo, note: str = "") -> AppendLockedError:
    """The refusal of an append while `held` holds the lock at `where`."""
    if held.stale:
        advice = (
            f"that process is gone: finish its append with `fastpack append --resume` "
            f"(resume=True) on {held.host}"
        )
    else:
        advice = (
            "wait for it to end; if it was killed on another machine, finish its append with "
            f"`fastpack append --resume` there, or remove {where} once no append runs"
        )
    return AppendLockedError(
        f"{where}: another append (of version {held.version}) holds this dataset: "
        f"{held.describe()}; {advice}{note}"
    )


class AppendLock(Protocol):
    where: str

    def acquire(self, version: int, *, resume: bool) -> LockInfo | None:
        """Take the lock for an append of `version`; the stale lock taken over (a resume),
        else None. AppendLockedError naming the holder where another holds it."""
        ...

    def held(self) -> LockInfo | None:
        """The lock's holder, None if there is no lock."""
        ...

    def release(self) -> None: ...


class FileLock:
    """The lock file of a local dataset."""

    def __init__(self, root: Path) -> None:
        self.path = root / LOCK_NAME
        self.where = str(self.path)

    def held(self) -> LockInfo | None:
        try:
            return LockInfo.parse(self.path.read_bytes(), self.where)
        except FileNotFoundError:
            return None

    def acquire(self, version: int, *, resume: bool) -> LockInfo | None:
        mine = LockInfo.mine(version).to_bytes()
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            held = self.held()
            if held is None:  # released meanwhile
                return self.acquire(version, resume=resume)
            if not (resume and held.stale):
                raise held_error(self.where, held) from None
            tmp = self.path.with_name(f"{LOCK_NAME}.{socket.gethostname()}.{os.getpid()}.tmp")
            tmp.write_bytes(mine)
            os.replace(tmp, self.path)
            return held
        with os.fdopen(fd, "wb") as file:
            file.write(mine)
            file.flush()
            os.fsync(file.fileno())
        return None

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


BEST_EFFORT = (
    " (this store ignores conditional writes, so the lock is best effort: two appends started "
    "at the same moment may both take it)"
)


class ObjectLock:
    """The lock object of a dataset in an object store."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.where = location.url_of(LOCK_NAME)
        self.conditional = True  # until the store shows it ignores `If-None-Match`

    def held(self) -> LockInfo | None:
        if self.location.size(LOCK_NAME) is None:
            return None
        return LockInfo.parse(self.location.read_bytes(LOCK_NAME), self.where)

    def _put(self, data: bytes, *, create: bool) -> bool:
        """Write the lock object; with `create`, only if there is none: False if there was."""
        path = self.location.path(LOCK_NAME)
        if not create:
            self.location.fs.pipe_file(path, data)
            return True
        try:
            self.location.fs.pipe_file(path, data, mode="create")
        except (OSError, NotImplementedError, TypeError, ValueError):
            # S3 answers 412 PreconditionFailed (s3fs: an OSError) where the object exists
            if self.location.size(LOCK_NAME) is not None:
                return False
            self.conditional = False  # the store refused the condition itself
            self.location.fs.pipe_file(path, data)
        return True

    def acquire(self, version: int, *, resume: bool) -> LockInfo | None:
        mine = LockInfo.mine(version)
        note = "" if self.conditional else BEST_EFFORT
        held = self.held()
        if held is None:
            if self._put(mine.to_bytes(), create=True) and self.held() == mine:
                return None
            held = self.held()
            if held is None:
                raise AppendLockedError(f"{self.where}: the lock came and went; try again")
            raise held_error(self.where, held, note)
        if not (resume and held.stale):
            raise held_error(self.where, held, note)
        self._put(mine.to_bytes(), create=False)
        return held

    def release(self) -> None:
        self.location.remove(LOCK_NAME)
