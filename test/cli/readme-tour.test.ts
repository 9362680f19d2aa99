/**
 * The README's five-minute tour, run exactly as written: every ```sh block between its `<!-- tour` and `<!-- /tour -->`
 * markers, in order, with bash in a folder laid out like the checkout (each top-level entry a symlink to the real one,
 * so `.natslake/`, where `npm run up` keeps its warehouse, is the test's own). The first block, `npm run up`, runs in
 * the background as in the tour's first terminal; the test waits for what the tour says to wait for, runs the other
 * blocks one by one (each must exit 0), and ends with the tour's last step, Ctrl-C: SIGINT to the process group, as a
 * terminal sends it. Nothing is rewritten except what the tour itself says may differ: the NATS URL, when port 4222
 * was taken and `npm run up` listens elsewhere. The rows published in steps 3 and 4 must come back, each exactly once,
 * from `read`, `tail` and the pypaimon + DuckDB query.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "../helpers/cluster.ts";
import { pidAlive } from "../helpers/servers.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const STANDARD_URL = "nats://127.0.0.1:4222";
/** Tour rows: examples/data/events.jsonl (step 3) and the TypeScript producer's (step 4: --rows 5 --first-id 100). */
const FILE_ROWS = readFileSync(join(ROOT, "examples", "data", "events.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l) as { id: number; msg?: string | null });
const PRODUCER_ROWS = Array.from({ length: 5 }, (_, i) => ({ id: 100 + i, msg: `example row ${100 + i}` }));
const TOUR_IDS = [...FILE_ROWS, ...PRODUCER_ROWS].map((r) => r.id).sort((a, b) => a - b);
const TOUR_MSGS = [...FILE_ROWS, ...PRODUCER_ROWS].flatMap((r) => (typeof r.msg === "string" ? [r.msg] : []));
/** The primary-key part (steps 8–11): the rows and changes published, and the table they leave. */
const jsonLines = (file: string): Array<Record<string, unknown>> =>
  readFileSync(join(ROOT, "examples", "data", file), "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
const ACCOUNT_CHANGES = [...jsonLines("accounts.jsonl"), ...jsonLines("account-changes.jsonl")];
/** The model: each change applied in order (-U and -D remove the key, the others replace it). */
function accountsAfter(changes: Array<Record<string, unknown>>): Map<number, string> {
  const state = new Map<number, string>();
  for (const c of changes) {
    const kind = (c["_row_kind"] as string | undefined) ?? "+I";
    if (kind === "-U" || kind === "-D") state.delete(c["id"] as number);
    else state.set(c["id"] as number, c["balance"] as string);
  }
  return state;
}

/** The tour's ```sh blocks, in order, each as the text a user pastes. */
function tourBlocks(): string[] {
  const start = README.indexOf("<!-- tour");
  const end = README.indexOf("<!-- /tour -->");
  assert.ok(start >= 0 && end > start, "the README marks its tour with <!-- tour … --> and <!-- /tour -->");
  return [...README.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
}

/** A folder laid out like the checkout: every top-level entry but .git and .natslake, as a symlink to the real one. */
function checkoutCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "natslake-tour-"));
  for (const name of readdirSync(ROOT)) {
    if (name === ".git" || name === ".natslake") continue;
    symlinkSync(join(ROOT, name), join(dir, name));
  }
  return dir;
}

const dir = checkoutCopy();
let up: ChildProcess | undefined;
after(() => {
  // Whatever happened: the tour's process group (npm, up, its nodes), then up's servers, which run in groups of their
  // own (their pids are in up's output).
  if (up?.pid !== undefined && up.exitCode === null && up.signalCode === null) {
    try {
      process.kill(-up.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  for (const pid of [...upOut.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]))) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

let upOut = "";
let upErr = "";

/** One tour block, run with bash in the checkout folder; the NATS URL replaced only when up said it differs. */
function run(block: string, natsUrl: string): { out: string; err: string } {
  const command = block.replaceAll(STANDARD_URL, natsUrl);
  const r = spawnSync("bash", ["-c", command], { cwd: dir, encoding: "utf8", timeout: 180_000, maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, `the tour's command failed (exit ${r.status}, signal ${r.signal}):\n$ ${command}\n${r.stdout}\n${r.stderr}\n--- npm run up ---\n${upOut}\n${upErr}`);
  return { out: r.stdout, err: r.stderr };
}

/** How often `text` contains `s`. */
const count = (text: string, s: string): number => text.split(s).length - 1;

test("README tour - every command of the five-minute tour works as written, and the rows come back exactly once", { timeout: 285_000 }, async () => {
  const blocks = tourBlocks();
  assert.equal(blocks[0], "npm run up", "the tour starts the cluster with `npm run up`");
  assert.ok(blocks.length >= 6, `the tour has its steps (${blocks.length} blocks)`);

  // Step 1, the first terminal: `npm run up`, in a process group of its own as a terminal's foreground job is.
  up = spawn("bash", ["-c", blocks[0]!], { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  up.stdout!.on("data", (b: Buffer) => (upOut += b.toString()));
  up.stderr!.on("data", (b: Buffer) => (upErr += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => up!.once("exit", (code, signal) => r({ code, signal })));
  // What the tour says to wait for.
  await waitFor("npm run up: the demo rows visible", () => {
    if (up!.exitCode !== null) throw new Error(`npm run up exited (${up!.exitCode}):\n${upOut}\n${upErr}`);
    return /visible in a snapshot/.test(upOut) ? true : undefined;
  }, 200_000, 250).catch((e: unknown) => {
    throw new Error(`${String(e)}\n--- stdout ---\n${upOut}\n--- stderr ---\n${upErr}`);
  });
  // The one thing the tour says may differ: another NATS URL when 4222 was taken.
  const natsUrl = /NATS {2}(nats:\/\/\S+)/.exec(upOut)?.[1];
  assert.ok(natsUrl !== undefined, `npm run up prints its NATS URL:\n${upOut}`);
  if (natsUrl !== STANDARD_URL) assert.match(upOut, /port 4222 is taken/, "npm run up says why it does not listen on 4222");

  // Steps 2–7, the second terminal, one command after the other.
  const outputs = blocks.slice(1).map((b) => ({ block: b, ...run(b, natsUrl) }));
  const of = (re: RegExp): string => {
    const o = outputs.find((x) => re.test(x.block));
    assert.ok(o !== undefined, `the tour has a step matching ${re}`);
    return o.out;
  };
  assert.match(of(/natslake publish tour\.events/), new RegExp(`published ${FILE_ROWS.length} rows to tour\\.events: ${FILE_ROWS.length} ok`));
  assert.match(of(/producer\.ts/), /the stream stored nothing twice/);
  // `read` prints a table (id first), `tail` JSON lines: every row of steps 3 and 4, once.
  const readIds = of(/natslake read tour\.events/).split("\n").flatMap((l) => /^\s*(\d+)\s+\|/.exec(l)?.[1] ?? []).map(Number);
  assert.deepEqual(readIds.sort((a, b) => a - b), TOUR_IDS, `read shows every tour row once:\n${of(/natslake read tour\.events/)}`);
  const tailIds = of(/natslake tail tour\.events/).split("\n").filter((l) => l.trim() !== "").map((l) => (JSON.parse(l) as { id: number }).id);
  assert.deepEqual(tailIds.sort((a, b) => a - b), TOUR_IDS, `tail prints every tour row once:\n${of(/natslake tail tour\.events/)}`);
  const query = of(/query\.py/);
  for (const msg of TOUR_MSGS) assert.equal(count(query, msg), 1, `the pypaimon + DuckDB query shows "${msg}" once:\n${query}`);

  // Steps 8–11: the primary-key table holds one row per key, the model's; tail prints every change with its kind.
  const accounts = accountsAfter(ACCOUNT_CHANGES);
  const readAccounts = new Map(of(/natslake read tour\.accounts/).split("\n").flatMap((l) => {
    const m = /^\s*(\d+)\s+\|\s*\S+\s+\|\s*([\d.]+)/.exec(l);
    return m === null ? [] : [[Number(m[1]), m[2]!] as [number, string]];
  }));
  assert.deepEqual([...readAccounts].sort(), [...accounts].sort(), `read shows one row per key, the changes applied:\n${of(/natslake read tour\.accounts/)}`);
  const printed = of(/natslake tail tour\.accounts/).split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
  const changeKey = (c: Record<string, unknown>): string => `${String(c["_row_kind"] ?? "+I")} ${String(c["id"])}`;
  assert.deepEqual(printed.map(changeKey).sort(), ACCOUNT_CHANGES.map(changeKey).sort(), `tail from snapshot 1 prints every change published, with its kind:\n${of(/natslake tail tour\.accounts/)}`);

  // Step 12: Ctrl-C in the first terminal. The nodes drain, then the servers stop, and nothing is left running.
  process.kill(-up.pid!, "SIGINT");
  let timer: NodeJS.Timeout | undefined;
  const end = await Promise.race([
    exited,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`npm run up did not stop within 60 s of Ctrl-C:\n${upOut}\n${upErr}`)), 60_000))),
  ]).finally(() => clearTimeout(timer));
  // npm ends as a shell job does at Ctrl-C: by the signal (after its script ended), or with the script's exit code.
  assert.ok(end.code === 0 || end.signal === "SIGINT", `npm run up ended cleanly after Ctrl-C (${JSON.stringify(end)}):\n${upOut}\n${upErr}`);
  const pids = [...upOut.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]));
  assert.ok(pids.length >= 5, `npm run up printed its servers' and nodes' pids:\n${upOut}`);
  await waitFor("every server and node of npm run up gone", () => (pids.every((pid) => !pidAlive(pid)) ? true : undefined), 45_000, 250).catch((e: unknown) => {
    throw new Error(`${String(e)}: ${pids.filter(pidAlive).join(", ")} still running\n${upOut}\n${upErr}`);
  });
  assert.match(upOut, /stopping the local cluster/);
  assert.match(upOut, /kept the JetStream store and logs in/, "up finished its stop (the nodes drained, the servers stopped)");
  assert.doesNotMatch(upOut, /exited with|killed by|did not stop|had failures/, `the stop was clean:\n${upOut}\n${upErr}`);
});
