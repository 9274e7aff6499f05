"""Indexing one webdataset tar: its samples read once (`scan_tar`), each checked
(`sample_check`), the kept ones' members located, and the shard's digest taken meanwhile."""

from __future__ import annotations

from typing import BinaryIO

from .indexer import ShardIndexer
from .job import JobSettings, ShardSource
from .scan_tar import TarCut, TarSample, tar_samples
from .shard_rows import Located, ShardRows


def _members(sample: TarSample, settings: JobSettings) -> tuple[str | None, dict[str, str]]:
    """The extension of the sample's image (None: it has none) and the extension behind each
    other field of the schema it holds (field -> extension)."""
    layout = settings.tar
    if layout is None:
        raise ValueError("a tar job needs a tar layout")
    image = next((e for e in layout.images if e in sample.members), None)
    feeds = {layout.fields[e]: e for e in sample.members if e in layout.fields}
    if layout.label is not None and layout.label in sample.members:
        label_field = settings.schema.label_field
        if label_field is not None:
            feeds[label_field] = layout.label
    return image, feeds


class _TarIndexer(ShardIndexer):
    def __init__(self, source: ShardSource, settings: JobSettings) -> None:
        super().__init__(source, settings, settings.classes is None)
        layout = settings.tar
        if layout is None:
            raise ValueError("a tar job needs a tar layout")
        self.wanted = {*layout.images, *layout.fields, *([layout.label] if layout.label else [])}

    def _scan(self, stream: BinaryIO) -> None:
        # the end-of-archive blocks and what follows them are left to `run`
        for found in tar_samples(stream, self.wanted.__contains__):
            if isinstance(found, TarCut):
                self._cut(found)
                break
            self.rows.inputs += 1
            self._sample(found)

    def _path(self, key: str) -> str:
        return f"{self.source.name}#{key}"

    def _cut(self, cut: TarCut) -> None:
        """The shard ends early: the sample in progress is rejected, or the shard's tail."""
        reason = f"{cut.reason}; the rest of the shard is left out"
        self.rows.notes.append(f"{self.source.url}: {reason}")
        if cut.sample is not None:
            self.rows.inputs += 1
            self.rows.reject(self._path(cut.sample.key), None, reason)
        else:
            self.rows.reject(self.source.name, None, reason)

    def _sample(self, sample: TarSample) -> None:
        path = self._path(sample.key)
        if sample.repeated:
            self.rows.reject(path, None, f"two members of extension {sample.repeated[0]!r}")
            return
        image, feeds = _members(sample, self.settings)
        image_field = self.schema.image_field
        if image is None:
            images = ", ".join(self.settings.tar.images) if self.settings.tar else ""
            members = sorted(sample.members)
            self.rows.reject(path, None, f"no image member ({images}); members: {members}")
            return
        if image_field is not None:
            feeds[image_field] = image
        if any(" " in sample.members[e].name for e in feeds.values()):
            reason = "a member name with a space, which DALI's index cannot hold"
            self.rows.reject(path, None, reason)
            return
        data = {f: sample.members[e].data or b"" for f, e in feeds.items()}
        label = self._label(path, data)
        if label is None:
            return
        refused = self.checker.reject(data)
        if refused is not None:
            self.rows.reject(path, refused.field, refused.reason)
            return
        located = {f: Located(sample.members[e].offset, data[f]) for f, e in feeds.items()}
        groups = [
            f"{feeds[f]} {sample.members[feeds[f]].offset} {sample.members[feeds[f]].size} "
            f"{sample.members[feeds[f]].name}"
            for f in self.schema.names
            if f in feeds
        ]
        self.rows.add(sample.key, path, label, located, " ".join(groups))

    def _label(self, path: str, data: dict[str, bytes]) -> int | None:
        """The sample's label (-1: the schema has none); None when it is rejected for it."""
        name = self.schema.label_field
        if name is None:
            return -1
        member = data.get(name)
        if member is None:
            self.rows.reject(path, name, "missing (a required field)")
            return None
        text = member.decode("utf-8", "replace").strip()
        if not text:
            self.rows.reject(path, name, "an empty label member")
            return None
        return self._class_label(path, name, text)


def index_tar(source: ShardSource, settings: JobSettings) -> ShardRows:
    """The rows of the tar `source` (labels as texts' numbers unless `settings.classes`)."""
    return _TarIndexer(source, settings).run()
