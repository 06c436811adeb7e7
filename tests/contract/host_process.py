"""A host process for the contract suite's unix transport: ``python -m tests.contract.host_process SOCKET`` serves
``host.server.serve_connection`` on a Unix socket and prints ``ready`` once it listens (the background host's
own command, with its peer checks, is ``desktop-agent host``)."""

from __future__ import annotations

import asyncio
import os
import sys

from desktop_agent.host.server import Host, serve_connection


async def main(path: str) -> None:
    host = Host()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_connection(host, reader, writer, peer="test")

    server = await asyncio.start_unix_server(on_client, path, limit=256 * 1024 * 1024)
    os.chmod(path, 0o600)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
