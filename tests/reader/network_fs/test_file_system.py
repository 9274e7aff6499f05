"""Which file system a path is on, and the read method `io="auto"` picks for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastpack.reader.shard_files import resolve_io
from fastpack.storage.file_system import file_system_type, is_remote, parse_mountinfo

from tests.network_fs import NetworkFs

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 0:30 / / rw,relatime - ext4 /dev/vda rw
40 27 0:40 / /data rw,relatime shared:5 - nfs4 server:/export rw,vers=4.2
41 40 0:41 / /data/local rw,relatime - xfs /dev/vdb rw
42 27 0:42 / /mnt/my\\040photos rw,nosuid - fuse.sshfs root@host:/photos rw
43 27 0:43 / /sys/fs/cgroup/lxc rw - fuse.lxcfs lxcfs rw
"""


def test_mountinfo_is_parsed_with_optional_fields_and_escapes() -> None:
    mounts = parse_mountinfo(MOUNTINFO + "a line that is not a mount\n")
    assert ("/data", "nfs4") in mounts
    assert ("/mnt/my photos", "fuse.sshfs") in mounts
    assert len(mounts) == 6


@pytest.mark.parametrize(
    ("path", "kind", "remote"),
    [
        ("/data/train/shards/000000.tar", "nfs4", True),
        ("/data", "nfs4", True),
        ("/data/local/ds", "xfs", False),  # the longest mount point wins
        ("/datalake/ds", "ext4", False),  # a prefix of the name is not a parent directory
        ("/mnt/my photos/ds", "fuse.sshfs", True),
        ("/sys/fs/cgroup/lxc/x", "fuse.lxcfs", False),
        ("/home/me/ds", "ext4", False),
    ],
)
def test_the_longest_mount_point_gives_the_type(path: str, kind: str, remote: bool) -> None:
    found = file_system_type(path, MOUNTINFO)
    assert found == kind
    assert is_remote(found) is remote


def test_auto_maps_a_local_disk_and_preads_a_mounted_network_file_system(
    network_fs: NetworkFs, tmp_path: Path
) -> None:
    assert file_system_type(network_fs.mount) == "fuse.sshfs"
    assert resolve_io("auto", network_fs.mount) == "pread"
    assert resolve_io("auto", tmp_path) == (
        "pread" if is_remote(file_system_type(tmp_path)) else "mmap"
    )
    assert resolve_io("mmap", network_fs.mount) == "mmap"  # a choice is kept
    with pytest.raises(ValueError, match=r"io must be one of \('auto', 'mmap', 'pread'\)"):
        resolve_io("direct", tmp_path)
