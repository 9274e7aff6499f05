"""The build's private directory inside its output: plan, shard records and index parts.

It exists only while a build is unfinished (a resume reads it) and is never part of a dataset.
"""

from __future__ import annotations

BUILD_DIR = ".fastpack-build"
