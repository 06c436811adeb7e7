"""Model access: the ``ModelClient`` protocol, the Anthropic client, and stream accumulation."""
