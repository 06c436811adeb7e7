"""A stand-in for Claude Code as an executor (``python fake_claude.py <flags>``): speaks stream-json on stdio the way
``claude -p --input-format stream-json --output-format stream-json --permission-prompt-tool stdio`` does, for one
Edit of the file named in the prompt: its ``can_use_tool`` carries no patch (Claude Code sends none), and on allow
it applies ``updatedInput``, runs the host's PostToolUse hook callbacks registered in ``initialize`` (as
``hook_callback`` requests, each reply read back; plus one with an id never registered) and reports
``structuredPatch`` in ``tool_use_result``. Writes its argv to ``$FAKE_CLAUDE_ARGV`` and, with ``$FAKE_CLAUDE_LOG``,
every line the host sends it (one JSON per line)."""

import json
import os
import sys
import uuid

SID = str(uuid.uuid4())


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read():
    msg = json.loads(sys.stdin.readline())
    if os.environ.get("FAKE_CLAUDE_LOG"):
        with open(os.environ["FAKE_CLAUDE_LOG"], "a") as f:
            f.write(json.dumps(msg) + "\n")
    return msg


def run_hooks(callback_ids, path, edit):
    for n, callback_id in enumerate([*callback_ids, "never_registered"]):
        out({"type": "control_request", "request_id": f"hook-{n}", "request": {
            "subtype": "hook_callback", "callback_id": callback_id, "tool_use_id": "toolu_cc", "input": {
                "session_id": SID, "cwd": os.getcwd(), "hook_event_name": "PostToolUse", "tool_name": "Edit",
                "tool_input": edit, "tool_response": {"filePath": path}, "tool_use_id": "toolu_cc"}}})
        read()


def main():
    with open(os.environ["FAKE_CLAUDE_ARGV"], "w") as f:
        json.dump(sys.argv[1:], f)
    post_tool_use = []
    while True:
        try:
            msg = read()
        except ValueError:  # EOF
            return
        if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
            for matcher in (msg["request"].get("hooks") or {}).get("PostToolUse") or []:
                if "Edit" in matcher["matcher"].split("|"):
                    post_tool_use += matcher["hookCallbackIds"]
            out({"type": "control_response", "response": {"subtype": "success", "request_id": msg["request_id"],
                                                          "response": {"commands": [], "pid": os.getpid()}}})
        elif msg["type"] == "user":
            path = msg["message"]["content"]
            out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": SID, "tools": ["Edit"],
                 "model": "claude-fake", "permissionMode": "default"})
            edit = {"file_path": path, "old_string": "value = 1", "new_string": "value = 2"}
            out({"type": "assistant", "session_id": SID, "parent_tool_use_id": None, "message": {
                "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_cc", "name": "Edit",
                                                  "input": edit}]}})
            out({"type": "control_request", "request_id": "cc-1", "request": {
                "subtype": "can_use_tool", "tool_name": "Edit", "input": edit, "tool_use_id": "toolu_cc",
                "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}})
            answer = read()["response"]["response"]
            if answer["behavior"] == "allow":
                inp = answer["updatedInput"]
                old = open(path).read()
                new = old.replace(inp["old_string"], inp["new_string"])
                open(path, "w").write(new)
                run_hooks(post_tool_use, path, inp)
                result = {"type": "tool_result", "tool_use_id": "toolu_cc", "content": "updated"}
                data = {"filePath": path, "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                                               "newLines": 1, "lines": ["-" + old.rstrip("\n"),
                                                                                        "+" + new.rstrip("\n")]}]}
            else:
                result = {"type": "tool_result", "tool_use_id": "toolu_cc", "content": answer["message"],
                          "is_error": True}
                data = "Error: " + answer["message"]
            out({"type": "user", "session_id": SID, "parent_tool_use_id": None,
                 "message": {"role": "user", "content": [result]}, "tool_use_result": data})
            out({"type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": "",
                 "session_id": SID, "total_cost_usd": 0.001, "usage": {"input_tokens": 10, "output_tokens": 5}})


main()
