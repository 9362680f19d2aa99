/**
 * Runs one scenario once: topology up, subscriber and load (each its own process), the fault script, the load
 * stopped a few seconds after the last fault, the cluster given time to commit everything acknowledged, node
 * processes stopped, the verifier, the report (JSON under chaos-reports/ and a human summary), everything stopped.
 *
 * With `auth` (`chaos run --auth`, chaos/auth.ts) the servers require users, every process connects as its role, and
 * the invariants include `permissions`: no nats-server of the run refused anything (chaos/nats-violations.ts). With
 * `tls` (`chaos run --tls`, chaos/tls.ts) the servers require mutual TLS and every process connects with the run's CA
 * and client certificate; `permissions` then also fails on a TLS handshake a nats-server refused. With both, the NATS
 * users sign in with nkeys (seed files in the run directory) instead of passwords.
 *
 * Bounds: the load runs for the scenario's duration (at most 5 minutes more when the fault script is late), the
 * fault script has the duration plus 3 minutes, quiescence waits at most 2 minutes; every process is stopped by PID
 * in a finally (and by chaos/procs.ts on an unexpected exit of the runner).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { natslakeState } from "../src/format/snapshot.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { createRng } from "./prng.ts";
import { waitUntil } from "./faults.ts";
import { level0Files } from "./table-state.ts";
import { trackPid, untrackPid } from "./procs.ts";
import { Topology, TABLE } from "./topology.ts";
import { newChaosAuth } from "./auth.ts";
import { newChaosTls } from "./tls.ts";
import { permissionsInvariant } from "./nats-violations.ts";
import { verify } from "./verifier.ts";
import { verifyPk } from "./pk-verifier.ts";
import { ENGINE_WORKLOADS } from "../test/helpers/pk-engines.ts";
import type { NatsChoice } from "./nats-choice.ts";
import type { LoadSpec } from "./load-child.ts";
import type { PkLoadSpec } from "./pk-load-child.ts";
import type { ChaosReport, FaultRecord, LoadSettings, NodeExit, PkReadReport, PkReport, Scenario, ScenarioContext, ScenarioSetup, TopologyOverrides } from "./types.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const LOAD_CHILD = fileURLToPath(new URL("./load-child.ts", import.meta.url));
const PK_LOAD_CHILD = fileURLToPath(new URL("./pk-load-child.ts", import.meta.url));
const SUBSCRIBER_CHILD = fileURLToPath(new URL("../test/helpers/subscriber-child.ts", import.meta.url));

export const DEFAULT_LOAD: LoadSettings = { ratePerSec: 2000, rawShare: 0.2, poison: false, maxRows: 2_000_000 };
/** Load keeps running this long after the last fault, so every bucket gets rows published after it. */
const TAIL_MS = 5000;

export interface RunOptions {
  scenario: Scenario;
  seed: number;
  run: number;
  durationMs?: number;
  nats: NatsChoice;
  reportsDir: string;
  keep: boolean;
  verbose: boolean;
  /** The warehouse in S3 (a SeaweedFS per run) instead of a directory. */
  s3?: boolean;
  /** Users and least-privilege permissions on the servers, every process connecting as its role. */
  auth?: boolean;
  /** Mutual TLS on every server (NATS client ports and routes, Redis), every process given the CA and a client certificate. */
  tls?: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Starts `script` with `env` over this process's environment (a role's credentials travel there, never in `args`). */
function spawnTsx(script: string, args: string[], env: Record<string, string>, logFile: string, stdoutFile?: string): ChildProcess {
  const err = openSync(logFile, "a");
  const out = stdoutFile ? openSync(stdoutFile, "a") : err;
  try {
    const p = spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: REPO, stdio: ["ignore", out, err], env: { ...process.env, ...env } });
    trackPid(p.pid, script);
    p.once("exit", () => untrackPid(p.pid));
    return p;
  } finally {
    closeSync(err);
    if (out !== err) closeSync(out);
  }
}

function waitChild(p: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), timeoutMs);
    p.once("exit", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

function stopChild(p: ChildProcess | null, signal: NodeJS.Signals = "SIGKILL"): void {
  if (p && p.exitCode === null && p.signalCode === null) p.kill(signal);
}

/** Waits until the latest snapshot covers every message left in the ingest stream (raw ones routed and purged). */
async function waitQuiescent(t: Topology, buckets: number, timeoutMs: number): Promise<boolean> {
  const subjects = new Subjects();
  const id = parseIdentifier(TABLE);
  const stream = subjects.ingestStream(id);
  const deadline = Date.now() + timeoutMs;
  const catalog = new Catalog(t.warehouse);
  for (;;) {
    try {
      const jsm = await jetstreamManager(t.nc, { timeout: 5000 });
      const table = await catalog.getTable(id);
      const latest = await table.snapshots.latest();
      const st = latest ? natslakeState(latest) : null;
      let done = (await jsm.streams.getMessage(stream, { last_by_subj: subjects.ingestRaw(id) })) === null;
      for (let b = 0; done && b < buckets; b++) {
        const m = await jsm.streams.getMessage(stream, { last_by_subj: subjects.ingestBucket(id, b) });
        if (m !== null && m.seq > Number(st?.buckets.get(b)?.offset ?? 0n)) done = false;
      }
      if (done) return true;
    } catch {
      // a snapshot being written or NATS busy: look again
    }
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
}

/** How long the writers' compactions have to move a first-row table's level 0 up once everything is committed. */
const LEVEL0_UP_WITHIN_MS = 60_000;

/** Waits (up to LEVEL0_UP_WITHIN_MS) until the latest snapshot has no file at level 0; how long it took, null if it did not. */
async function waitLevel0Up(t: Topology): Promise<number | null> {
  const from = Date.now();
  const up = await waitUntil(async () => ((await level0Files(t.warehouse, TABLE).catch(() => -1)) === 0 ? true : null), LEVEL0_UP_WITHIN_MS, 100);
  const ms = up === null ? null : Date.now() - from;
  t.event(ms === null ? `files still at level 0 after ${LEVEL0_UP_WITHIN_MS / 1000} s` : `level 0 compacted up ${ms} ms after quiescence`);
  return ms;
}

/** The table of the scenario's workload: the primary-key table of its engine's model (the append table needs no override). */
function workloadTable(s: Scenario): TopologyOverrides | undefined {
  if (s.workload === undefined) return undefined;
  const e = ENGINE_WORKLOADS[s.workload.engine ?? "deduplicate"];
  return { table: { columns: e.columns, primaryKeys: e.primaryKeys }, tableOptions: e.options };
}

/** The scenario's static overrides with those its setup returned on top (node environments merged per node). */
function mergeOverrides(a: TopologyOverrides | undefined, b: TopologyOverrides | undefined): TopologyOverrides | undefined {
  if (!a || !b) return a ?? b;
  const nodeEnv: Record<string, Record<string, string>> = { ...a.nodeEnv };
  for (const [id, env] of Object.entries(b.nodeEnv ?? {})) nodeEnv[id] = { ...nodeEnv[id], ...env };
  return { ...a, ...b, nodeEnv, env: { ...a.env, ...b.env }, tableOptions: { ...a.tableOptions, ...b.tableOptions } };
}

async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export async function runScenario(o: RunOptions): Promise<ChaosReport> {
  const s = o.scenario;
  const started = Date.now();
  const durationMs = o.durationMs ?? s.defaultDurationMs;
  const load: LoadSettings = { ...DEFAULT_LOAD, ...s.load };
  const dir = mkdtempSync(join(tmpdir(), `natslake-chaos-${s.name.replace(/[^A-Za-z0-9_-]/g, "_")}-`));
  const rng = createRng(o.seed);
  const faults: FaultRecord[] = [];
  const say = (msg: string): void => {
    if (o.verbose) process.stderr.write(`  [${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
  };
  let topology: Topology | null = null;
  let loadProc: ChildProcess | null = null;
  let subProc: ChildProcess | null = null;
  let tearingDown = false;
  let error: string | undefined;
  let setup: ScenarioSetup = {};
  const expectations: Array<{ name: string; ok: boolean; detail: string }> = [];
  let exits: NodeExit[] = [];
  const report: ChaosReport = {
    scenario: s.name,
    seed: o.seed,
    run: o.run,
    startedAt: new Date(started).toISOString(),
    durationMs: 0,
    natsServer: o.nats.label,
    warehouse: o.s3 === true ? "S3" : "local directory",
    auth: o.auth === true,
    tls: o.tls === true,
    faults,
    rows: { published: 0, acknowledged: 0, unknown: 0, failed: 0, found: 0, deadLettered: 0, poison: 0, poisonInDlq: 0, unexpected: 0, failedButPresent: 0 },
    lost: 0,
    duplicated: 0,
    reordered: 0,
    samples: { lost: [], duplicated: [], reordered: [] },
    infraLoss: { streamMissing: false, ackedMissingFromStream: 0, detail: "" },
    snapshotsChecked: 0,
    filesChecked: 0,
    orphanFiles: 0,
    orphanManifests: 0,
    tempFiles: 0,
    subscriber: { notifications: 0, firstId: null, lastId: null, gaps: [] },
    recoveryBudgetMs: 0,
    invariants: {},
    pypaimonRows: null,
    compaction: { compactSnapshots: 0, liveFilesPerBucket: {}, compactedLiveFiles: 0 },
    exits: [],
    logsDir: null,
    ok: false,
  };
  try {
    if (s.setup) setup = await withDeadline(s.setup({ dir, seed: o.seed, log: say }), 120_000, `${s.name}: setup`);
    if (setup.skip !== undefined) throw new SkipRun(setup.skip);
    const overrides = mergeOverrides(mergeOverrides(workloadTable(s), s.topology), setup.topology);
    if (o.s3 === true && overrides?.warehouse !== undefined) throw new SkipRun(`${s.name} needs its warehouse in a directory of its own (${overrides.warehouse}); it does not run with --s3`);
    say(`starting the topology in ${dir}`);
    // With TLS too, the users are nkeys: the strongest set-up the product documents short of operator JWTs.
    const auth = o.auth === true ? newChaosAuth(o.tls === true ? { nkeysDir: join(dir, "nkeys") } : {}) : undefined;
    if (auth !== undefined) report.natsCredentials = auth.natsCredentials;
    topology = await Topology.start({ dir, nats: o.nats, ...(overrides ? { overrides } : {}), verbose: o.verbose, s3: o.s3 === true, ...(auth !== undefined ? { auth } : {}), ...(o.tls === true ? { tls: newChaosTls(dir) } : {}) });
    const t = topology;
    if (t.s3 !== null) report.warehouse = t.s3.label;
    const budget = t.leaseTtlMs + t.commitIntervalMs + 10_000;
    report.recoveryBudgetMs = budget;

    // The subscriber, attached to the NATS node the built-in nemeses never kill.
    const subscriberFile = join(dir, "subscriber.jsonl");
    subProc = spawnTsx(SUBSCRIBER_CHILD, [t.natsUrls[t.subscriberNats]!, TABLE, String(durationMs + 900_000)], t.envFor("consumer"), join(dir, "logs", "subscriber.log"), subscriberFile);
    await sleep(1500);

    // The load, bounded in rows and time; stopped early (SIGTERM) a few seconds after the fault script is done.
    const loadFile = join(dir, "load.jsonl");
    const hardCapMs = durationMs + 300_000;
    const maxRows = Math.min(load.maxRows, Math.ceil((load.ratePerSec * hardCapMs) / 1000));
    const w = s.workload;
    const spec: LoadSpec | PkLoadSpec =
      w === undefined
        ? { urls: [...t.natsUrls], table: TABLE, out: loadFile, ratePerSec: load.ratePerSec, durationMs: hardCapMs, maxRows, rawShare: load.rawShare, poison: load.poison, batch: 100 }
        : { urls: [...t.natsUrls], table: TABLE, out: loadFile, seed: o.seed, ratePerSec: load.ratePerSec, durationMs: hardCapMs, maxChanges: maxRows, keys: w.keys, deleteShare: w.deleteShare, updateShare: w.updateShare, producers: w.producers, engine: w.engine ?? "deduplicate" };
    const specFile = join(dir, "load-spec.json");
    writeFileSync(specFile, JSON.stringify(spec));
    const loadStartedAt = Date.now();
    loadProc = spawnTsx(w === undefined ? LOAD_CHILD : PK_LOAD_CHILD, [specFile], t.envFor("producer"), join(dir, "logs", "load.log"));
    const loadExited = waitChild(loadProc, hardCapMs + 120_000);
    t.event("load started", { ratePerSec: load.ratePerSec, durationMs, ...(w === undefined ? { rawShare: load.rawShare, poison: load.poison } : { workload: w }) });

    const ctx: ScenarioContext = {
      topology: t,
      rng,
      seed: o.seed,
      durationMs,
      loadStartedAt,
      record: (f) => {
        faults.push(f);
        t.event(`fault: ${f.name} on ${f.target}`, { fired: f.fired ?? true, ...(f.detail ?? {}) });
        return f;
      },
      sleep: async (ms) => {
        await sleep(Math.min(ms, 600_000));
        if (tearingDown) throw new Error("the run is being torn down");
      },
      log: (msg) => t.event(msg),
      expect: (name, ok, detail) => {
        expectations.push({ name, ok, detail });
        t.event(`expectation ${ok ? "met" : "NOT met"}: ${name}`, { detail });
      },
    };
    let scriptTimer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        s.run(ctx),
        new Promise<never>((_, reject) => {
          scriptTimer = setTimeout(() => reject(new Error(`the fault script did not finish within ${durationMs + 180_000} ms`)), durationMs + 180_000);
        }),
      ]);
    } finally {
      clearTimeout(scriptTimer);
    }
    const lastEvent = Math.max(loadStartedAt, ...faults.flatMap((f) => [f.injectedAt, f.healedAt ?? 0]));
    const stopAt = Math.max(loadStartedAt + durationMs, lastEvent + TAIL_MS);
    await Promise.race([sleep(Math.max(0, stopAt - Date.now())), loadExited]);
    stopChild(loadProc, "SIGTERM");
    if (!(await waitChild(loadProc, 120_000))) {
      stopChild(loadProc);
      throw new Error("the load generator did not finish within 120 s of being stopped");
    }
    if (loadProc.exitCode !== 0) throw new Error(`the load generator failed (exit ${loadProc.exitCode ?? loadProc.signalCode}); see ${join(dir, "logs", "load.log")}`);
    t.event("load stopped");

    const buckets = overrides?.buckets ?? 4;
    const quiet = await waitQuiescent(t, buckets, 120_000);
    t.event(quiet ? "everything acknowledged is committed" : "not quiescent after 120 s; verifying what is there");
    // first-row: batch reads skip level 0, so the verdict waits until the writers' compactions have moved it up.
    const level0UpMs = quiet && w?.engine === "first-row" ? await waitLevel0Up(t) : undefined;
    await sleep(1500); // the last notifications reach the subscriber
    stopChild(subProc, "SIGTERM");
    await waitChild(subProc, 5000);
    exits = [...t.exits];
    await t.stopNodes();
    const stoppedAt = Date.now();

    const verdict = await (w === undefined ? verify : verifyPk)({ warehouse: await t.verifiableWarehouse(), table: TABLE, nc: t.nc, loadFile, subscriberFile, faults, recoveryBudgetMs: budget, stoppedAt, ...(s.expectCompaction ? { expectCompaction: s.expectCompaction } : {}), ...(w?.engine !== undefined ? { engine: w.engine } : {}) });
    Object.assign(report, verdict);
    if (level0UpMs !== undefined && report.pk !== undefined) {
      report.pk.level0UpMs = level0UpMs;
      report.invariants["level 0 compacted up"] = {
        ok: level0UpMs !== null,
        detail: level0UpMs === null ? `files were still at level 0 ${LEVEL0_UP_WITHIN_MS / 1000} s after everything acknowledged was committed: a first-row read does not show them` : `no file left at level 0 ${level0UpMs} ms after everything acknowledged was committed (batch reads of a first-row table skip level 0)`,
      };
    }
    for (const x of expectations) {
      const key = `expect: ${x.name}`;
      const prev = report.invariants[key];
      // The same expectation checked more than once: it holds only if it held every time.
      report.invariants[key] = prev ? { ok: prev.ok && x.ok, detail: `${prev.detail}; ${x.detail}` } : { ok: x.ok, detail: x.detail };
    }
    const unfired = faults.filter((f) => f.fired === false);
    report.invariants["faults"] = {
      ok: unfired.length === 0,
      detail: unfired.length === 0 ? `${faults.length} faults injected` : `${unfired.length} planned faults did not happen: ${unfired.map((f) => `${f.name} (${String(f.detail?.["why"] ?? "")})`).join("; ")}`,
    };
    // Exits while the topology started (restarted by it) are listed in the report but judged only from the load on.
    const unexpected = exits.filter((e) => !e.requested && e.failpoint === undefined && e.at >= loadStartedAt);
    report.invariants["processes"] = {
      ok: unexpected.length === 0,
      detail: unexpected.length === 0 ? "no node process died on its own (only requested kills and armed failpoints)" : unexpected.map((e) => `${e.id} (pid ${e.pid}) exited by itself: code ${e.code}, signal ${e.signal}`).join("; "),
    };
    if (!quiet) report.invariants["quiescence"] = { ok: false, detail: "the cluster did not commit everything in the ingest stream within 120 s of the load's end" };
  } catch (e) {
    if (e instanceof SkipRun) report.skipped = e.message;
    else error = e instanceof Error ? (e.stack ?? e.message) : String(e);
  } finally {
    tearingDown = true;
    stopChild(loadProc);
    stopChild(subProc);
    if (topology) {
      if (exits.length === 0) exits = [...topology.exits];
      await topology.teardown().catch((e: unknown) => {
        error ??= `teardown: ${String(e)}`;
      });
      // After the teardown: the servers' logs are complete (the verifier's own requests included).
      if (topology.auth || topology.tls) report.invariants["permissions"] = permissionsInvariant(topology.natsLogFiles, { tls: topology.tls });
    }
    if (setup.cleanup) {
      await withDeadline(setup.cleanup(), 60_000, `${s.name}: cleanup`).catch((e: unknown) => {
        error ??= `cleanup: ${e instanceof Error ? e.message : String(e)}`;
      });
    }
  }
  report.exits = exits;
  report.durationMs = Date.now() - started;
  if (error !== undefined) report.error = error;
  report.ok = error === undefined && report.skipped === undefined && Object.keys(report.invariants).length > 0 && Object.values(report.invariants).every((i) => i.ok);

  mkdirSync(o.reportsDir, { recursive: true });
  const base = `${report.startedAt.replace(/[:.]/g, "-")}-${s.name.replace(/[^A-Za-z0-9_.@-]/g, "_")}-seed${o.seed}-run${o.run}`;
  if ((!report.ok && report.skipped === undefined) || o.keep) {
    const logsDir = join(o.reportsDir, `${base}-logs`);
    try {
      cpSync(join(dir, "logs"), logsDir, { recursive: true });
      for (const f of ["load.jsonl", "subscriber.jsonl"]) cpSync(join(dir, f), join(logsDir, f));
    } catch {
      // whatever exists was copied
    }
    report.logsDir = relative(process.cwd(), logsDir) || logsDir;
    if (o.keep) report.logsDir += ` (run directory kept: ${dir})`;
  }
  const reportPath = join(o.reportsDir, `${base}.json`);
  writeFileSync(reportPath, JSON.stringify(report, null, 2) + "\n");
  if (!o.keep) rmSync(dir, { recursive: true, force: true });
  process.stdout.write(summary(report, relative(process.cwd(), reportPath) || reportPath));
  return report;
}

const secs = (ms: number | undefined): string => (ms === undefined ? "-" : `${(ms / 1000).toFixed(1)} s`);

/** The human summary of one run. */
export function summary(r: ChaosReport, reportPath: string): string {
  const lines: string[] = [];
  lines.push(`${r.skipped !== undefined ? "SKIP" : r.ok ? "PASS" : "FAIL"}  ${r.scenario}  run ${r.run}  seed ${r.seed}  ${secs(r.durationMs)}`);
  if (r.skipped !== undefined) lines.push(`  skipped: ${r.skipped}`);
  lines.push(`  against ${r.natsServer}${r.warehouse !== undefined ? `; warehouse: ${r.warehouse}` : ""}${r.auth !== undefined ? `; auth ${r.auth ? `on (${r.natsCredentials === "nkey" ? "an nkey" : "a user and password"} per role, least privilege; Redis ACL)` : "off"}` : ""}${r.tls !== undefined ? `; TLS ${r.tls ? "on (mutual TLS: NATS client ports and routes, Redis)" : "off"}` : ""}`);
  const w = r.rows;
  lines.push(
    `  ${r.pk ? "changes" : "rows"}: ${w.published} published, ${w.acknowledged} acknowledged, ${w.unknown} unknown, ${w.failed} failed; ${w.found} in the table (pypaimon: ${r.pypaimonRows ?? "n/a"}), ${w.deadLettered} dead letters` +
      (w.poison > 0 ? ` (${w.poisonInDlq}/${w.poison} poison items in the DLQ)` : ""),
  );
  lines.push(`  lost ${r.lost}  duplicated ${r.duplicated}  reordered ${r.reordered}  infra-loss ${r.infraLoss.ackedMissingFromStream}${r.infraLoss.streamMissing ? " (a stream is missing)" : ""}`);
  if (r.pk) lines.push(...pkSummary(r.pk));
  lines.push(`  snapshots ${r.snapshotsChecked}, data files ${r.filesChecked}; orphans: ${r.orphanFiles} data files, ${r.orphanManifests} manifests, ${r.tempFiles} temp files`);
  const live = Object.values(r.compaction.liveFilesPerBucket);
  lines.push(`  compaction: ${r.compaction.compactSnapshots} COMPACT snapshots; live files per bucket at the end ${live.length > 0 ? `${Math.min(...live)}–${Math.max(...live)}` : "-"} (${r.compaction.compactedLiveFiles} from compactions)`);
  lines.push(`  subscriber: ${r.subscriber.notifications} notifications (${r.subscriber.firstId ?? "-"}..${r.subscriber.lastId ?? "-"}), gaps ${r.subscriber.gaps.length}`);
  if (r.faults.length > 0) lines.push(`  faults (recovery budget ${secs(r.recoveryBudgetMs)}):`);
  const t0 = Date.parse(r.startedAt);
  for (const f of r.faults) {
    const rec = f.fired === false ? "did not fire" : `recovered in ${secs(f.effectiveRecoveryMs)}${f.recoveryMs !== f.effectiveRecoveryMs ? ` (${secs(f.recoveryMs)} from this fault)` : ""}`;
    lines.push(`    +${secs(f.injectedAt - t0).padStart(7)}  ${f.name} on ${f.target}${f.healedAt ? `, healed +${secs(f.healedAt - t0)}` : ""} → ${rec}`);
  }
  for (const [k, v] of Object.entries(r.invariants)) lines.push(`  ${v.ok ? "ok  " : "FAIL"} ${k}: ${v.detail}`);
  if (r.error) lines.push(`  harness error: ${r.error.split("\n").slice(0, 3).join(" | ")}`);
  if (r.logsDir) lines.push(`  logs: ${r.logsDir}`);
  lines.push(`  report: ${reportPath}`);
  return lines.join("\n") + "\n\n";
}

/** The primary-key workload's lines of the summary: each engine's read next to the model, and the levels. */
function pkSummary(pk: PkReport): string[] {
  const read = (who: string, x: PkReadReport | null): string =>
    x === null
      ? `${who}: could not read`
      : `${who}: ${x.rows} rows (model ${x.expectedRows}, ${x.ambiguous} after an unacknowledged change), missing ${x.missing}, resurrected ${x.resurrected}, stale ${x.stale}, unexpected ${x.unexpected}, keys twice ${x.duplicateKeys}${x.unverifiable > 0 ? `, unverifiable ${x.unverifiable}` : ""}`;
  const lv = pk.levels;
  return [
    `  primary key (${pk.engine}${pk.level0UpMs === undefined ? "" : `; level 0 compacted up ${pk.level0UpMs === null ? "not within the bound" : `${pk.level0UpMs} ms after quiescence`}`}): ${pk.keys} keys, ${pk.changes.published} changes (${pk.changes.acknowledged} acknowledged, ${pk.changes.unknown} unknown, ${pk.changes.failed} failed); engines ${pk.enginesAgree ? "agree" : "DISAGREE"}`,
    `    ${read("natslake", pk.natslake)}`,
    `    ${read("pypaimon", pk.pypaimon)}`,
    `    levels: ${lv.trees} bucket trees at ${lv.snapshots} snapshots (${lv.compactSnapshots} COMPACT), ${lv.withUpperLevels} with files at level ≥ 1 (max level ${lv.maxLevel}), ${lv.problems} broken; sequence chain breaks ${pk.sequenceProblems}`,
    `    flushes: ${pk.flushes.changes} changes in ${pk.flushes.files} flushed files, ${pk.flushes.problems} flushed twice or outside their snapshot's offsets`,
  ];
}

/** Thrown when a scenario's setup says it cannot run on this machine. */
class SkipRun extends Error {}
