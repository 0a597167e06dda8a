// client.mjs drives gemini-mcp-server with the official TypeScript SDK's
// client (@modelcontextprotocol/sdk, pinned in ../npm/package.json) and
// prints what it saw as one JSON object on stdout. The Go test
// (../tsclient_test.go) runs it with Node 22 and judges the report; this
// script only reports, except that it fails (exit 1, {"error": ...}) when a
// step cannot happen at all.
//
// Usage: node client.mjs CONFIG_JSON, where CONFIG_JSON is
//
//   {"sdkDir": "DIR holding node_modules/@modelcontextprotocol/sdk",
//    "transport": "stdio" | "http" | "sse",
//    "url": "http://127.0.0.1:PORT/mcp or /sse",  (http, sse)
//    "token": "bearer token or empty",              (http, sse)
//    "command": "server binary", "args": [...], "env": {...},  (stdio)
//    "fakeLog": "the fake gemini CLI's invocation log (FAKE_GEMINI_LOG)",
//    "marker": "a string unique to this run, put in every prompt",
//    "unauthorizedOnly": true to only try to connect and report the error,
//    "cancelWaitMs": how long to wait for the cancelled call's CLI to end
//                    (default 10000)}
//
// The SDK is loaded with require() from sdkDir: an ES module cannot find
// packages outside its own directory tree by name.

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const cfg = JSON.parse(process.argv[2]);
const require = createRequire(path.join(cfg.sdkDir, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport, getDefaultEnvironment } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { SSEClientTransport } = require("@modelcontextprotocol/sdk/client/sse.js");
const sdkVersion = JSON.parse(
  readFileSync(path.join(cfg.sdkDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"), "utf8"),
).version;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function makeTransport() {
  const requestInit = cfg.token ? { headers: { Authorization: `Bearer ${cfg.token}` } } : undefined;
  switch (cfg.transport) {
    case "stdio":
      return new StdioClientTransport({
        command: cfg.command,
        args: cfg.args ?? [],
        env: { ...getDefaultEnvironment(), ...(cfg.env ?? {}) },
        stderr: "inherit",
      });
    case "http":
      return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit });
    case "sse":
      return new SSEClientTransport(new URL(cfg.url), { requestInit });
  }
  throw new Error(`unknown transport ${cfg.transport}`);
}

// result keeps what the Go test needs from a CallToolResult.
function result(r) {
  return {
    isError: r.isError === true,
    texts: (r.content ?? []).map((c) => (c.type === "text" ? c.text : `<${c.type}>`)),
    meta: r._meta ?? null,
  };
}

// waitForInvocation polls the fake CLI's log for the run whose prompt holds
// needle and returns its pid.
async function waitForInvocation(needle, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    let text = "";
    try {
      text = readFileSync(cfg.fakeLog, "utf8");
    } catch {}
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      const inv = JSON.parse(line);
      if (typeof inv.prompt === "string" && inv.prompt.includes(needle)) return inv.pid;
    }
    await sleep(20);
  }
  throw new Error(`the fake gemini CLI never ran a prompt containing ${needle}`);
}

// waitGone polls until process pid is gone (reaped by its parent) and
// returns how long after since that was, or null after ms.
async function waitGone(pid, since, ms) {
  while (Date.now() - since < ms) {
    if (!alive(pid)) return Date.now() - since;
    await sleep(10);
  }
  return null;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

async function main() {
  const report = { sdkVersion, transport: cfg.transport };
  const client = new Client({ name: "gemini-mcp-server-interop-ts", version: "0" });
  const transport = makeTransport();

  if (cfg.unauthorizedOnly) {
    try {
      await client.connect(transport);
      report.connected = true;
      await client.close();
    } catch (e) {
      report.connected = false;
      report.connectError = `${e?.name}: ${e?.message}`;
      report.connectErrorCode = e?.code ?? null;
    }
    return report;
  }

  await client.connect(transport);
  report.serverVersion = client.getServerVersion();
  report.serverCapabilities = client.getServerCapabilities();
  report.instructions = client.getInstructions() ?? "";

  const { tools } = await client.listTools();
  report.tools = tools.map((t) => ({ name: t.name, required: t.inputSchema?.required ?? [] }));

  const m = cfg.marker;
  const chat = await client.callTool({ name: "chat", arguments: { prompt: `hello ${m}` } });
  report.chat = result(chat);

  const sessionId = chat._meta?.sessionId;
  report.reply = result(
    await client.callTool({ name: "chat-reply", arguments: { prompt: `again ${m}`, sessionId } }),
  );

  report.failing = result(
    await client.callTool({ name: "chat", arguments: { prompt: `fail ${m} [[exit:41]]` } }),
  );

  // Cancellation: start a call whose CLI hangs, wait until the CLI runs,
  // abort the request (the SDK sends notifications/cancelled), and time how
  // long the CLI process lives on.
  const ac = new AbortController();
  let progress = 0;
  const hanging = client
    .callTool({ name: "chat", arguments: { prompt: `hang ${m} [[hang]]` } }, undefined, {
      signal: ac.signal,
      onprogress: () => progress++,
      timeout: 60000,
    })
    .then(
      (r) => ({ settled: "resolved", result: result(r) }),
      (e) => ({ settled: "rejected", error: `${e?.name}: ${e?.message}` }),
    );
  const pid = await waitForInvocation(`hang ${m}`, 15000);
  const abortedAt = Date.now();
  ac.abort("interop test cancels the call");
  const outcome = await hanging;
  const goneAfterMs = await waitGone(pid, abortedAt, cfg.cancelWaitMs ?? 10000);
  report.cancel = { pid, goneAfterMs, progress, ...outcome };

  // The server is still usable: the cancelled call freed its slot.
  report.afterCancel = result(
    await client.callTool({ name: "chat", arguments: { prompt: `after cancel ${m}` } }),
  );

  await client.close();
  return report;
}

main().then(
  (report) => {
    process.stdout.write(JSON.stringify(report) + "\n");
    process.exit(0);
  },
  (e) => {
    process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e) }) + "\n");
    process.exit(1);
  },
);
