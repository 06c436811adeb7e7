// The phone page: pairing, the inbox, one question with its whole patch, answers signed with this device's key.
// No HTML is ever built from data: every text goes in through textContent.
"use strict";

const STORE = "desktop-agent-device";
const enc = new TextEncoder();
const $ = (id) => document.getElementById(id);

function b64u(bytes) {
  let s = "";
  new Uint8Array(bytes).forEach((b) => { s += String.fromCharCode(b); });
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function unb64u(text) {
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}
function hex(bytes) { return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join(""); }
function randomHex(n) { return hex(crypto.getRandomValues(new Uint8Array(n))); }
function concat(a, b) { const out = new Uint8Array(a.length + b.length); out.set(a); out.set(b, a.length); return out; }

function show(view) {
  for (const id of ["pair-view", "unpaired-view", "inbox-view", "question-view"]) $(id).hidden = id !== view;
}
function status(text) { $("status").textContent = text || ""; }

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    credentials: "omit", cache: "no-store",
  });
  let data = {};
  try { data = await response.json(); } catch (e) { data = {}; }
  return { ok: response.ok, status: response.status, data };
}

// ---------------------------------------------------------------- the device
// The device's id and name in localStorage; its key a non-extractable CryptoKey in IndexedDB: a script that ran
// here could sign while the page is open, but could never carry the key away.
function loadDevice() {
  try { return JSON.parse(localStorage.getItem(STORE) || "null"); } catch (e) { return null; }
}
let device = loadDevice();
let hmacKey = null;

function keyStore(mode, action) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("desktop-agent", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("keys");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction("keys", mode);
      const request = action(tx.objectStore("keys"));
      tx.oncomplete = () => { open.result.close(); resolve(request ? request.result : undefined); };
      tx.onerror = () => { open.result.close(); reject(tx.error); };
    };
  });
}
async function key() {
  if (!hmacKey) hmacKey = await keyStore("readonly", (store) => store.get("device"));
  if (!hmacKey) throw new Error("no device key");
  return hmacKey;
}
async function sign(lines) {
  return hex(await crypto.subtle.sign("HMAC", await key(), enc.encode(lines.join("\n"))));
}

// ---------------------------------------------------------------- pairing
async function verificationCode(fp, phonePub, serverPub, phoneNonce, serverNonce) {
  const text = ["desktop-agent pairing v1", fp, b64u(phonePub), b64u(serverPub), b64u(phoneNonce),
    b64u(serverNonce)].join("\n");
  const digest = new DataView(await crypto.subtle.digest("SHA-256", enc.encode(text)));
  const n = digest.getUint32(0) % 1000000;
  return String(Math.floor(n / 1000)).padStart(3, "0") + " " + String(n % 1000).padStart(3, "0");
}

async function pair(code, fp) {
  $("pair-button").disabled = true;
  status("Pairing…");
  const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  const pub = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const nonce = crypto.getRandomValues(new Uint8Array(16));
  const name = $("device-name").value.trim() || "Phone";
  const r = await post("/api/pair", { code, name, pub: b64u(pub), nonce: b64u(nonce) });
  if (!r.ok) { status(r.data.error || "Pairing failed"); return; }
  if (r.data.fingerprint !== fp) { status("The desktop's certificate is not the one in the code: not paired"); return; }
  const serverPub = unb64u(r.data.pub), serverNonce = unb64u(r.data.nonce);
  $("verify-code").textContent = await verificationCode(fp, pub, serverPub, nonce, serverNonce);
  $("verify").hidden = false;
  status("Confirm on the desktop…");
  const peer = await crypto.subtle.importKey("raw", serverPub, { name: "ECDH", namedCurve: "P-256" }, false, []);
  const shared = await crypto.subtle.deriveBits({ name: "ECDH", public: peer }, pair.privateKey, 256);
  const hkdf = await crypto.subtle.importKey("raw", shared, "HKDF", false, ["deriveKey"]);
  const deviceKey = await crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: concat(nonce, serverNonce),
    info: enc.encode("desktop-agent device key v1") }, hkdf, { name: "HMAC", hash: "SHA-256", length: 256 }, false,
    ["sign"]);
  for (;;) {
    const w = await post("/api/pair/wait", { pairing: r.data.pairing });
    if (w.ok && w.data.status === "pending") continue;
    if (w.ok && w.data.status === "paired") {
      await keyStore("readwrite", (store) => store.put(deviceKey, "device"));
      hmacKey = deviceKey;
      device = { id: w.data.device, name: w.data.name };
      localStorage.setItem(STORE, JSON.stringify(device));
      status("Paired");
      $("verify").hidden = true;
      startInbox();
      return;
    }
    status(w.data.status === "refused" ? "The desktop refused this device" : "Pairing failed");
    return;
  }
}

// ---------------------------------------------------------------- the inbox
const questions = new Map();
let current = null; // the key of the question shown
let decisions = [];
let armed = false; // the answer buttons take taps only a moment after the question opened (no stray double tap)
const ARM_MS = 600;
let offset = 0; // the desktop's clock minus ours, seconds
let socket = null;
const qkey = (q) => q.session_id + "\u0000" + q.request_id;

function age(q) {
  const s = Math.max(0, Math.round(Date.now() / 1000 + offset - q.asked_at));
  return s < 60 ? s + " s" : Math.round(s / 60) + " min";
}

function summary(q) {
  if (q.command !== undefined) return q.command.split("\n")[0];
  if (q.file !== undefined) return q.file + (q.hunks ? "  +" + q.adds + " \u2212" + q.dels : "");
  return q.message || q.tool;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function renderList() {
  const list = $("questions");
  list.replaceChildren();
  const items = Array.from(questions.values()).sort((a, b) => a.asked_at - b.asked_at);
  for (const q of items) {
    const li = el("li", "question");
    li.dataset.requestId = q.request_id;
    li.dataset.sessionId = q.session_id;
    const head = el("div", "q-head");
    head.append(el("span", "q-tool", q.tool), el("span", "q-age", age(q)));
    li.append(head, el("div", "q-sess", q.session), el("div", "q-what", summary(q)));
    li.addEventListener("click", () => openQuestion(qkey(q)));
    list.append(li);
  }
  $("count").textContent = items.length ? "(" + items.length + ")" : "";
  $("empty").hidden = items.length > 0;
}

function renderHunks(q) {
  const box = $("q-hunks");
  box.replaceChildren();
  (q.hunks || []).forEach((h, i) => {
    const section = el("section", "hunk");
    section.dataset.hunk = String(i);
    const head = el("div", "hunk-head");
    head.append(el("span", "range", "Hunk " + (i + 1) + " of " + q.hunks.length + " \u00b7 lines " +
      h.old_range[0] + "\u2013" + h.old_range[1]), el("span", "", "+" + h.adds + " \u2212" + h.dels));
    if (q.per_hunk) {
      const toggle = el("button", "hunk-toggle", "");
      toggle.type = "button";
      toggle.dataset.hunk = String(i);
      const paint = () => {
        toggle.textContent = decisions[i] ? "\u2713 Accepted" : "\u2717 Rejected";
        toggle.classList.toggle("off", !decisions[i]);
        section.classList.toggle("rejected", !decisions[i]);
        updateAllow(q);
      };
      toggle.addEventListener("click", () => { decisions[i] = !decisions[i]; paint(); });
      paint();
      head.append(toggle);
    }
    const lines = el("div", "hunk-lines");
    for (const line of h.lines) {
      const row = el("div", "line " + (line.kind === "+" ? "add" : line.kind === "-" ? "del" : "ctx"));
      const code = el("span", "code");
      for (const [cls, text] of line.tokens) code.append(el("span", cls, text));
      row.append(el("span", "sign", line.kind), code);
      lines.append(row);
    }
    section.append(head, lines);
    box.append(section);
  });
}

function updateAllow(q) {
  const allow = $("allow");
  $("deny").disabled = !armed;
  if (!q.per_hunk || !q.hunks) { allow.textContent = "Allow once"; allow.disabled = !armed; return; }
  const n = decisions.filter(Boolean).length;
  allow.disabled = !armed || n === 0;
  allow.textContent = n === q.hunks.length ? "Allow once" : "Allow " + n + " of " + q.hunks.length + " hunks";
}

function openQuestion(k) {
  const q = questions.get(k);
  if (!q) return;
  current = k;
  decisions = (q.hunks || []).map(() => true);
  $("q-title").textContent = q.tool + (q.file ? " \u00b7 " + q.file : "");
  $("q-session").textContent = q.session + " \u00b7 waiting " + age(q);
  $("q-message").textContent = q.message;
  $("q-command-box").hidden = q.command === undefined;
  $("q-command").textContent = q.command || "";
  $("q-description").textContent = q.description || "";
  $("q-file-box").hidden = q.file === undefined;
  $("q-file").textContent = q.file || "";
  const stats = $("q-stats");
  stats.replaceChildren();
  if (q.hunks) stats.append(el("span", "plus", "+" + q.adds), " ", el("span", "minus", "\u2212" + q.dels));
  $("q-input").textContent = q.input;
  $("feedback").value = "";
  $("q-result").textContent = "";
  armed = false;
  renderHunks(q);
  updateAllow(q);
  setTimeout(() => { if (current === k) { armed = true; updateAllow(q); } }, ARM_MS);
  show("question-view");
  window.scrollTo(0, 0);
}

function closeQuestion(note) {
  current = null;
  renderList();
  show("inbox-view");
  status(note || "");
}

async function answer(behavior) {
  const q = current && questions.get(current);
  if (!q || !armed) return;
  armed = false;
  $("allow").disabled = true;
  $("deny").disabled = true;
  const accepted = behavior === "allow" && q.per_hunk && q.hunks ? decisions.map((d) => (d ? "1" : "0")).join("") : "";
  const feedback = behavior === "deny" ? $("feedback").value.trim() : "";
  const ts = String(Math.floor(Date.now() / 1000 + offset));
  const nonce = randomHex(16);
  const mac = await sign(["desktop-agent answer v1", q.session_id, q.request_id, q.input_sha256, nonce, ts, behavior,
    accepted, feedback]);
  const r = await post("/api/answer", { device: device.id, session_id: q.session_id, request_id: q.request_id,
    input_sha256: q.input_sha256, nonce, ts, behavior, accepted, feedback, mac });
  if (r.ok) {
    questions.delete(qkey(q));
    closeQuestion(behavior === "allow" ? "Allowed" : "Denied");
  } else {
    $("q-result").textContent = r.data.error || "Not sent";
    if (r.status === 401) forget("This device is no longer paired");
    else { armed = true; updateAllow(q); }
  }
}

function forget(note) {
  localStorage.removeItem(STORE);
  keyStore("readwrite", (store) => store.delete("device")).catch(() => {});
  device = null;
  hmacKey = null;
  questions.clear();
  show("unpaired-view");
  status(note);
  $("device-label").textContent = "";
}

function connect() {
  socket = new WebSocket("wss://" + location.host + "/api/events");
  socket.addEventListener("message", async (event) => {
    const m = JSON.parse(event.data);
    if (m.type === "challenge") {
      offset = m.time - Date.now() / 1000;
      const nonce = randomHex(16);
      const mac = await sign(["desktop-agent events v1", device.id, m.challenge, nonce]);
      socket.send(JSON.stringify({ device: device.id, nonce, mac }));
    } else if (m.type === "snapshot") {
      questions.clear();
      for (const q of m.questions) questions.set(qkey(q), q);
      $("device-label").textContent = m.name;
      document.body.dataset.live = "1";
      if (current && !questions.has(current)) closeQuestion("Answered elsewhere");
      else if (!current) { renderList(); show("inbox-view"); }
    } else if (m.type === "asked") {
      questions.set(qkey(m.question), m.question);
      if (!current) renderList();
    } else if (m.type === "gone") {
      const k = m.session_id + "\u0000" + m.request_id;
      questions.delete(k);
      if (current === k) closeQuestion(m.how === "withdrawn" ? "The agent took this question back" :
        "Answered " + (m.by === "phone" ? "on a phone" : "on the desktop"));
      else if (!current) renderList();
    }
  });
  socket.addEventListener("close", (event) => {
    document.body.dataset.live = "0";
    if (event.code === 4001) { forget("This device is no longer paired"); return; }
    if (device) { status("Reconnecting…"); setTimeout(connect, 1000); }
  });
  socket.addEventListener("open", () => status(""));
}

function startInbox() {
  renderList();
  show("inbox-view");
  connect();
}

// ---------------------------------------------------------------- start
function start() {
  $("back").addEventListener("click", () => closeQuestion(""));
  $("allow").addEventListener("click", () => answer("allow"));
  $("deny").addEventListener("click", () => answer("deny"));
  const params = new URLSearchParams(location.hash.slice(1));
  const code = params.get("pair"), fp = params.get("fp");
  if (code) history.replaceState(null, "", location.pathname); // the code leaves the address bar and history
  if (code && fp) {
    show("pair-view");
    $("pair-button").addEventListener("click", () => pair(code, fp).catch((e) => status("Pairing failed: " + e)));
    return;
  }
  if (device) startInbox(); else show("unpaired-view");
  setInterval(() => { if (!current && device) renderList(); }, 15000);
}

// A pairing link opened in a tab already showing the page changes only the fragment: start over with it.
window.addEventListener("hashchange", () => { if (location.hash.includes("pair=")) location.reload(); });

start();
