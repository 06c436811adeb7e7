"""MCP: servers from ``.mcp.json``, the user's settings and ``--mcp-config`` (``config``), their
connections and their tools as ``mcp__<server>__<tool>`` (``client``)."""
