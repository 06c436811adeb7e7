#!/usr/bin/env bash
# desktop-agent as the TypeScript SDK's pathToClaudeCodeExecutable: "$DA_PYTHON" -m desktop_agent, with its
# stdout also appended to "$DA_WIRE_LOG" when set (cases.mjs checks the protocol order on it), and its arguments
# to "$DA_WIRE_LOG.args", one a line (the test checks what reached the command line).
py="${DA_PYTHON:-python3}"
if [ -n "${DA_WIRE_LOG:-}" ]; then
  printf '%s\n' "$@" >> "$DA_WIRE_LOG.args"
  exec "$py" -m desktop_agent "$@" > >(tee -a "$DA_WIRE_LOG")
fi
exec "$py" -m desktop_agent "$@"
