// The official TypeScript SDK (@anthropic-ai/claude-agent-sdk) drives desktop-agent through
// pathToClaudeCodeExecutable; run by tests/test_cli_sdk_ts.py, which starts one fake Anthropic server per case
// and checks what reached the model. Usage: node cases.mjs CONFIG.json [case ...]; prints one JSON report line.
// Every case also checks the order rule on the wire (the wrapper tees the CLI's stdout to the case's log):
// the `assistant` line carrying a tool_use comes before any can_use_tool / hook_callback request about it.
import { readFileSync, existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const only = process.argv.slice(3);
const { query } = await import(pathToFileURL(cfg.sdk).href);

function check(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}

function options(name, extra = {}) {
  const c = cfg.cases[name];
  c.stderr ??= [];
  return {
    pathToClaudeCodeExecutable: cfg.cli,
    cwd: c.cwd,
    env: { ...cfg.env, ANTHROPIC_BASE_URL: c.url, DA_WIRE_LOG: c.wire },
    stderr: (d) => c.stderr.push(d),
    ...extra,
  };
}

function userMessage(text) {
  return { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
}

// An input stream the case pushes user messages into (streaming-input mode).
function inputQueue() {
  const items = [];
  let wake = null;
  let done = false;
  return {
    push(m) { items.push(m); wake?.(); },
    end() { done = true; wake?.(); },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (items.length) { yield items.shift(); continue; }
        if (done) return;
        await new Promise((r) => { wake = r; });
        wake = null;
      }
    },
  };
}

// The messages of a query. After an error result the CLI exits 1, as the reference does, and the SDK then throws
// "Claude Code returned an error result: <errors>" from the iterator: expected only right after an error result.
async function collect(q, onMessage = () => {}) {
  const out = [];
  try {
    for await (const m of q) { out.push(m); await onMessage(m); }
  } catch (err) {
    const last = out.filter((m) => m.type === "result").at(-1);
    if (!(last?.is_error && String(err).includes("returned an error result"))) throw err;
    out.exitError = String(err.message ?? err);
  }
  return out;
}

// The order rule on the wire, from the case's stdout log.
function wireOrder(name) {
  const path = cfg.cases[name].wire;
  const info = { assistant: 0, requests: 0, violations: [] };
  if (!existsSync(path)) return info;
  const shown = new Set();
  for (const raw of readFileSync(path, "utf8").split("\n")) {
    if (!raw.trim()) continue;
    let line;
    try { line = JSON.parse(raw); } catch { continue; }
    if (line.type === "assistant") {
      info.assistant += 1;
      check(line.message.content.length === 1, "one content block per assistant line");
      for (const b of line.message.content) if (b.type === "tool_use") shown.add(b.id);
    } else if (line.type === "control_request") {
      const r = line.request;
      const id = r.tool_use_id ?? r.input?.tool_use_id;
      if (r.subtype === "can_use_tool" || r.subtype === "hook_callback") {
        info.requests += 1;
        if (id && !shown.has(id)) info.violations.push(`${r.subtype} for ${id} before its assistant line`);
      }
    }
  }
  return info;
}

const results = (msgs) => msgs.filter((m) => m.type === "result");

const cases = {
  async allow_edit(name) {
    const asked = [];
    const msgs = await collect(query({ prompt: "Change value to 2", options: options(name, {
      canUseTool: async (tool, input, { toolUseID }) => {
        asked.push([tool, toolUseID]);
        return { behavior: "allow", updatedInput: input };
      },
    }) }));
    const [r] = results(msgs);
    check(r.subtype === "success" && r.result === "edited", `result ${JSON.stringify(r)}`);
    check(asked.length === 1 && asked[0][0] === "Edit" && asked[0][1] === "toolu_edit_1", `asked ${asked}`);
    check(readFileSync(join(cfg.cases[name].cwd, "app.ts"), "utf8") === "export const value = 2", "edited on disk");
  },

  async deny_edit(name) {
    const msgs = await collect(query({ prompt: "Change value to 2", options: options(name, {
      canUseTool: async () => ({ behavior: "deny", message: "Not now: the user wants to review first" }),
    }) }));
    const [r] = results(msgs);
    check(r.subtype === "success", `result ${r.subtype}`);
    check(r.permission_denials.length === 1 && r.permission_denials[0].tool_name === "Edit", "denial listed");
    check(readFileSync(join(cfg.cases[name].cwd, "app.ts"), "utf8") === "export const value = 1", "untouched");
  },

  async hook_deny_bash(name) {
    const hooked = [];
    const asked = [];
    const msgs = await collect(query({ prompt: "List the files", options: options(name, {
      canUseTool: async (tool, input) => { asked.push(tool); return { behavior: "allow", updatedInput: input }; },
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [async (input, toolUseID) => {
        hooked.push([input, toolUseID]);
        return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny",
          permissionDecisionReason: "Bash is blocked by the SDK hook" } };
      }] }] },
    }) }));
    check(results(msgs)[0].subtype === "success", "success");
    check(hooked.length === 1 && hooked[0][0].tool_name === "Bash" && hooked[0][1] === "toolu_bash_1", "hook saw Bash");
    const keys = Object.keys(hooked[0][0]).sort().join(",");
    check(keys === "cwd,effort,hook_event_name,permission_mode,prompt_id,session_id,tool_input,tool_name,tool_use_id,"
      + "transcript_path", `hook input keys ${keys}`);
    check(asked.length === 0, "canUseTool not asked for a hook-denied call");
  },

  async updated_input(name) {
    const msgs = await collect(query({ prompt: "Write notes", options: options(name, {
      canUseTool: async (tool, input) => ({ behavior: "allow", updatedInput: { ...input, content: "host text\n" } }),
    }) }));
    check(results(msgs)[0].subtype === "success", "success");
    check(readFileSync(join(cfg.cases[name].cwd, "notes.txt"), "utf8") === "host text\n", "host's text on disk");
  },

  async two_prompts(name) {
    const input = inputQueue();
    const q = query({ prompt: input, options: options(name) });
    input.push(userMessage("first"));
    const seen = [];
    for await (const m of q) {
      if (m.type !== "result") continue;
      seen.push(m);
      if (seen.length === 1) input.push(userMessage("second"));
      else input.end();
    }
    check(seen.length === 2 && seen.every((r) => r.subtype === "success"), "two results");
    check(seen[0].result === "one" && seen[1].result === "two", `texts ${seen.map((r) => r.result)}`);
    check(seen[0].session_id === seen[1].session_id, "one session");
  },

  async resume(name) {
    const first = results(await collect(query({ prompt: "Remember 42", options: options(name) })))[0];
    check(first.subtype === "success", "first");
    const again = results(await collect(query({ prompt: "What was it?",
      options: options(name, { resume: first.session_id }) })))[0];
    check(again.subtype === "success" && again.result === "It was 42.", `resumed ${again.result}`);
    check(again.session_id === first.session_id, "same session");
  },

  async max_turns(name) {
    const msgs = await collect(query({ prompt: "Read it", options: options(name, { maxTurns: 1 }) }));
    const [r] = results(msgs);
    check(r && r.subtype === "error_max_turns" && r.is_error, `result ${JSON.stringify(r)}`);
    check(msgs.exitError === "Claude Code returned an error result: Reached maximum number of turns (1)",
      `exit error ${msgs.exitError}`);
    check(r.terminal_reason === "max_turns" && r.num_turns === 2, `terminal ${r.terminal_reason} ${r.num_turns}`);
  },

  async allowed_disallowed(name) {
    const asked = [];
    const msgs = await collect(query({ prompt: "Edit and echo", options: options(name, {
      allowedTools: ["Bash(echo *)"], disallowedTools: ["Edit"],
      canUseTool: async (tool, input) => { asked.push(tool); return { behavior: "allow", updatedInput: input }; },
    }) }));
    const init = msgs.find((m) => m.type === "system" && m.subtype === "init");
    check(init && !init.tools.includes("Edit") && init.tools.includes("Bash"), `tools ${init?.tools}`);
    check(results(msgs)[0].subtype === "success", "success");
    check(asked.length === 0, `nothing asked (${asked})`);
  },

  async include_partial(name) {
    const msgs = await collect(query({ prompt: "Say hello", options: options(name, { includePartialMessages: true }) }));
    const events = msgs.filter((m) => m.type === "stream_event").map((m) => m.event.type);
    check(events.includes("message_start") && events.includes("content_block_delta")
      && events.includes("message_stop"), `events ${events}`);
    const assistant = msgs.filter((m) => m.type === "assistant");
    check(assistant.length === 1 && assistant[0].message.content[0].text === "Hello there", "assistant");
    check(msgs.indexOf(assistant[0]) > msgs.findIndex((m) => m.type === "stream_event"), "deltas first");
  },

  async mode_and_interrupt(name) {
    const input = inputQueue();
    const asked = [];
    let release;
    const pending = new Promise((r) => { release = r; });
    const q = query({ prompt: input, options: options(name, {
      canUseTool: async (tool, input, { signal }) => {
        asked.push(tool);
        await new Promise((r) => { signal?.addEventListener?.("abort", r); pending.then(r); });
        return { behavior: "deny", message: "too late" };
      },
    }) });
    await q.setPermissionMode("acceptEdits");
    input.push(userMessage("write a"));
    const seen = [];
    await collect(q, async (m) => {
      if (m.type !== "result") return;
      seen.push(m);
      if (seen.length === 1) {
        await q.setPermissionMode("default");
        input.push(userMessage("write b"));
        (async () => {
          while (asked.length === 0) await new Promise((r) => setTimeout(r, 20));
          await q.interrupt();
        })();
      } else {
        release();
        input.end();
      }
    });
    check(seen[0].subtype === "success", "acceptEdits turn");
    check(seen[1].subtype === "error_during_execution" && seen[1].is_error, `interrupted ${seen[1].subtype}`);
    check(asked.length === 1, `asked ${asked}`);
    const cwd = cfg.cases[name].cwd;
    check(existsSync(join(cwd, "a.txt")) && !existsSync(join(cwd, "b.txt")), "a written, b not");
  },

  async info(name) {
    const input = inputQueue();
    const q = query({ prompt: input, options: options(name) });
    const commands = await q.supportedCommands();
    const models = await q.supportedModels();
    const agents = await q.supportedAgents();
    const account = await q.accountInfo();
    input.end();
    await collect(q);
    check(Array.isArray(commands) && commands.some((c) => c.name === "compact"), `commands ${JSON.stringify(commands)}`);
    check(Array.isArray(models) && models.length >= 1 && models[0].value, `models ${JSON.stringify(models)}`);
    check(Array.isArray(agents), `agents ${JSON.stringify(agents)}`);
    check(account && account.apiKeySource === "ANTHROPIC_API_KEY", `account ${JSON.stringify(account)}`);
  },
};

// Shape checks after sdk.d.ts (0.3.333): McpServerStatus, SDKControlGetContextUsageResponse.
const isNum = (v) => typeof v === "number" && Number.isFinite(v);
const isStr = (v) => typeof v === "string";
const KINDS = ["used", "free", "buffer", "deferred"];
const STATES = ["connected", "failed", "needs-auth", "pending", "disabled"];

function checkServerStatus(s) {
  check(isStr(s.name) && STATES.includes(s.status), `McpServerStatus name/status ${JSON.stringify(s)}`);
  if (s.serverInfo !== undefined) check(isStr(s.serverInfo.name) && isStr(s.serverInfo.version), "serverInfo");
  if (s.error !== undefined) check(isStr(s.error), "error");
  for (const k of ["scope", "source"]) if (s[k] !== undefined) check(isStr(s[k]), k);
  if (s.config !== undefined) check(isStr(s.config.command) || isStr(s.config.url), "config");
  if (s.tools !== undefined) {
    check(Array.isArray(s.tools), "tools");
    for (const t of s.tools) {
      check(isStr(t.name), "tool name");
      if (t.description !== undefined) check(isStr(t.description), "tool description");
      if (t.annotations !== undefined) {
        for (const v of Object.values(t.annotations)) check(typeof v === "boolean", "annotation");
      }
    }
  }
}

function checkContextUsage(u) {
  check(Array.isArray(u.categories) && u.categories.length > 0, "categories");
  for (const c of u.categories) {
    check(isStr(c.name) && isNum(c.tokens) && isStr(c.color) && KINDS.includes(c.kind), `category ${JSON.stringify(c)}`);
  }
  for (const k of ["totalTokens", "maxTokens", "rawMaxTokens", "percentage"]) check(isNum(u[k]), k);
  check(Array.isArray(u.gridRows) && u.gridRows.every((r) => Array.isArray(r) && r.every((q) =>
    isStr(q.color) && typeof q.isFilled === "boolean" && isStr(q.categoryName) && isNum(q.tokens)
    && isNum(q.percentage) && isNum(q.squareFullness))), "gridRows");
  check(isStr(u.model), "model");
  check(Array.isArray(u.memoryFiles) && u.memoryFiles.every((f) => isStr(f.path) && isStr(f.type) && isNum(f.tokens)),
    "memoryFiles");
  check(Array.isArray(u.mcpTools) && u.mcpTools.every((t) => isStr(t.name) && isStr(t.serverName) && isNum(t.tokens)),
    "mcpTools");
  check(Array.isArray(u.agents), "agents");
  check(typeof u.isAutoCompactEnabled === "boolean", "isAutoCompactEnabled");
  check(u.apiUsage === null || ["input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens"].every((k) => isNum(u.apiUsage[k])), "apiUsage");
}

async function rejects(promise, what) {
  try { await promise; } catch (err) { return String(err?.message ?? err); }
  throw new Error(`assertion failed: ${what} should have been refused`);
}

// A streaming session the case drives: push prompts, wait for each result, call Query methods between them.
function session(name, extra = {}) {
  const input = inputQueue();
  const q = query({ prompt: input, options: options(name, extra) });
  const msgs = [];
  const waiting = [];
  const done = (async () => {
    for await (const m of q) {
      msgs.push(m);
      if (m.type === "result") waiting.shift()?.(m);
    }
  })();
  return {
    q, msgs,
    turn(text) { input.push(userMessage(text)); return new Promise((r) => waiting.push(r)); },
    async end() { input.end(); await done; },
  };
}

Object.assign(cases, {
  // --await-initialize: the SDK (0.3.333) sends mcpServers inside initialize and passes the flag.
  async mcp_servers(name) {
    const s = session(name, { mcpServers: cfg.cases[name].mcp, allowedTools: ["mcp__fake__echo"] });
    const r = await s.turn("echo hi");
    check(r.subtype === "success" && r.result === "echoed", `result ${JSON.stringify(r)}`);
    const init = s.msgs.find((m) => m.type === "system" && m.subtype === "init");
    check(init.mcp_servers.some((m) => m.name === "fake" && m.status === "connected"), `init ${JSON.stringify(init.mcp_servers)}`);
    check(init.tools.includes("mcp__fake__echo"), "echo offered");
    const ir = await s.q.initializationResult();
    check(ir.mcp_servers_applied === true, `mcp_servers_applied ${ir.mcp_servers_applied}`);
    await s.end();
  },

  async mcp_methods(name) {
    const s = session(name, { mcpServers: cfg.cases[name].mcp });
    let status = await s.q.mcpServerStatus();
    check(Array.isArray(status) && status.length === 1, `status ${JSON.stringify(status)}`);
    status.forEach(checkServerStatus);
    check(status[0].status === "connected" && status[0].tools.some((t) => t.name === "echo"), "connected with tools");
    await s.q.toggleMcpServer("fake", false);
    status = await s.q.mcpServerStatus();
    status.forEach(checkServerStatus);
    check(status[0].status === "disabled", `disabled ${status[0].status}`);
    const refused = await rejects(s.q.reconnectMcpServer("fake"), "reconnecting a disabled server");
    check(refused.includes("Server is disabled: fake"), refused);
    await s.q.toggleMcpServer("fake", true);
    await s.q.reconnectMcpServer("fake");
    status = await s.q.mcpServerStatus();
    check(status[0].status === "connected", `reconnected ${status[0].status}`);
    const missing = await rejects(s.q.toggleMcpServer("nope", true), "an unknown server");
    check(missing.includes("Server not found: nope"), missing);
    await s.end();
  },

  async context_usage(name) {
    const s = session(name);
    const before = await s.q.getContextUsage();
    checkContextUsage(before);
    check(before.apiUsage === null, "no request yet");
    await s.turn("hi");
    const after = await s.q.getContextUsage({ detail: "summary" });
    checkContextUsage(after);
    check(after.apiUsage && after.apiUsage.input_tokens > 0, `apiUsage ${JSON.stringify(after.apiUsage)}`);
    check(after.totalTokens > 0 && after.totalTokens < after.rawMaxTokens, "total");
    check(after.percentage === Math.round(after.totalTokens * 100 / after.rawMaxTokens), "percentage");
    await s.end();
  },

  async flag_settings(name) {
    const target = join(cfg.cases[name].cwd, "notes.txt");
    const s = session(name, { permissionMode: "acceptEdits" });
    const bad = await rejects(s.q.applyFlagSettings({ permissions: { deny: ["Write", "Bash(rm:*"] } }), "a bad rule");
    check(bad.includes("Nothing was applied"), bad);
    await s.q.applyFlagSettings({ permissions: { deny: ["Write"] } });
    const r = await s.turn("write notes");
    check(r.subtype === "success" && !existsSync(target), "the flag deny rule held");
    await s.q.applyFlagSettings({ permissions: null });
    await s.end();
  },

  async update_settings(name) {
    const s = session(name);
    await s.q.updateSettings("localSettings", { outputStyle: "default" });
    const local = join(cfg.cases[name].cwd, ".claude", "settings.local.json");
    check(JSON.parse(readFileSync(local, "utf8")).outputStyle === "default", "written");
    const refused = await rejects(s.q.updateSettings("localSettings", { permissions: { allow: ["Bash"] } }),
      "a key off the allowlist");
    check(refused.includes("outputStyle"), refused);
    check(!("permissions" in JSON.parse(readFileSync(local, "utf8"))), "nothing else written");
    await s.end();
  },

  async seed_read_state(name) {
    const app = join(cfg.cases[name].cwd, "app.ts");
    const s = session(name, { permissionMode: "acceptEdits" });
    const { mtimeMs } = await import("node:fs").then((fs) => fs.statSync(app));
    await s.q.seedReadState(app, Math.floor(mtimeMs));
    const r = await s.turn("edit without reading");
    check(r.subtype === "success" && r.result === "edited", `result ${JSON.stringify(r)}`);
    check(readFileSync(app, "utf8") === "export const value = 2", "edited on disk");
    await s.end();
  },

  async unknown_request(name) {
    const s = session(name);
    const err = await rejects(s.q.reloadSkills(), "reload_skills");
    check(err.includes("Unsupported control request: reload_skills"), err);
    await s.end();
  },
});

// rewindFiles (App. D.4): one Bash side effect per prompt, each prompt named by its uuid; then back to each prompt,
// last first, dry run then real, the folder compared with its state just before that prompt (checkpoint_helpers).
function manifestOf(cwd) {
  return execFileSync(cfg.python, ["-m", "tests.session.checkpoint_helpers", cwd],
    { env: { ...process.env, PYTHONPATH: cfg.root }, encoding: "utf8" }).trim();
}

Object.assign(cases, {
  async rewind_files(name) {
    const c = cfg.cases[name];
    const input = inputQueue();
    const q = query({ prompt: input, options: options(name, { enableFileCheckpointing: true, allowedTools: ["Bash"],
      extraArgs: { "replay-user-messages": null } }) });
    const waiting = [];
    const replayed = new Set();
    const done = (async () => {
      for await (const m of q) {
        if (m.type === "user" && m.uuid) replayed.add(m.uuid);
        if (m.type === "result") waiting.shift()?.(m);
      }
    })();
    const ids = [];
    const states = [];
    for (let i = 0; i < c.steps; i++) {
      states.push(manifestOf(c.cwd));
      const uuid = `${String(i).padStart(8, "0")}-1111-4111-8111-${String(i).padStart(12, "0")}`;
      ids.push(uuid);
      const r = await new Promise((res) => { waiting.push(res); input.push({ ...userMessage(`step ${i}`), uuid }); });
      check(r.subtype === "success", `step ${i}: ${JSON.stringify(r)}`);
      check(replayed.has(uuid), `step ${i}: the prompt came back with its uuid`);
    }
    let now = manifestOf(c.cwd);
    check(now !== states[states.length - 1], "the last step changed the folder");
    const counts = [];
    for (let k = c.steps - 1; k >= 0; k--) {
      const dry = await q.rewindFiles(ids[k], { dryRun: true });
      check(dry.canRewind === true && dry.filesChanged?.length > 0, `dry run ${k}: ${JSON.stringify(dry)}`);
      check(dry.skippedLinks === undefined, "no skippedLinks on a dry run");
      check(manifestOf(c.cwd) === now, `dry run ${k} wrote nothing`);
      const real = await q.rewindFiles(ids[k]);
      check(real.canRewind === true && real.skippedLinks === 0, `rewind ${k}: ${JSON.stringify(real)}`);
      check(JSON.stringify([...real.filesChanged].sort()) === JSON.stringify([...dry.filesChanged].sort()),
        `rewind ${k}: the files the dry run named`);
      now = manifestOf(c.cwd);
      check(now === states[k], `rewind ${k} (${c.commands[k]}): the folder as it was before step ${k}`);
      counts.push({ k, files: real.filesChanged.length, insertions: real.insertions, deletions: real.deletions });
    }
    const missing = await q.rewindFiles("ffffffff-ffff-4fff-8fff-ffffffffffff", { dryRun: true });
    check(missing.canRewind === false && missing.error, `unknown id: ${JSON.stringify(missing)}`);
    input.end();
    await done;
    c.counts = counts;
  },
});

const report = {};
for (const [name, fn] of Object.entries(cases)) {
  if (only.length && !only.includes(name)) continue;
  if (!cfg.cases[name]) continue;  // a case the caller did not set up
  const t0 = Date.now();
  try {
    await fn(name);
    const order = wireOrder(name);
    check(order.violations.length === 0, order.violations.join("; "));
    report[name] = { ok: true, ms: Date.now() - t0, order };
  } catch (err) {
    report[name] = { ok: false, ms: Date.now() - t0, error: String(err?.stack ?? err),
      stderr: (cfg.cases[name].stderr ?? []).join("").slice(-2000) };
  }
}
process.stdout.write(JSON.stringify(report) + "\n");
