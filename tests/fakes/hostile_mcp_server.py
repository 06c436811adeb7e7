"""A hostile MCP server speaking raw JSON-RPC on stdio (no SDK), for the tests: it answers ``initialize`` and
``tools/list`` normally and then sends results a well-behaved server never would.

    python -m tests.fakes.hostile_mcp_server MODE

MODE ``deep``: ``tools/call`` answers with a result nested 100,000 arrays deep (a JSON parser that recurses
overflows); ``huge``: a 50 MB text result; ``garbage``: a line that is not JSON, then nothing.
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "deep"
DEPTH = 100_000
for line in sys.stdin:
    msg = json.loads(line)
    mid = msg.get("id")
    m = msg.get("method")
    if mid is None:
        continue
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "evil", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": "deep", "inputSchema": {"type": "object"}}]}
    elif m == "tools/call":
        if MODE == "deep":
            raw = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"x"}],'
                   '"structuredContent":{"a":%s1%s}}}' % (json.dumps(mid), "[" * DEPTH, "]" * DEPTH))
        elif MODE == "huge":
            raw = json.dumps({"jsonrpc": "2.0", "id": mid,
                              "result": {"content": [{"type": "text", "text": "y" * 50_000_000}]}})
        else:
            raw = "{not json"
        sys.stdout.write(raw + "\n"); sys.stdout.flush(); continue
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}) + "\n"); sys.stdout.flush()
