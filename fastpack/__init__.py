"""fastpack.fastpack"""

__all__: list[str] = []
