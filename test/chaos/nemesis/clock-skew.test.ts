import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { clockSkewEnv, createClockSkew, faketimeOffset, requireLibfaketime } from "../../../chaos/nemesis/clock-skew.ts";
import { childEnv, clockSkew, combineEnv } from "../../../chaos/nemesis/index.ts";

const work = mkdtempSync(join(tmpdir(), "natslake-clock-test-"));
const cleanups: Array<() => Promise<void> | void> = [() => rmSync(work, { recursive: true, force: true })];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** What a child reports about its clocks: wall, monotonic, a 200 ms timer measured both ways, and a new file's mtime. */
const PROBE = `
import fs from "node:fs";
const now = Date.now();
const hrMs = Number(process.hrtime.bigint() / 1000000n);
const w0 = Date.now(), p0 = performance.now();
await new Promise((r) => setTimeout(r, 200));
const timerWallMs = Date.now() - w0, timerMonoMs = performance.now() - p0;
fs.writeFileSync(process.argv[1], "x");
const mtimeMinusNow = fs.statSync(process.argv[1]).mtimeMs - Date.now();
console.log(JSON.stringify({ now, hrMs, timerWallMs, timerMonoMs, mtimeMinusNow, timeOrigin: performance.timeOrigin }));
`;

interface Probe {
  now: number;
  hrMs: number;
  timerWallMs: number;
  timerMonoMs: number;
  mtimeMinusNow: number;
  /** Parent's wall and monotonic clocks just before the spawn and just after the exit. */
  wall: [number, number];
  mono: [number, number];
}

function probe(env: Record<string, string>): Promise<Probe> {
  const wall0 = Date.now();
  const mono0 = Number(process.hrtime.bigint() / 1000000n);
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--input-type=module", "-e", PROBE, join(work, `f-${Math.random()}`)], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (b: Buffer) => (out += b.toString()));
    p.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const timer = setTimeout(() => p.kill("SIGKILL"), 20_000);
    p.once("error", reject);
    p.once("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`probe exited ${code}: ${err}`));
        return;
      }
      const r = JSON.parse(out) as Omit<Probe, "wall" | "mono">;
      resolve({ ...r, wall: [wall0, Date.now()], mono: [mono0, Number(process.hrtime.bigint() / 1000000n)] });
    });
  });
}

const within = (v: number, [lo, hi]: [number, number], slack = 5): boolean => v >= lo - slack && v <= hi + slack;
const shift = ([a, b]: [number, number], d: number): [number, number] => [a + d, b + d];

test("clock-skew - libfaketime is installed and the offset syntax is libfaketime's", () => {
  assert.match(requireLibfaketime(), /libfaketime\.so\.1$/);
  assert.equal(faketimeOffset(60_000), "+60");
  assert.equal(faketimeOffset(-30_000), "-30");
  assert.equal(faketimeOffset(-250), "-0.25");
  assert.equal(faketimeOffset(1500, 2), "+1.5 x2");
  assert.throws(() => faketimeOffset(Number.NaN), RangeError);
  const env = combineEnv({ LD_PRELOAD: "/a.so" }, clockSkewEnv(1000), { LD_PRELOAD: "/a.so" });
  assert.equal(env["LD_PRELOAD"], `/a.so:${requireLibfaketime()}`);
});

for (const offsetMs of [60_000, -30_000]) {
  test(`clock-skew - a child started with ${offsetMs > 0 ? "+" : ""}${offsetMs / 1000} s: Date.now() is skewed, the monotonic clock is not, file mtimes are real`, async () => {
    const r = await probe(childEnv(process.env, clockSkewEnv(offsetMs)));
    assert.ok(within(r.now, shift(r.wall, offsetMs)), `child Date.now() ${r.now - r.wall[0]} ms from the parent's (want ${offsetMs})`);
    assert.ok(within(r.hrMs, r.mono), `child hrtime ${r.hrMs - r.mono[0]} ms from the parent's (want 0: same CLOCK_MONOTONIC)`);
    assert.ok(Math.abs(r.timerWallMs - 200) < 60 && Math.abs(r.timerMonoMs - 200) < 60, `a 200 ms timer: wall ${r.timerWallMs}, mono ${r.timerMonoMs}`);
    // The kernel stamps files with the real time and fs.stat is not faked: mtime - Date.now() = -offset.
    assert.ok(Math.abs(r.mtimeMinusNow + offsetMs) < 100, `mtime - Date.now() = ${r.mtimeMinusNow} (want ${-offsetMs})`);
    console.log(
      `# skew ${offsetMs} ms: child Date.now - parent = ${r.now - r.wall[0]} ms (spawn→exit window ${r.wall[1] - r.wall[0]} ms); ` +
        `child hrtime - parent = ${r.hrMs - r.mono[0]} ms; 200 ms timer wall ${r.timerWallMs} / mono ${r.timerMonoMs.toFixed(1)}; mtime - now ${r.mtimeMinusNow.toFixed(0)}`,
    );
  });
}

test("clock-skew - fakeMonotonic shifts the monotonic clock's value but not its rate, so durations are unchanged", async () => {
  const offsetMs = 3_600_000;
  const r = await probe(childEnv(process.env, clockSkewEnv(offsetMs, { fakeMonotonic: true })));
  assert.ok(within(r.now, shift(r.wall, offsetMs)));
  assert.ok(!within(r.hrMs, r.mono, 1000), `hrtime is faked too (child ${r.hrMs}, parent ${r.mono[0]})`);
  assert.ok(Math.abs(r.timerMonoMs - 200) < 60, `a 200 ms timer measured with performance.now(): ${r.timerMonoMs}`);
  // Without the skew env the probe sees the parent's clocks.
  const plain = childEnv(process.env);
  delete plain["LD_PRELOAD"];
  delete plain["FAKETIME"];
  const base = await probe(plain);
  assert.ok(within(base.now, base.wall) && within(base.hrMs, base.mono));
  console.log(`# fakeMonotonic +1 h: child hrtime = ${r.hrMs} ms (parent ${r.mono[0]} ms: value replaced), 200 ms timer = ${r.timerMonoMs.toFixed(1)} ms`);
});

test("clock-skew - a control file skews and heals a running process (clockSkew nemesis)", async () => {
  const skew = await createClockSkew();
  cleanups.push(() => skew.close());
  const code = `setInterval(() => console.log(Date.now() + " " + performance.now().toFixed(1)), 50);`;
  const proc: ChildProcess = spawn(process.execPath, ["-e", code], { env: childEnv({ ...process.env, FAKETIME: "+999" }, skew.env), stdio: ["ignore", "pipe", "inherit"] });
  cleanups.push(() => void proc.kill("SIGKILL"));
  const samples: Array<{ at: number; skew: number; mono: number }> = [];
  createInterface({ input: proc.stdout! }).on("line", (l) => {
    const [wall, mono] = l.split(" ").map(Number);
    samples.push({ at: performance.now(), skew: wall! - Date.now(), mono: mono! });
  });
  const next = async (n: number): Promise<number[]> => {
    await new Promise((r) => setTimeout(r, 200)); // let in-flight lines pass
    const since = performance.now();
    const deadline = since + 10_000;
    while (performance.now() < deadline) {
      const got = samples.filter((s) => s.at > since).map((s) => s.skew);
      if (got.length >= n) return got.slice(0, n);
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no samples from the child (exit ${proc.exitCode})`);
  };
  const before = await next(3);
  const nemesis = clockSkew(skew, 60_000, { kind: "node", id: "n3" });
  const rec = await nemesis.inject();
  assert.deepEqual([rec.name, rec.target, rec.detail?.["offsetMs"]], ["clock-skew", "node:n3", 60_000]);
  const during = await next(3);
  await nemesis.heal(rec);
  const healed = await next(3);
  proc.kill("SIGKILL");
  for (const s of [...before, ...healed]) assert.ok(Math.abs(s) < 100, `skew without the fault: ${s} ms (an inherited FAKETIME must not win)`);
  for (const s of during) assert.ok(Math.abs(s - 60_000) < 100, `skew during the fault: ${s} ms`);
  // The monotonic clock never jumped: consecutive samples are ~50 ms apart throughout.
  const gaps = samples.slice(1).map((s, i) => s.mono - samples[i]!.mono);
  assert.ok(Math.max(...gaps) < 1000 && Math.min(...gaps) > 0, `performance.now() gaps ${Math.min(...gaps)}..${Math.max(...gaps)} ms`);
  console.log(`# control file: skew before ${before.join("/")}, during ${during.join("/")}, healed ${healed.join("/")} ms; monotonic gaps ≤ ${Math.max(...gaps).toFixed(1)} ms`);
});
