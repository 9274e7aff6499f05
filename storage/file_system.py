"""Which file system a path is on, and whether reads from it pay a network round trip.

The type comes from the kernel's table of mounts (`/proc/self/mountinfo`, Linux): the mount
whose mount point is the longest prefix of the path's real path. Network file systems (NFS,
SMB, Lustre, GPFS, BeeGFS, CephFS, ...) and every FUSE file system (sshfs, s3fs, gcsfuse,
Mountpoint, rclone, JuiceFS, ...) count as remote: each of their reads that misses the page cache
waits for a request to a server, and a page fault on a memory map waits for one per few pages.
Where the table cannot be read (another OS) a path counts as local.
"""

from __future__ import annotations

import os
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
NETWORK_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "9p",
        "lustre",
        "gpfs",
        "beegfs",
        "ceph",
        "glusterfs",
        "ocfs2",
        "gfs2",
        "panfs",
        "wekafs",
        "pvfs2",
        "orangefs",
        "davfs",
        "fuse",  # a FUSE file system with no subtype
    }
)
LOCAL_FUSE_TYPES = frozenset({"fuse.lxcfs", "fuse.portal", "fuse.gvfsd-fuse"})


def _unescape(field: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes are written as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """`(mount point, file system type)` of each line of a mountinfo table, in its order."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            after = fields.index("-")  # optional fields end with a lone "-"
            mounts.append((_unescape(fields[4]), fields[after + 1]))
        except (ValueError, IndexError):
            continue
    return mounts


def file_system_type(path: str | os.PathLike[str], mountinfo: str | None = None) -> str:
    """The type of the file system `path` is on (`ext4`, `nfs4`, `fuse.sshfs`, ...), `""` when
    unknown. `mountinfo`: the table's text (default: this process's)."""
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text()
        except OSError:
            return ""
    real = os.path.realpath(path)
    found, depth = "", -1
    for point, kind in parse_mountinfo(mountinfo):  # a later mount over the same point wins
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= depth:
            found, depth = kind, len(point)
    return found


def is_remote(kind: str) -> bool:
    """Whether a file system of type `kind` serves its reads over a network (or another
    process, for FUSE)."""
    return kind in NETWORK_TYPES or (kind.startswith("fuse.") and kind not in LOCAL_FUSE_TYPES)


def on_remote_file_system(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is on a network or FUSE file system (see the module docstring)."""
    return is_remote(file_system_type(path))
