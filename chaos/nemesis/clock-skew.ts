/**
 * Clock skew for one process, with libfaketime (Debian packages `faketime` / `libfaketime`, LD_PRELOAD).
 *
 *   spawn("node", args, { env: { ...process.env, ...clockSkewEnv(60_000) } });      // wall clock +60 s from start
 *
 *   const skew = await createClockSkew();            // adjustable while the process runs
 *   spawn("node", args, { env: { ...process.env, ...skew.env } });
 *   await skew.set(-30_000); ...; await skew.set(0); ...; await skew.close();
 *
 * What it does to Node 20 here (measured; test/chaos/nemesis/clock-skew.test.ts checks the first three):
 * - `Date.now()` / `new Date()` are shifted by the offset (libuv and V8 read CLOCK_REALTIME through libc's
 *   clock_gettime, which libfaketime intercepts).
 * - The monotonic clock (`performance.now()`, `process.hrtime`, timers) is left alone by default: these helpers set
 *   `FAKETIME_DONT_FAKE_MONOTONIC=1`. That is what real skew looks like (NTP stepping or a wrong wall clock never
 *   moves CLOCK_MONOTONIC), and it keeps a runtime change from making the monotonic clock jump.
 * - With `fakeMonotonic: true` libfaketime also shifts CLOCK_MONOTONIC's *value* (process.hrtime reads as
 *   realtime + offset), but a constant offset leaves its *differences* unchanged, so durations, timers and a lease
 *   deadline measured with performance.now() are not fooled. A rate (`rate: 2`, libfaketime's `x2`) is different:
 *   it speeds up whatever clocks are faked, so with `fakeMonotonic` timers fire early in real time.
 * - `performance.timeOrigin` is computed from the (skewed) wall clock at start.
 * - File timestamps from `fs.stat` are NOT shifted (libuv calls statx directly), so a skewed process comparing
 *   Date.now() with mtimes sees files as older (forward skew) or younger (backward skew) than they are.
 * - With a control file (createClockSkew) and FAKETIME_NO_CACHE=1, every wall-clock read re-reads the file:
 *   ~3.5 µs per Date.now() (measured 346 ms per 10^5 calls vs 5 ms without); monotonic reads stay cheap.
 *
 * Limits (measured here): Go programs (nats-server) read the clock through the vDSO, not libc, so libfaketime has no
 * effect on them (/varz `now` stays real). redis-server 7.0.15 (jemalloc) does not start under libfaketime 0.9.10
 * ("Unexpected recursive calls to clock_gettime() without proper initialization").
 */
import { existsSync, promises as fs, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export class ClockSkewUnavailable extends Error {
  override readonly name = "ClockSkewUnavailable";
}

const TRIPLETS: Record<string, string> = { x64: "x86_64-linux-gnu", arm64: "aarch64-linux-gnu" };

/** Paths where libfaketime.so.1 is looked for (`NATSLAKE_LIBFAKETIME` first). */
export function libfaketimeCandidates(): string[] {
  const triplet = TRIPLETS[process.arch];
  return [
    process.env["NATSLAKE_LIBFAKETIME"],
    triplet ? `/usr/lib/${triplet}/faketime/libfaketime.so.1` : undefined,
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
  ].filter((p): p is string => !!p);
}

/** The libfaketime library, or undefined when it is not installed. */
export function findLibfaketime(): string | undefined {
  return libfaketimeCandidates().find((p) => existsSync(p));
}

/** The libfaketime library; throws ClockSkewUnavailable (with the install command) when it is missing. */
export function requireLibfaketime(): string {
  const lib = findLibfaketime();
  if (!lib) {
    throw new ClockSkewUnavailable(
      `libfaketime is not installed (looked at ${libfaketimeCandidates().join(", ")}); apt-get install faketime (or set NATSLAKE_LIBFAKETIME)`,
    );
  }
  return lib;
}

/** libfaketime's relative offset syntax: "+60", "-0.25" (seconds, fractions allowed). */
export function faketimeOffset(offsetMs: number, rate?: number): string {
  if (!Number.isFinite(offsetMs)) throw new RangeError(`the clock offset must be finite (got ${offsetMs})`);
  const abs = Math.abs(Math.round(offsetMs)) / 1000;
  const base = `${offsetMs < 0 ? "-" : "+"}${abs}`;
  if (rate === undefined || rate === 1) return base;
  if (!(rate > 0) || !Number.isFinite(rate)) throw new RangeError(`the clock rate must be > 0 (got ${rate})`);
  return `${base} x${rate}`;
}

export interface ClockSkewOptions {
  /** Also shift CLOCK_MONOTONIC (default false; see the module comment). */
  fakeMonotonic?: boolean;
  /** Clock speed factor (libfaketime `xN`); default 1. */
  rate?: number;
  libfaketime?: string;
}

/** Env vars that start a process with its wall clock `offsetMs` away from the real one, for its whole life. */
export function clockSkewEnv(offsetMs: number, opts: ClockSkewOptions = {}): Record<string, string> {
  return {
    LD_PRELOAD: opts.libfaketime ?? requireLibfaketime(),
    FAKETIME: faketimeOffset(offsetMs, opts.rate),
    ...(opts.fakeMonotonic ? {} : { FAKETIME_DONT_FAKE_MONOTONIC: "1" }),
  };
}

export interface ClockSkew {
  /**
   * Start the process with these. The process must NOT inherit a `FAKETIME` variable (libfaketime lets it win over
   * the control file); `childEnv` from ./env.ts removes an inherited one.
   */
  readonly env: Record<string, string>;
  readonly file: string;
  /** Current offset in ms. */
  readonly offsetMs: number;
  /** Takes effect at the next clock read of every process started with `env`. */
  set(offsetMs: number): Promise<void>;
  /** Removes the control file (running processes fall back to the real clock). */
  close(): Promise<void>;
}

/** A skew that can be changed while the process runs (libfaketime control file, re-read on every clock read). */
export async function createClockSkew(opts: ClockSkewOptions & { initialMs?: number } = {}): Promise<ClockSkew> {
  const lib = opts.libfaketime ?? requireLibfaketime();
  const dir = mkdtempSync(join(tmpdir(), "natslake-clock-"));
  const file = join(dir, "faketimerc");
  let current = 0;
  const set = async (offsetMs: number): Promise<void> => {
    const text = faketimeOffset(offsetMs, opts.rate);
    // Rename, so a concurrent reader sees the old or the new value, never an empty file.
    await fs.writeFile(`${file}.tmp`, `${text}\n`);
    await fs.rename(`${file}.tmp`, file);
    current = offsetMs;
  };
  await set(opts.initialMs ?? 0);
  return {
    env: {
      LD_PRELOAD: lib,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: "1",
      ...(opts.fakeMonotonic ? {} : { FAKETIME_DONT_FAKE_MONOTONIC: "1" }),
    },
    file,
    get offsetMs() {
      return current;
    },
    set,
    close: async () => {
      rmSync(dir, { recursive: true, force: true });
      current = 0;
      await Promise.resolve();
    },
  };
}
