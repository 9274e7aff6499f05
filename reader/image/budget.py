"""A reader's pixel budget: the one a Dataset is given, or its transform's.

A transform that decodes (`RandomResizedCrop`, `CenterCrop`) checks its own `pixel_budget`
(`DecodeOptions`); the Dataset around it checks the same one for the decodes it does itself (an
image without a transform, a PNG field), so that one number bounds them all.
"""

from __future__ import annotations

from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET, check_budget_value

from .decode import DecodeOptions


def transform_budget(transform: object) -> int | None:
    """The pixel budget `transform` checks itself (its `options.pixel_budget`), None if none."""
    options = getattr(transform, "options", None)
    return options.pixel_budget if isinstance(options, DecodeOptions) else None


def resolve_budget(budget: int | None, transform: object) -> int:
    """The budget of a reader given `budget` (None: the transform's, else the default) and
    `transform`; ValueError for a budget that is not an int >= 1, or one that differs from the
    transform's own."""
    own = transform_budget(transform)
    if budget is None:
        return DEFAULT_PIXEL_BUDGET if own is None else own
    budget = check_budget_value(budget, "pixel_budget")
    if own is not None and own != budget:
        raise ValueError(
            f"pixel_budget={budget:,} differs from the transform's own ({own:,}), which its "
            f"decodes obey: give the transform the same (e.g. RandomResizedCrop(224, "
            f"pixel_budget={budget}))"
        )
    return budget
