"""The ImageFolder source format: a local directory (`local`) or an object store prefix (`url`)."""

from __future__ import annotations

from pathlib import Path

from fastpack.storage import is_url

from ..scan import SourceOptions, SourceScan
from .local import scan_folder
from .url import scan_folder_url


class FolderSource:
    """`root/<class>/**/<image>`: the fallback for a directory that is no other kind."""

    kind = "folder"
    description = "an ImageFolder directory, or an object store prefix (s3://bucket/prefix/)"
    suffixes: tuple[str, ...] = ()
    directory_files: str | None = None
    file_only = False
    shard_urls = False
    member_images = False

    def names_file(self, name: str) -> bool:
        return False

    def open(
        self,
        source: str,
        work_dir: Path | None,
        options: SourceOptions | None,
    ) -> SourceScan:
        return scan_folder_url(source) if is_url(source) else scan_folder(Path(source))


FOLDER = FolderSource()
