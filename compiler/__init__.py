"""fastpack.compiler"""

__all__: list[str] = []
