"""Composition: ``AgentSession`` builds settings → model → tools → permissions → session for one folder.

Front ends reach it only through ``desktop_agent.client``.
"""
