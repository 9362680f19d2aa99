import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import {
  attachSlowFsync,
  buildSlowFsyncShim,
  createSlowFsyncControl,
  slowFsyncEnv,
} from "../../../chaos/nemesis/slow-fsync/slow-fsync.ts";
import { childEnv, slowFsync, slowFsyncAttached } from "../../../chaos/nemesis/index.ts";
import { run } from "../../../chaos/nemesis/run.ts";
import { startNats, type ServerHandle } from "../../../cluster/local/servers.ts";
import { natsServerVersion, supportsSyncInterval } from "../../helpers/nats-cluster.ts";

// Probe files live on tmpfs (/dev/shm) when there is one: a real fsync there costs microseconds, so "without the
// delay" timings do not depend on how busy the machine's disk is.
const work = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "natslake-slowfsync-test-"));
// Built binaries go under the OS tmpdir (/dev/shm may be mounted noexec).
const bins = mkdtempSync(join(tmpdir(), "natslake-slowfsync-bin-"));
const cleanups: Array<() => Promise<void> | void> = [() => rmSync(work, { recursive: true, force: true }), () => rmSync(bins, { recursive: true, force: true })];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A Node child that times each kind of sync of a small file and prints the durations (ms) as JSON. */
const TIMING_CHILD = `
import fs from "node:fs";
const path = process.argv[1];
const fd = fs.openSync(path, "w");
fs.writeSync(fd, "x");
const time = async (f) => { const t = performance.now(); await f(); return performance.now() - t; };
const out = {
  fsyncSync: await time(() => fs.fsyncSync(fd)),
  fdatasyncSync: await time(() => fs.fdatasyncSync(fd)),
  fsyncAsync: await time(() => new Promise((res, rej) => fs.fsync(fd, (e) => (e ? rej(e) : res())))),
  fileHandleSync: await time(async () => { const h = await fs.promises.open(path, "r+"); await h.sync(); await h.close(); }),
};
fs.closeSync(fd);
console.log(JSON.stringify(out));
`;

/** Like `run`, but with an env (run() inherits ours). */
function runWithEnv(args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (b: Buffer) => (out += b.toString()));
    p.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.once("error", reject);
    p.once("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`child exited ${code}: ${err}`));
    });
  });
}

async function timeSyncs(env: Record<string, string>): Promise<Record<string, number>> {
  const file = join(work, `probe-${Math.random().toString(36).slice(2)}`);
  return JSON.parse(await runWithEnv(["--input-type=module", "-e", TIMING_CHILD, file], env)) as Record<string, number>;
}

test("slow-fsync - the shim is built once into the cache and rebuilt when outdated", async () => {
  const cacheDir = join(bins, "cache");
  let t0 = performance.now();
  const so = await buildSlowFsyncShim({ cacheDir });
  const buildMs = performance.now() - t0;
  assert.equal(so, join(cacheDir, "slowfsync.so"));
  const mtime = statSync(so).mtimeMs;
  t0 = performance.now();
  assert.equal(await buildSlowFsyncShim({ cacheDir }), so);
  const cachedMs = performance.now() - t0;
  assert.equal(statSync(so).mtimeMs, mtime, "not rebuilt when up to date");
  // An outdated stamp (another source or compiler command) rebuilds it.
  writeFileSync(`${so}.stamp`, "outdated");
  await buildSlowFsyncShim({ cacheDir });
  assert.notEqual(readFileSync(`${so}.stamp`, "utf8"), "outdated");
  // Two concurrent builds both succeed and leave no temp files.
  rmSync(so);
  const [a, b] = await Promise.all([buildSlowFsyncShim({ cacheDir, force: true }), buildSlowFsyncShim({ cacheDir, force: true })]);
  assert.equal(a, b);
  assert.ok(existsSync(so));
  const { stdout } = await run("ls", ["-A", cacheDir]);
  assert.deepEqual(stdout.trim().split("\n").sort(), ["slowfsync.so", "slowfsync.so.stamp"]);
  const nm = (await run("nm", ["-D", "--defined-only", so])).stdout;
  for (const sym of ["fsync", "fdatasync", "sync_file_range"]) assert.match(nm, new RegExp(`\\bT ${sym}\\b`));
  console.log(`# shim: gcc build ${buildMs.toFixed(0)} ms, cached lookup ${cachedMs.toFixed(1)} ms`);
});

test("slow-fsync - a Node child started with slowFsyncEnv(ms) takes >= ms per fsync/fdatasync (sync and async); without it, it does not", async () => {
  const ms = 150;
  const slowEnv = childEnv(process.env, await slowFsyncEnv(ms));
  assert.match(slowEnv["LD_PRELOAD"] ?? "", /slowfsync\.so$/);
  assert.equal(slowEnv["NATSLAKE_SLOW_FSYNC_MS"], "150");
  const slow = await timeSyncs(slowEnv);
  const plainEnv = childEnv(process.env);
  delete plainEnv["LD_PRELOAD"];
  const plain = await timeSyncs(plainEnv);
  for (const [k, v] of Object.entries(slow)) assert.ok(v >= ms - 1, `${k} with the shim took ${v.toFixed(1)} ms (< ${ms})`);
  for (const [k, v] of Object.entries(plain)) assert.ok(v < ms, `${k} without the shim took ${v.toFixed(1)} ms`);
  const fmt = (o: Record<string, number>): string => Object.entries(o).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ");
  console.log(`# fsync ms with shim (${ms}): ${fmt(slow)}; without: ${fmt(plain)}`);
});

/** A Node child that fsyncs every 50 ms and prints each duration on its own line. */
function fsyncLoop(env: Record<string, string>): { proc: ChildProcess; samples: Array<{ at: number; ms: number }> } {
  const file = join(work, "loop-file");
  const code = `
import fs from "node:fs";
const fd = fs.openSync(process.argv[1], "w");
setInterval(() => { fs.writeSync(fd, "x"); const t = performance.now(); fs.fsyncSync(fd); console.log((performance.now() - t).toFixed(2)); }, 50);
`;
  const proc = spawn(process.execPath, ["--input-type=module", "-e", code, file], { env, stdio: ["ignore", "pipe", "inherit"] });
  const samples: Array<{ at: number; ms: number }> = [];
  createInterface({ input: proc.stdout! }).on("line", (l) => samples.push({ at: performance.now(), ms: Number(l) }));
  cleanups.push(() => void proc.kill("SIGKILL"));
  return { proc, samples };
}

async function samplesAfter(samples: Array<{ at: number; ms: number }>, since: number, n: number, timeoutMs = 10_000): Promise<number[]> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const got = samples.filter((s) => s.at > since).map((s) => s.ms);
    if (got.length >= n) return got.slice(0, n);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`fewer than ${n} samples within ${timeoutMs} ms`);
}

test("slow-fsync - a control file slows and heals a running process (slowFsync nemesis)", async () => {
  const ctl = await createSlowFsyncControl();
  cleanups.push(() => ctl.close());
  const { proc, samples } = fsyncLoop(childEnv(process.env, ctl.env));
  const fast1 = await samplesAfter(samples, 0, 3);
  const nemesis = slowFsync(ctl, 120, { kind: "node", id: "n2" });
  const rec = await nemesis.inject();
  assert.deepEqual([rec.name, rec.target, rec.detail?.["ms"]], ["slow-fsync", "node:n2", 120]);
  // Samples in flight (or in the pipe) when the delay changes may show the old value: let 300 ms pass first.
  const settle = (): Promise<number> => new Promise((r) => setTimeout(() => r(performance.now()), 300));
  const slow = await samplesAfter(samples, await settle(), 3);
  await nemesis.heal(rec);
  const fast2 = await samplesAfter(samples, await settle(), 3);
  proc.kill("SIGKILL");
  for (const v of [...fast1, ...fast2]) assert.ok(v < 60, `unslowed fsync took ${v} ms`);
  for (const v of slow) assert.ok(v >= 119, `slowed fsync took ${v} ms`);
  console.log(`# control file: before ${fast1.join("/")} ms, slowed ${slow.join("/")} ms, healed ${fast2.join("/")} ms`);
});

test("slow-fsync - raw system calls (as Go makes them) bypass the shim; strace attach slows them and detach heals", async () => {
  // A C program that calls fsync through syscall(2), not through libc's fsync(): what Go's runtime does.
  const src = join(bins, "rawfsync.c");
  const bin = join(bins, "rawfsync");
  writeFileSync(
    src,
    `#include <fcntl.h>\n#include <stdio.h>\n#include <sys/syscall.h>\n#include <time.h>\n#include <unistd.h>\n` +
      `int main(int c, char **v) { (void)c; int fd = open(v[1], O_CREAT | O_WRONLY, 0600); struct timespec a, b;\n` +
      `  for (;;) { clock_gettime(CLOCK_MONOTONIC, &a); syscall(SYS_fsync, fd); clock_gettime(CLOCK_MONOTONIC, &b);\n` +
      `    printf("%.2f\\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6); fflush(stdout); usleep(50000); } }\n`,
  );
  await run("gcc", ["-O2", "-o", bin, src]);
  const env = childEnv(process.env, await slowFsyncEnv(150));
  const proc = spawn(bin, [join(work, "raw-file")], { env, stdio: ["ignore", "pipe", "inherit"] });
  cleanups.push(() => void proc.kill("SIGKILL"));
  const samples: Array<{ at: number; ms: number }> = [];
  createInterface({ input: proc.stdout }).on("line", (l) => samples.push({ at: performance.now(), ms: Number(l) }));
  const unaffected = await samplesAfter(samples, 0, 3);
  for (const v of unaffected) assert.ok(v < 60, `the LD_PRELOAD shim must not see a raw fsync (took ${v} ms)`);

  const nemesis = slowFsyncAttached(() => proc.pid!, 100, "probe");
  let t0 = performance.now();
  const rec = await nemesis.inject();
  const attachMs = performance.now() - t0;
  assert.equal(rec.detail?.["via"], "strace");
  const settle = (): Promise<number> => new Promise((r) => setTimeout(() => r(performance.now()), 300));
  const slowed = await samplesAfter(samples, await settle(), 2);
  t0 = performance.now();
  await nemesis.heal(rec);
  const detachMs = performance.now() - t0;
  const healed = await samplesAfter(samples, await settle(), 2);
  proc.kill("SIGKILL");
  for (const v of slowed) assert.ok(v >= 99, `fsync under strace took ${v} ms`);
  for (const v of healed) assert.ok(v < 60, `fsync after detach took ${v} ms`);
  console.log(`# raw fsync: shim-only ${unaffected.join("/")} ms, strace attached ${slowed.join("/")} ms, detached ${healed.join("/")} ms; attach ${attachMs.toFixed(0)} ms, detach ${detachMs.toFixed(0)} ms`);
  await assert.rejects(attachSlowFsync(2 ** 22 + 7, 10, { timeoutMs: 1000 }), /does not exist|strace/);
});

/** The current nats-server (as scripts/run-tests.mjs finds it), else the default one. */
function currentNatsServer(): string {
  const fromEnv = process.env["NATSLAKE_NATS_SERVER_CURRENT"];
  if (fromEnv) return fromEnv;
  const version = readFileSync(new URL("../../../scripts/nats-server-version", import.meta.url), "utf8").trim();
  const bin = join(process.env["NATSLAKE_TOOLS_DIR"] ?? join(homedir(), "go", "natslake-bin"), `nats-server-${version}`, "nats-server");
  return existsSync(bin) ? bin : process.env["NATSLAKE_NATS_SERVER"] || "nats-server";
}

test("slow-fsync - nats-server: the shim does not slow JetStream's fsync, strace attach does (sync_interval: always)", async () => {
  const bin = currentNatsServer();
  const version = natsServerVersion(bin).join(".");
  const syncAlways = supportsSyncInterval(bin);
  const conf = join(work, "nats.conf");
  writeFileSync(conf, syncAlways ? "jetstream { sync_interval: always }\n" : "jetstream {}\n");
  const shimEnv = await slowFsyncEnv(100);
  const publishMs = async (url: string, subject: string): Promise<number> => {
    const nc = await connect({ servers: url });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: subject.toUpperCase(), subjects: [`${subject}.>`] });
      const js = jetstream(nc);
      await js.publish(`${subject}.x`, "warm-up");
      const t0 = performance.now();
      for (let i = 0; i < 10; i++) await js.publish(`${subject}.x`, `m${i}`);
      return (performance.now() - t0) / 10;
    } finally {
      await nc.close();
    }
  };
  // nats-server started with the shim preloaded (as a topology would start it).
  const saved = { ...process.env };
  Object.assign(process.env, shimEnv);
  let nats: ServerHandle;
  try {
    nats = await startNats({ bin, extraArgs: ["-c", conf] });
  } finally {
    for (const k of Object.keys(shimEnv)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  const server = nats;
  cleanups.push(() => server.stop());
  assert.match(readFileSync(`/proc/${server.pid}/environ`, "utf8"), /LD_PRELOAD=[^\0]*slowfsync\.so/);
  const withShim = await publishMs(server.url, "a");
  const nemesis = slowFsyncAttached(server.pid, 100, { kind: "nats", index: 0 });
  const rec = await nemesis.inject();
  let attached: number;
  try {
    attached = await publishMs(server.url, "b");
  } finally {
    await nemesis.heal(rec);
  }
  const healed = await publishMs(server.url, "c");
  console.log(
    `# nats-server ${version} (${syncAlways ? "sync_interval: always" : "no sync_interval: lazy fsync"}): ` +
      `JetStream publish ${withShim.toFixed(1)} ms with the shim preloaded, ${attached.toFixed(1)} ms with strace attached (100 ms), ${healed.toFixed(1)} ms after detach`,
  );
  assert.ok(withShim < 50, `the LD_PRELOAD shim does not reach Go's fsync (publish took ${withShim.toFixed(1)} ms)`);
  assert.ok(healed < 50, `after detach publish took ${healed.toFixed(1)} ms`);
  if (syncAlways) assert.ok(attached >= 95, `with sync_interval: always each publish fsyncs, slowed by strace (took ${attached.toFixed(1)} ms)`);
  else assert.ok(attached < 50, `nats-server ${version} does not fsync per publish (took ${attached.toFixed(1)} ms)`);
});
