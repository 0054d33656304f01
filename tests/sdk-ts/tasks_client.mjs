// Interop check: the official TypeScript MCP SDK 1.32 (protocol 2025-11-25, the `initialize`
// handshake) drives `studioflow serve` over stdio.
//
// Usage: node tasks_client.mjs PATH/TO/studioflow [--http]   (stdio by default; --http serves on a free port)
//
// It declares the 2025-11-25 `tasks` capability, lists the tools (reflow_month must say
// execution.taskSupport "optional", and the SDK's schema validator must not warn about any schema),
// gets a month reflow as a task with client.experimental.tasks.callToolStream({task: {ttl}}),
// sees its status updates and its result (the same CallToolResult as the synchronous call), lists
// and cancels tasks, and checks that require_approval is refused with a pointer to dry_run and
// apply_reflow. Exits 1 naming the failed check, or prints one summary line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

class CheckFailed extends Error {}
function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

// Anything the SDK (or its JSON Schema validator, ajv) warns about is a failure of our schemas.
const warnings = [];
for (const level of ["warn", "error"]) {
  const original = console[level];
  console[level] = (...args) => {
    warnings.push(args.map(String).join(" "));
    original.apply(console, args);
  };
}

async function collect(stream) {
  const messages = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

/// `studioflow serve --http` on a free port; resolves to the server process and its /mcp URL.
function serveHttp(binary, db) {
  execFileSync(binary, ["init", "--db", db, "--demo"], { env: { ...process.env, RUST_LOG: "error" } });
  const server = spawn(binary, ["serve", "--db", db, "--http", "127.0.0.1:0"], { env: { ...process.env, RUST_LOG: "error" } });
  return new Promise((resolvePromise, reject) => {
    let said = "";
    server.stderr.on("data", (chunk) => {
      said += chunk;
      const found = said.match(/serving MCP at (http:\/\/\S+\/mcp)/);
      if (found) resolvePromise({ server, url: found[1] });
    });
    server.on("exit", () => reject(new Error(`the server exited: ${said}`)));
  });
}

async function main(binary, overHttp) {
  const dir = mkdtempSync(join(tmpdir(), "studioflow-sdk-ts-"));
  let server = null;
  let transport;
  if (overHttp) {
    const started = await serveHttp(binary, join(dir, "studio.db"));
    server = started.server;
    transport = new StreamableHTTPClientTransport(new URL(started.url));
  } else {
    transport = new StdioClientTransport({
      command: binary,
      args: ["serve", "--db", join(dir, "studio.db"), "--demo"],
      env: { ...process.env, RUST_LOG: "error" },
      stderr: "inherit",
    });
  }
  const client = new Client(
    { name: "studioflow-sdk-ts-check", version: "1.0.0" },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: {} } } },
  );
  try {
    await client.connect(transport);
    check(client.getServerVersion()?.name === "studioflow", "initialize: not studioflow");
    const tasksCapability = client.getServerCapabilities()?.tasks;
    check(tasksCapability?.requests?.tools?.call, `initialize: no tasks.requests.tools.call capability: ${JSON.stringify(tasksCapability)}`);

    // tools/list: every schema compiles without a warning; reflow_month may run as a task.
    const { tools } = await client.listTools();
    const reflow = tools.find((t) => t.name === "reflow_month");
    check(reflow?.execution?.taskSupport === "optional", `reflow_month execution: ${JSON.stringify(reflow?.execution)}`);
    check(tools.every((t) => !t.execution || t.name === "reflow_month"), "a quick tool claims task support");
    // The SDK compiles output validators when the tools are listed; a second list recompiles.
    await client.listTools();
    check(warnings.length === 0, `warnings while listing tools: ${warnings.join(" | ")}`);

    // A reflow as a task: created, polled, finished with the synchronous call's result.
    const args = { month: "2026-09", offline_rooms: ["studio-b"], dry_run: true };
    const messages = await collect(client.experimental.tasks.callToolStream({ name: "reflow_month", arguments: args }, undefined, { task: { ttl: 600000 } }));
    const kinds = messages.map((m) => m.type);
    const error = messages.find((m) => m.type === "error");
    check(!error, `callToolStream: ${error?.error}`);
    check(kinds[0] === "taskCreated", `callToolStream: first message ${kinds[0]}`);
    const created = messages[0].task;
    check(/^tsk_/.test(created.taskId) && created.ttl > 0 && created.pollInterval > 0, `taskCreated: ${JSON.stringify(created)}`);
    const statuses = messages.filter((m) => m.type === "taskStatus").map((m) => m.task.status);
    check(statuses.length >= 1 && statuses.at(-1) === "completed", `status updates: ${statuses}`);
    const result = messages.at(-1);
    check(result.type === "result" && !result.result.isError, `callToolStream result: ${JSON.stringify(result).slice(0, 300)}`);
    const out = result.result.structuredContent;
    check(out.moved + out.unresolved === out.affected && out.applied === false && out.affected > 100, `reflow result: ${JSON.stringify(out).slice(0, 300)}`);
    check(result.result.content[0].text.includes(String(out.moved)), `result summary: ${result.result.content[0].text}`);
    // The same plan, read by the synchronous tool: the task's result is that call's document.
    const stored = await client.callTool({ name: "get_reflow", arguments: { reflow_id: out.reflow_id } });
    check(stored.structuredContent.moved === out.moved && stored.structuredContent.applied === false, "get_reflow disagrees with the task's result");

    // tasks/get, tasks/list (this session's), tasks/cancel of a finished task (acknowledged, unchanged).
    const got = await client.experimental.tasks.getTask(created.taskId);
    check(got.status === "completed" && got.taskId === created.taskId, `tasks/get: ${JSON.stringify(got)}`);
    // A task is its session's: stdio lists it; stateless HTTP has no session, so lists none.
    const listed = await client.experimental.tasks.listTasks();
    check(overHttp ? listed.tasks.length === 0 : listed.tasks.some((t) => t.taskId === created.taskId), `tasks/list: ${JSON.stringify(listed)}`);
    try {
      await client.experimental.tasks.cancelTask(created.taskId);
    } catch (e) {
      // Cancelling a finished task may be refused; it must not change it.
    }
    check((await client.experimental.tasks.getTask(created.taskId)).status === "completed", "cancel changed a finished task");

    // The approval gate needs the 2026-07-28 extension: refused, pointing at dry_run and apply_reflow.
    const gated = await collect(client.experimental.tasks.callToolStream(
      { name: "reflow_month", arguments: { ...args, dry_run: false, require_approval: true } }, undefined, { task: { ttl: 60000 } }));
    const refusal = gated.map((m) => m.error?.message ?? JSON.stringify(m)).join(" ");
    check(gated.length === 1 && gated[0].type === "error", `require_approval made a task: ${refusal.slice(0, 400)}`);
    check(refusal.includes("dry_run") && refusal.includes("apply_reflow"), `require_approval: ${refusal.slice(0, 400)}`);

    // A quick tool still answers synchronously.
    const rooms = await client.callTool({ name: "list_rooms", arguments: {} });
    check(rooms.structuredContent.rooms.length === 7, "list_rooms");

    return `${tools.length} tools (no schema warning), reflow task ${created.taskId}: ${statuses.length} status updates, ` +
      `moved ${out.moved} of ${out.affected}; tasks/list and tasks/get agree; require_approval refused`;
  } finally {
    await client.close().catch(() => {});
    server?.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

const [binary, transportFlag] = process.argv.slice(2);
if (!binary || (transportFlag && transportFlag !== "--http")) {
  console.log("usage: node tasks_client.mjs PATH/TO/studioflow [--http]");
  process.exit(2);
}
const overHttp = transportFlag === "--http";
main(resolve(binary), overHttp).then(
  (summary) => {
    process.stdout.write(`sdk-ts: @modelcontextprotocol/sdk 1.32 over ${overHttp ? "stateless HTTP" : "stdio"}, protocol 2025-11-25: ${summary}\n`);
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`sdk-ts: FAILED: ${e instanceof CheckFailed ? e.message : e?.stack ?? e}\n`);
    process.exit(1);
  },
);
