"""Desktop Agent: a desktop coding agent whose every write is reviewed before it touches disk.

The package is layered: ``core`` (query loop, tool execution), ``tools`` (Read, Edit, ...),
``permissions`` (rules, modes, hooks, settings), ``session`` (JSONL transcripts, file history),
``model`` (Anthropic client) and ``ui`` (PySide6, the only package that imports Qt).
"""

__version__ = "0.1.0"
