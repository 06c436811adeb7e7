"""MCP servers at run time: one connection per server over the official SDK, and its tools as ``Tool``s.

``McpManager`` owns the connections of a session. A server starts **lazily** — the first time the
session builds its tool list (before the first request), all configured servers start concurrently,
each within ``MCP_TIMEOUT`` ms (default 30 000, the reference's variable). A server that fails to start,
dies, or times out is ``failed`` with its last error (the tail of its stderr for a stdio server);
its tools are then left out of the request and a call to one of them gets an error result that
says so. A crashed server is **restarted** on the next call to it (at most ``MAX_RESTARTS`` times a
session); the call that saw the crash is not retried (it may have had effects).

Each connection lives in a task of its own, because the SDK's ``Client`` is an anyio context manager
that must be entered and left in one task; calls are made from the tool's task through the client's
streams. ``status()`` is what the window's Servers view and the CLI's ``system/init`` ``mcp_servers``
show: name, state, transport, tools, last error; ``host_status()`` the same as a host's ``mcp_status`` shapes it (the
SDK's ``McpServerStatus``: server info, tool descriptions, the configuration without env or headers).
A host may switch a server off and on (``set_enabled``: a ``disabled`` server is stopped and offers no tools) and
restart it (``reconnect``).

``McpTool`` is an MCP tool seen through the six steps: name ``mcp__<server>__<tool>``, the server's
description and input schema (validated with ``jsonschema``; errors read as our InputValidationError),
``permission_target`` → ``generic`` (asks by default; rules ``mcp__server__tool`` and ``mcp__server``
allow or deny it), read-only and concurrency-safe only when the server marks it ``readOnlyHint``.
Results map to text and image blocks; ``isError`` to an error result. ``is_mcp`` makes the engine run
PostToolUse hooks before the mapping (SPEC §3.11), so a hook's ``updatedMCPToolOutput`` replaces the output.
A listed tool whose name would make rules ambiguous (``__`` in it, or two names alike once normalised) is not
offered (``usable_tools``; ``status()`` lists it under ``refused_tools``).

The ``mcp`` package (~1 s of imports) is imported only when a server is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import ToolError
from desktop_agent.mcp.config import McpServerConfig, normalize_name
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import Tool, ToolResult
from desktop_agent.protocol.control import McpServerStatusInfo, McpToolInfo

State = Literal["pending", "connecting", "connected", "failed", "disabled"]
MAX_RESTARTS = 3
MAX_DESCRIPTION = 2048


def _ms_env(name: str, default_ms: float) -> float:
    try:
        value = float(os.environ.get(name) or default_ms)
    except ValueError:
        value = default_ms
    return max(0.1, value / 1000)


class McpConnection:
    """One server: start, list tools, call, restart after a crash, close."""

    def __init__(self, cfg: McpServerConfig):
        self.cfg = cfg
        self.state: State = "failed" if cfg.error else "pending"
        self.unreadable = ""  # why the last message from the server could not be read
        self.error: str | None = cfg.error
        self.tools: list[dict[str, Any]] = []
        # tools the server lists that are not offered (``usable_tools``): (name as listed, why)
        self.refused_tools: list[tuple[str, str]] = []
        self.server_info: dict[str, str] | None = None  # the server's name and version, once connected
        self.restarts = 0
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._errlog: Any = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.cfg.name

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.state, "transport": self.cfg.transport,
                "source": self.cfg.source, "tools": [t.get("name", "") for t in self.tools],
                "error": self.error, "restarts": self.restarts,
                **({"refused_tools": [f"{n}: {why}" for n, why in self.refused_tools]} if self.refused_tools else {})}

    def host_status(self) -> McpServerStatusInfo:
        """The server as a host's ``mcp_status`` shows it (the SDK's ``McpServerStatus``): ``connecting`` reads
        ``pending``; the configuration without ``env`` or ``headers``, which may hold credentials."""
        cfg = self.cfg
        config: dict[str, Any] = ({"type": "http", "url": cfg.url} if cfg.transport == "http"
                                  else {"type": "stdio", "command": cfg.command, "args": list(cfg.args)})
        tools = [McpToolInfo(name=str(t.get("name", "")), description=t.get("description"),
                             annotations=_annotations(t.get("annotations"))) for t in self.tools]
        scope = _scope(cfg.source)
        return McpServerStatusInfo(
            name=self.name, status="pending" if self.state == "connecting" else self.state,
            serverInfo=self.server_info, error=self.error if self.state == "failed" else None,
            config=None if cfg.error else config, scope=scope, source=scope,
            tools=tools if self.state == "connected" else [], transport=cfg.transport, restarts=self.restarts)

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [ln for ln in self._errlog.read().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return "\n".join(lines[-5:])[-800:]

    def _transport(self) -> Any:
        return _readable_only(self, self._raw_transport())

    def _raw_transport(self) -> Any:
        if self.cfg.transport == "http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            return streamable_http_client(self.cfg.url, http_client=create_mcp_http_client(headers=self.cfg.headers))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if self._errlog is None:
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        params = StdioServerParameters(command=self.cfg.command, args=self.cfg.args, env=self.cfg.env or None,
                                       cwd=self.cfg.cwd)
        return stdio_client(params, errlog=self._errlog)

    async def _run(self) -> None:
        from mcp import Client

        try:
            async with Client(self._transport()) as client:
                self.server_info = _server_info(client)
                tools: list[dict[str, Any]] = []
                cursor = None
                while True:
                    listing = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
                    tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listing.tools]
                    cursor = listing.next_cursor
                    if not cursor:
                        break
                tools, self.refused_tools = usable_tools(tools)
                self.tools, self._client, self.state, self.error = tools, client, "connected", None
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # ExceptionGroups from anyio task groups included
            self._fail(exc)
        finally:
            self._client = None
            if self.state in ("connecting", "connected") and not self._stop.is_set():
                self._fail(None)
            self._ready.set()

    def _fail(self, exc: BaseException | None) -> None:
        detail = _describe(exc) if exc is not None else "the server exited"
        if self.unreadable:
            detail = f"it sent a message that could not be read ({self.unreadable})"
        tail = self._stderr_tail()
        self.state = "failed"
        self.error = f"{detail}\n{tail}".strip() if tail and tail not in detail else detail

    async def start(self) -> None:
        """Connect (or reconnect) and wait until ready or failed, within MCP_TIMEOUT."""
        if self.cfg.error:
            return
        async with self._lock:
            if self.state == "connected":
                return
            await self._shutdown_task()
            self._ready.clear()
            self._stop.clear()
            self.state = "connecting"
            self.unreadable = ""
            self._task = asyncio.ensure_future(self._run())
            timeout = _ms_env("MCP_TIMEOUT", 30_000)
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                self.state = "failed"
                self.error = f"did not start within {timeout:g} s (MCP_TIMEOUT)"
                await self._shutdown_task()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """``tools/call``; the CallToolResult as wire JSON. Raises ToolError with a sentence for the model."""
        if self.state == "failed" and self.tools and self.restarts < MAX_RESTARTS and not self.cfg.error:
            self.restarts += 1  # it was up before: a crash; restart it for this call
            await self.start()
        if self.state != "connected" or self._client is None:
            raise ToolError(f"MCP server \"{self.name}\" is not available: {self.error or self.state}")
        timeout = _ms_env("MCP_TOOL_TIMEOUT", 600_000)
        try:
            async with asyncio.timeout(timeout):
                result = await self._client.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(f"MCP tool {tool} on server \"{self.name}\" timed out after {timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise
            if "closed" in str(exc).lower() or self._task is None or self._task.done():
                self._fail(exc)
                self._stop.set()
                raise ToolError(f"MCP server \"{self.name}\" stopped during the call ({self.error}). "
                                "It will be restarted on the next call.") from None
            raise ToolError(f"MCP tool {tool} on server \"{self.name}\" failed: {_describe(exc)}") from None
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")

    async def _shutdown_task(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(task)
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def close(self) -> None:
        await self._shutdown_task()
        if self.state == "connected":
            self.state = "pending"
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None


@contextlib.asynccontextmanager
async def _readable_only(conn: McpConnection, transport: Any) -> AsyncIterator[Any]:
    """The transport's streams, except that the first message the SDK could not parse (not JSON, nested past
    the parser's limit, not JSON-RPC) ends the connection: the SDK would only log it, and the call waiting
    for that answer would wait until MCP_TOOL_TIMEOUT. Closing the read side makes every pending call fail
    at once ("Connection closed"), so the model gets an error tool_result naming the reason."""
    import anyio

    # The SDK logs each unparsable line with its traceback on stderr; the reason reaches the model and the
    # Servers view through ``unreadable`` instead.
    logging.getLogger("mcp.client.stdio").setLevel(logging.CRITICAL)
    async with transport as (read, write):
        send, recv = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        conn.unreadable = _clip(_describe(item), 300)
                        return
                    await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            try:
                yield recv, write
            finally:
                tg.cancel_scope.cancel()


def _server_info(client: Any) -> dict[str, str] | None:
    """The connected server's ``name`` and ``version`` (None when it did not identify itself)."""
    try:
        info = client.server_info
    except Exception:
        return None
    name, version = getattr(info, "name", None), getattr(info, "version", None)
    return {"name": str(name), "version": str(version or "")} if name else None


def _scope(source: str) -> str:
    """Where a server's definition came from, in the reference's scope names (``dynamic``: ``--mcp-config``, which
    a host's ``initialize`` servers also are)."""
    return {".mcp.json": "project", "~/.claude.json": "user", "user settings": "user",
            "~/.claude.json (project)": "local"}.get(source, "dynamic")


def _annotations(raw: Any) -> dict[str, bool] | None:
    """MCP tool annotations (``readOnlyHint``…) as the SDK names them."""
    if not isinstance(raw, dict):
        return None
    out = {ours: raw[theirs] for theirs, ours in (("readOnlyHint", "readOnly"), ("destructiveHint", "destructive"),
                                                 ("openWorldHint", "openWorld")) if isinstance(raw.get(theirs), bool)}
    return out or None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions]
        if inner:
            return _describe(inner[0])
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def usable_tools(specs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The listed tools that can be named unambiguously, and the refused ones with why. A tool is named
    ``mcp__<server>__<tool>`` with its name normalised (``normalize_name``); refused: a name that is empty or holds
    ``__`` once normalised (``mcp__fs__a__b`` reads as tool ``a`` of ``fs`` followed by more, so rules about it
    are ambiguous), and every tool of a set whose names normalise alike (``a.b`` and ``a_b``: one rule name, two
    tools; none of them is offered rather than a guess)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    refused: list[tuple[str, str]] = []
    for spec in specs:
        raw = str(spec.get("name", ""))
        norm = normalize_name(raw)
        if not norm or "__" in norm:
            refused.append((raw, 'its name is empty or contains "__" (rules about it would be ambiguous)'))
            continue
        by_name.setdefault(norm, []).append(spec)
    out: list[dict[str, Any]] = []
    for norm, group in by_name.items():
        if len(group) > 1:
            refused.extend((str(g.get("name", "")), f"several tools are named {norm!r} once normalised")
                           for g in group)
            continue
        out.append(group[0])
    return out, refused


class McpManager:
    """The MCP servers of one session."""

    def __init__(self, configs: list[McpServerConfig]):
        self.connections: dict[str, McpConnection] = {c.name: McpConnection(c) for c in configs}
        self._started = False
        self._tools: dict[str, McpTool] = {}

    @property
    def configured(self) -> bool:
        return bool(self.connections)

    async def start(self) -> None:
        """Start every server once (concurrently); later calls return at once."""
        if self._started:
            return
        self._started = True
        await asyncio.gather(*(c.start() for c in self.connections.values()))

    async def restart(self, name: str) -> None:
        conn = self.connections[name]
        await conn.close()
        conn.state = "pending"
        await conn.start()

    def _named(self, name: str) -> McpConnection:
        conn = self.connections.get(name)
        if conn is None:
            raise KeyError(f"Server not found: {name}")
        return conn

    async def reconnect(self, name: str) -> None:
        """A host's ``mcp_reconnect``: restart the server now; ``RuntimeError`` with its error when it does not come
        up, ``KeyError`` for an unknown name, ``RuntimeError`` for a disabled one."""
        conn = self._named(name)
        if conn.state == "disabled":
            raise RuntimeError(f"Server is disabled: {name}")
        await self.restart(name)
        if conn.state != "connected":
            raise RuntimeError(f"Failed to reconnect {name}: {conn.error or conn.state}")

    async def set_enabled(self, name: str, enabled: bool) -> None:
        """A host's ``mcp_toggle``: a disabled server is stopped and offers no tools until enabled again (then it
        starts at once; ``RuntimeError`` with its error when it does not come up)."""
        conn = self._named(name)
        if not enabled:
            await conn.close()
            conn.state, conn.tools, conn.error = "disabled", [], None
            return
        if conn.state != "disabled":
            return
        conn.state = "failed" if conn.cfg.error else "pending"
        conn.error = conn.cfg.error
        await conn.start()
        if conn.state != "connected":
            raise RuntimeError(f"Failed to enable {name}: {conn.error or conn.state}")

    def tools(self) -> list[McpTool]:
        """The tools of the connected servers, plus those of servers that died since (so a call reaches
        ``call`` and is told why, or restarts the server)."""
        out: list[McpTool] = []
        for conn in self.connections.values():
            for spec in conn.tools:
                name = f"mcp__{conn.name}__{normalize_name(str(spec.get('name', '')))}"
                tool = self._tools.get(name)
                if tool is None or tool.spec != spec:
                    tool = self._tools[name] = McpTool(conn, spec)
                out.append(tool)
        return out

    def status(self) -> list[dict[str, Any]]:
        return [c.status() for c in self.connections.values()]

    def host_status(self) -> list[McpServerStatusInfo]:
        return [c.host_status() for c in self.connections.values()]

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)


class McpInput(BaseModel):
    """Input of an MCP tool: any JSON object, checked against the server's schema."""

    model_config = ConfigDict(extra="allow")
    schema_: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("the input must be a JSON object")
        import jsonschema

        validator = jsonschema.Draft202012Validator(cls.schema_ or {"type": "object"})
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            where = ".".join(str(p) for p in e.path)
            raise ValueError(f"{where + ': ' if where else ''}{e.message}")
        return data


class McpTool(Tool):
    is_mcp = True

    def __init__(self, conn: McpConnection, spec: dict[str, Any]):
        self.conn = conn
        self.spec = spec
        self.remote_name = str(spec.get("name", ""))
        self.name = f"mcp__{conn.name}__{normalize_name(self.remote_name)}"  # type: ignore[misc]
        given = spec.get("inputSchema")
        schema: dict[str, Any] = given if isinstance(given, dict) else {"type": "object"}
        self._schema = dict(schema, type="object") if schema.get("type") != "object" else schema
        self.input_model = type(f"McpInput_{self.name}", (McpInput,), {"schema_": self._schema})  # type: ignore[misc]
        hints = spec.get("annotations") or {}
        self._read_only = bool(hints.get("readOnlyHint"))

    def description(self) -> str:
        text = str(self.spec.get("description") or f"The {self.remote_name} tool of the {self.conn.name} MCP server.")
        return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION] + "… [truncated]"

    def input_schema(self) -> dict[str, Any]:
        return {k: v for k, v in self._schema.items() if k != "title"}

    def is_read_only(self, input: Any) -> bool:
        return self._read_only

    def is_concurrency_safe(self, input: Any) -> bool:
        return self._read_only

    def summary(self, input: dict[str, Any]) -> str:
        return f"{self.conn.name} · {self.remote_name}"

    def permission_target(self, input: Any, ctx: ToolUseContext) -> PermissionTarget:
        """An action the policy knows nothing about: asks unless a rule allows it."""
        return PermissionTarget(kind="generic", summary=self.summary(_dump(input)))

    async def call(self, input: Any, ctx: ToolUseContext) -> ToolResult:
        return ToolResult(await self.conn.call(self.remote_name, _dump(input)))

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        mapped = map_call_result(data)
        limit = max_output_tokens()
        tokens = estimate_tokens(mapped["content"])
        if tokens > limit:  # the reference's cap and sentence: the model is told to ask for less
            mapped = {"content": f"MCP tool \"{self.name}\" response ({tokens} tokens) exceeds maximum allowed tokens "
                                 f"({limit}). Please use pagination, filtering, or limit parameters to reduce the "
                                 "response size.", "is_error": True}
        return {"type": "tool_result", "tool_use_id": tool_use_id, **mapped}


def max_output_tokens() -> int:
    """``MAX_MCP_OUTPUT_TOKENS`` (the reference's variable), default 25,000."""
    try:
        return max(1, int(os.environ.get("MAX_MCP_OUTPUT_TOKENS") or 25_000))
    except ValueError:
        return 25_000


def estimate_tokens(content: Any) -> int:
    """About four characters a token, over the text blocks (images are priced by their pixels, not their bytes,
    and the API bounds their size itself)."""
    if isinstance(content, str):
        return (len(content) + 3) // 4
    total = 0
    for block in content or []:
        if block.get("type") == "text":
            total += len(block.get("text", ""))
    return (total + 3) // 4


def _dump(input: Any) -> dict[str, Any]:
    if isinstance(input, BaseModel):
        return input.model_dump()
    return dict(input) if isinstance(input, dict) else {}


def map_call_result(data: Any) -> dict[str, Any]:
    """A CallToolResult (wire JSON), or a hook's replacement output, as tool_result ``content``/``is_error``."""
    if isinstance(data, str):
        return {"content": data}
    if not isinstance(data, dict):
        return {"content": str(data)}
    blocks: list[dict[str, Any]] = []
    for item in data.get("content") or []:
        kind = item.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(item.get("text", ""))})
        elif kind == "image" and item.get("data"):
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": item.get("mimeType", "image/png"),
                                                       "data": item["data"]}})
        elif kind == "resource":
            res = item.get("resource") or {}
            if "text" in res:
                blocks.append({"type": "text", "text": str(res["text"])})
            else:
                blocks.append({"type": "text", "text": f"[resource {res.get('uri', '')} ({res.get('mimeType', '')})]"})
        elif kind == "resource_link":
            blocks.append({"type": "text", "text": f"[resource link {item.get('uri', '')}]"})
        else:
            blocks.append({"type": "text", "text": f"[{kind} content]"})
    if not blocks and data.get("structuredContent") is not None:
        import json

        blocks.append({"type": "text", "text": json.dumps(data["structuredContent"], ensure_ascii=False)})
    if any(b["type"] != "text" for b in blocks):
        content: Any = [b for b in blocks if b["type"] != "text" or b["text"]]  # the API rejects empty text blocks
    else:
        content = "\n".join(b["text"] for b in blocks)
    out: dict[str, Any] = {"content": content}
    if data.get("isError"):
        out["is_error"] = True
    return out
