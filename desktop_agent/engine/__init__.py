"""The engine: the query loop, tool scheduling and ``run_tool_use`` (the six steps of one call).

Above ``tools``, ``permissions`` and ``model``: it composes them; nothing below imports it.
"""
