"""Text to token ids, before the graph: tokenizers in pure Python (they run in Pyodide as in CPython)."""

from scellis.text.wordpiece import Encoding, TokenizerError, WordPiece

__all__ = ["Encoding", "TokenizerError", "WordPiece"]
