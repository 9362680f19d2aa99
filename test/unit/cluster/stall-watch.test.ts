/**
 * The node's stall watch (cluster/stall-watch.ts), in child processes (test/helpers/stall-watch-child.ts): a main thread
 * blocked past the deadline is SIGKILLed soon after it, with one JSON line on stderr saying why; a busy main thread that
 * still yields is left alone and its process ends by itself; a stopped watch kills nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("../../helpers/stall-watch-child.ts", import.meta.url));
const DEADLINE_MS = 1000;

interface ChildEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  endedAt: number;
}

function runChild(mode: string): Promise<ChildEnd> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", CHILD, mode, String(DEADLINE_MS)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    // Bounded: a child that neither dies nor ends fails the test instead of hanging it.
    const limit = setTimeout(() => p.kill("SIGKILL"), 40_000);
    p.on("error", reject);
    p.on("close", (code, signal) => {
      clearTimeout(limit);
      resolve({ code, signal, stdout, stderr, endedAt: Date.now() });
    });
  });
}

const blockingAt = (end: ChildEnd): number => (JSON.parse(end.stdout.trim().split("\n")[0]!) as { blockingAt: number }).blockingAt;

test("stall watch - a main thread blocked past the deadline is SIGKILLed within deadline + 2 s, with the reason on stderr", async () => {
  const end = await runChild("block");
  assert.equal(end.signal, "SIGKILL", `killed by SIGKILL (code ${end.code}, stderr: ${end.stderr})`);
  const after = end.endedAt - blockingAt(end);
  assert.ok(after >= DEADLINE_MS && after <= DEADLINE_MS + 2000, `killed ${after} ms after the main thread blocked (deadline ${DEADLINE_MS} ms)`);
  const lines = end.stderr.split("\n").filter((l) => l.includes("main thread is blocked"));
  assert.equal(lines.length, 1, `one line says why: ${end.stderr}`);
  const line = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(line["level"], "error");
  assert.equal(line["nodeId"], "stall-child");
  assert.equal(line["deadlineMs"], DEADLINE_MS);
  assert.ok(typeof line["blockedMs"] === "number" && line["blockedMs"] >= DEADLINE_MS, `blockedMs ${String(line["blockedMs"])}`);
  assert.match(String(line["msg"]), /SIGKILL.*poison guard/);
});

test("stall watch - a busy main thread that yields is not killed, and its process ends by itself (the watch thread is unref'd)", async () => {
  const end = await runChild("busy");
  assert.deepEqual({ code: end.code, signal: end.signal }, { code: 0, signal: null }, end.stderr);
  assert.doesNotMatch(end.stderr, /blocked/);
});

test("stall watch - stopped (the node's shutdown), it kills nothing: the main thread blocks past the deadline and exits 0", async () => {
  const end = await runChild("stop");
  assert.deepEqual({ code: end.code, signal: end.signal }, { code: 0, signal: null }, end.stderr);
  assert.ok(end.endedAt - blockingAt(end) >= 2.5 * DEADLINE_MS, "the main thread did block past the deadline");
  assert.doesNotMatch(end.stderr, /blocked/);
});
