"""The engine core: query loop, tool execution pipeline, orchestration, events and context."""
