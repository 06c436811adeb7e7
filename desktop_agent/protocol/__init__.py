"""The stdio protocol as types: stream-json data lines (``stream_json``) and control messages (``control``).

Both the CLI server and ``client.subprocess`` speak it; ``decode(line)`` parses any line, ``encode(model)``
writes one. No engine imports: this floor is vocabulary for the wire only.
"""

from desktop_agent.protocol._wire import ProtocolError, WireModel
from desktop_agent.protocol.stream_json import decode, encode

__all__ = ["ProtocolError", "WireModel", "decode", "encode"]
