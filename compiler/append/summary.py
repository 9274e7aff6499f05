"""What an append returns: the version it published, what it added and the dataset's size."""

from __future__ import annotations

from dataclasses import dataclass

from fastpack.formats import Manifest

from ..options import MAX_LISTED_NOTES, MIN_RATE_SECONDS, BuildSummary


@dataclass(frozen=True, kw_only=True)
class AppendSummary:
    dataset: str  # the directory or URL
    version: int  # the dataset version published
    added: BuildSummary  # the appended inputs, samples and shards
    samples: int  # the dataset's samples, in every version's shards
    shards: int
    rejects: str | None  # the version's rejects file (cumulative), where there is one
    notes: tuple[str, ...] = ()
    duplicates: int = 0  # new inputs left out as duplicates (skip_duplicates)
    # (source, key of the sample it duplicates) of those, in plan order, where known
    duplicate_lines: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls,
        dataset: str,
        manifest: Manifest,
        added: BuildSummary,
        notes: tuple[str, ...] = (),
        duplicates: tuple[int, tuple[tuple[str, str], ...]] = (0, ()),
    ) -> AppendSummary:
        return cls(
            dataset=dataset,
            version=manifest.dataset_version,
            added=added,
            samples=manifest.num_samples,
            shards=len(manifest.shards),
            rejects=manifest.rejects.name if manifest.rejects is not None else None,
            notes=notes,
            duplicates=duplicates[0],
            duplicate_lines=duplicates[1],
        )

    def _duplicate_lines(self) -> str:
        if not self.duplicates:
            return ""
        shown = self.duplicate_lines[:MAX_LISTED_NOTES]
        lines = [
            f"\n{self.duplicates:,} inputs left out as duplicates (stats.duplicates in the "
            "manifest)" + (":" if shown else "")
        ]
        lines += [f"\n  {path} -> {key}" for path, key in shown]
        if shown and self.duplicates > len(shown):
            lines.append(f"\n  ... and {self.duplicates - len(shown):,} more")
        return "".join(lines)

    def format(self) -> str:
        a = self.added
        rates = ""
        if a.seconds >= MIN_RATE_SECONDS:
            rates = f" ({a.inputs / a.seconds:,.0f} inputs/s)"
        rejected = f", {a.rejected:,} rejected" + (
            f" (listed in {self.rejects})" if a.rejected and self.rejects else ""
        )
        return (
            f"version {self.version} of {self.dataset}: {a.samples:,} samples added from "
            f"{a.inputs:,} inputs in {a.shards:,} new shards ({a.bytes / 1e6:,.1f} MB) in "
            f"{a.seconds:.1f} s{rates}\n{a.converted:,} converted to RGB JPEG{rejected}\n"
            f"the dataset now holds {self.samples:,} samples in {self.shards:,} shards"
            + self._duplicate_lines()
            + "".join(f"\n{line}" for line in self.notes)
        )
