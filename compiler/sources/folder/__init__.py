"""ImageFolder sources: `root/<class>/**/<image>` on a local disk (`local`) or under an object
store prefix (`url`, walked page by page in the local walk's order, `walk_order`)."""

from .local import IMAGE_EXTENSIONS, scan_folder
from .url import scan_folder_url

__all__ = ["IMAGE_EXTENSIONS", "scan_folder", "scan_folder_url"]
