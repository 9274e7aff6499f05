"""fastpack.reader"""

__all__: list[str] = []
