"""How a front end reaches the engine: ``EngineClient.open(folder, options) -> SessionHandle`` (``base``), always a
``session.ProtocolSession`` over a ``transports.Transport``: the host in this process on this loop (memory:
``session.HostClient``), the background host (unix: ``session.SocketClient``) or an executor process, our CLI or
Claude Code (pipe: ``subprocess``).
``make_client(kind)`` picks one by the ``--executor`` / Settings name. Every client also answers the folder-level
questions (sessions, transcripts, trust, the sandbox: ``local``); ``tour`` is the offline tour's scripted model.
"""

from __future__ import annotations

from desktop_agent.client.base import (
    EXECUTOR_KINDS, Ack, ClientError, EngineClient, ExecutorDied, ExecutorKind, HandleState, SessionHandle,
    SessionOptions,
)
from desktop_agent.client.local import SessionSummary


def make_client(kind: ExecutorKind = "inprocess", executable: str | None = None) -> EngineClient:
    """``inprocess`` (default), ``process`` (our CLI, or ``executable``) or ``claude`` (``executable`` or
    ``claude`` on PATH)."""
    if kind == "inprocess":
        from desktop_agent.client.session import HostClient

        return HostClient()
    from desktop_agent.client.subprocess import SubprocessClient

    if kind == "process":
        return SubprocessClient(executable, flavor="ours")
    if kind == "claude":
        return SubprocessClient(executable, flavor="claude")
    raise ValueError(f"unknown executor: {kind!r} (one of {', '.join(EXECUTOR_KINDS)})")


__all__ = ["Ack", "ClientError", "EngineClient", "ExecutorDied", "ExecutorKind", "HandleState", "SessionHandle",
           "SessionOptions", "SessionSummary", "EXECUTOR_KINDS", "make_client"]
