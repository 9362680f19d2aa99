/**
 * The chaos suite's vocabulary: a scenario drives a topology (real processes on loopback) under a bounded workload,
 * injects faults through nemeses, and hands the history to the verifier, which writes the report.
 *
 * Nothing in the product imports chaos/; the CLI starts the chaos runner as a separate process.
 *
 * Plugging in (infrastructure nemeses in chaos/nemesis/, new scenarios in chaos/scenarios/):
 * - a scenario is a file in chaos/scenarios/ exporting `scenarios: Scenario[]`; the runner finds every such file
 *   (chaos/scenarios/index.ts), so adding one needs no registry edit;
 * - a scenario can change the topology before it starts (`Scenario.topology`: a warehouse on a small tmpfs, a node's
 *   environment such as LD_PRELOAD or FAILPOINTS, a node's NATS URL pointing at a proxy) and inject faults through
 *   the `TopologyHandle` it is given (`ScenarioContext.topology`);
 * - a `Nemesis` (inject + heal, each bounded in time) made by a `NemesisFactory` from a `NemesisContext` can be
 *   handed to the seeded soak: chaos/scenarios/soak.ts takes every factory of `soakNemeses` (chaos/faults.ts) plus
 *   those exported as `infraNemeses` by chaos/nemesis/index.ts when that module exists.
 */
import type { PkChangeOutcome } from "../test/helpers/pk-model.ts";
import type { PkEngine } from "../test/helpers/pk-engines.ts";

/** One process of the topology that faults can target. */
export type Target =
  | { kind: "node"; id: string }
  | { kind: "nats"; index: number }
  | { kind: "redis" }
  | { kind: "load" };

/** A fault as it happened (recorded in the report with its timestamps). */
export interface FaultRecord {
  name: string;
  target: string;
  /** Wall-clock epoch ms when the fault was injected (for a failpoint: when the armed process died at it). */
  injectedAt: number;
  /** When it was healed (restart, SIGCONT, proxy reconnected, space freed), if it was. */
  healedAt?: number;
  /**
   * Where recovery is measured from: "injected" (crashes, pauses, node loss: the cluster must recover without the
   * process) or "healed" (Redis down: nothing can commit until it is back). Default "injected".
   */
  recoveryFrom?: "injected" | "healed";
  /** Time from `recoveryFrom` until every bucket committed a row handed to the producer after that moment. */
  recoveryMs?: number;
  /**
   * Recovery measured from the latest fault injected or healed before recovery completed (equals `recoveryMs` unless
   * faults overlapped); this is what I5 compares with the budget.
   */
  effectiveRecoveryMs?: number;
  /** Whether the fault happened at all (an armed failpoint that was never reached did not). Default true. */
  fired?: boolean;
  detail?: Record<string, unknown>;
}

/** A nemesis injects one kind of fault and heals it; both are bounded in time. */
export interface Nemesis {
  readonly name: string;
  inject(): Promise<FaultRecord>;
  /** Heals the fault (no-op for crashes whose process is restarted by the scenario). */
  heal(record: FaultRecord): Promise<void>;
}

/** Outcome of every published row, as the load generator saw it. */
export type RowOutcome = "ok" | "duplicate" | "failed" | "unknown";

// -----------------------------------------------------------------------------------------------------------------
// The load generator's history file (JSON lines, one per message or row; written by chaos/load-child.ts)

/** Rows that must land in the table (when acknowledged). */
export interface LoadRowsLine {
  kind: "rows";
  ids: number[];
  status: RowOutcome;
  src: "client" | "raw";
  /** The bucket subject (−1: the table's bare subject, routed by the cluster). */
  bucket: number;
  /** Stream sequence of the acknowledged message. */
  seq?: number;
  /** When the rows were handed to the client (epoch ms). */
  at: number;
}

/** Rows (by id) or whole payloads (by marker) that must end in the dead-letter stream, never in the table. */
export interface LoadPoisonLine {
  kind: "poison";
  ids: number[];
  /** Undecodable payloads: a marker string inside the bytes (the DLQ keeps them base64-encoded). */
  markers: string[];
  status: RowOutcome;
  via: "raw" | "batch";
  bucket: number;
  seq?: number;
  at: number;
  what: string;
}

/** The load generator's summary, the last line of the file. */
export interface LoadDoneLine {
  kind: "done";
  /** Rows published (the primary-key workload: changes). */
  rows: number;
  startedAt: number;
  endedAt: number;
  stoppedBy: "duration" | "count" | "signal";
}

/** One change of the primary-key workload (chaos/pk-load-child.ts) and its outcome. */
export interface LoadChangeLine extends PkChangeOutcome {
  kind: "change";
}

export type LoadLine = LoadRowsLine | LoadPoisonLine | LoadChangeLine | LoadDoneLine;

// -----------------------------------------------------------------------------------------------------------------
// Topology and scenarios

export type NodeRole = "writer" | "committer" | "reader";

/** What scenarios and nemeses may do with the running topology (chaos/topology.ts implements it). */
export interface TopologyHandle {
  readonly dir: string;
  readonly warehouse: string;
  readonly table: string;
  readonly natsUrls: readonly string[];
  readonly redisUrl: string;
  readonly commitIntervalMs: number;
  readonly leaseTtlMs: number;
  nodeIds(role?: NodeRole): string[];
  nodePid(id: string): number | undefined;
  isRunning(id: string): boolean;
  /** Every node exit so far, in order. */
  readonly exits: readonly NodeExit[];
  /** The log of node `id`'s current (or last) process. */
  nodeLog(id: string): string;
  /** Starts (or restarts, when it is not running) node `id` with extra environment (e.g. FAILPOINTS) and, optionally, another NATS URL. */
  startNode(id: string, opts?: { env?: Record<string, string>; nats?: string }): void;
  signalNode(id: string, signal: NodeJS.Signals): void;
  /** Resolves with the exit (code, signal, time) or null after `timeoutMs`. */
  waitExit(id: string, timeoutMs: number): Promise<NodeExit | null>;
  /** The node that currently leads the table (fresh heartbeat listing it), or null. */
  leader(): Promise<string | null>;
  /** Writer nodes that own at least one bucket of the table. */
  bucketOwners(): Promise<Map<number, string>>;
  /** Waits until every bucket is owned by a live node; false after `timeoutMs`. */
  waitBalanced(timeoutMs: number): Promise<boolean>;
  natsPid(index: number): number | undefined;
  /** Index of the NATS node that leads the table's ingest stream (-1 when unknown). */
  ingestStreamLeader(): Promise<number>;
  /** Per NATS node (by index), how many consumers of the table's ingest and commit streams it hosts (natslake's readers). */
  consumerHosts(): Promise<number[]>;
  killNats(index: number): Promise<void>;
  restartNats(index: number): Promise<void>;
  /** Index of the NATS node the subscriber is attached to (kept up by the built-in nemeses, see the verifier's I6). */
  readonly subscriberNats: number;
  redisPid(): number | undefined;
  /** Stops redis-server (SIGTERM, or SIGKILL with `crash`); `startRedis` brings it back on the same port. */
  stopRedis(crash?: boolean): Promise<void>;
  startRedis(): Promise<void>;
  /**
   * Asks the table's leader for a compaction — the maintenance request `natslake compact --nats` sends: `full` every
   * sorted run of each bucket into the max level (primary-key tables), else the table's own pick. Resolves with the
   * node that ran it and the snapshot it linked (null: nothing to compact); rejects when no leader took it within
   * `acceptTimeoutMs` (default 10 s), when the leader went silent mid-job for 10 s (its keepalive comes every 2 s: it
   * was killed or drained) or the job failed.
   */
  requestCompaction(o: { full: boolean; acceptTimeoutMs?: number }): Promise<{ node: string; snapshotId: number | null }>;
  /** A line in the run's event log (also printed with --verbose). */
  event(msg: string, fields?: Record<string, unknown>): void;
}

export interface NodeExit {
  id: string;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
  /** The failpoint that fired, when the process died at one (from its log). */
  failpoint?: string;
  /** Whether the runner asked for it (kill/stop) or not. */
  requested: boolean;
}

/** Options a scenario may change before its topology starts (infra nemeses: tmpfs warehouse, proxies, LD_PRELOAD). */
export interface TopologyOverrides {
  writers?: number;
  committers?: number;
  readers?: number;
  buckets?: number;
  commitInterval?: string;
  leaseTtl?: string;
  /** Warehouse directory (default: inside the run directory). */
  warehouse?: string;
  /** Options of the table the load writes (beside its bucket count and key), e.g. aggressive retention. */
  tableOptions?: Record<string, string>;
  /** The table's columns and primary key, when not the default append table (`id BIGINT NOT NULL, src STRING, n INT`). */
  table?: { columns: string; primaryKeys: string[] };
  /** Environment per node id at its first start (e.g. `{ w1: { FAILPOINTS: "io.write.mid:kill@5" } }`). */
  nodeEnv?: Record<string, Record<string, string>>;
  /**
   * Environment of every node at every start, restarts by faults included (e.g. node settings such as
   * `NATSLAKE_COMPACTION_INTERVAL`); what a start passes itself (`nodeEnv`, an armed failpoint) goes on top.
   */
  env?: Record<string, string>;
  /** The NATS URL(s) a node connects to (default: every server of the cluster). */
  natsUrlFor?: (nodeId: string, urls: readonly string[]) => string;
}

/** A seeded pseudo-random source (chaos/prng.ts). */
export interface Rng {
  readonly seed: number;
  /** [0, 1) */
  next(): number;
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
}

export interface ScenarioContext {
  readonly topology: TopologyHandle;
  readonly rng: Rng;
  readonly seed: number;
  /** The load's planned duration; the fault script must be done well before it ends. */
  readonly durationMs: number;
  /** Epoch ms when the load started. */
  readonly loadStartedAt: number;
  record(f: FaultRecord): FaultRecord;
  /**
   * A scenario's own expectation (e.g. "the cut writer owns buckets again after the heal"): reported as the invariant
   * `expect: <name>` next to I1–I7; a false one fails the run.
   */
  expect(name: string, ok: boolean, detail: string): void;
  /** Bounded sleep; rejects when the run is being torn down. */
  sleep(ms: number): Promise<void>;
  log(msg: string): void;
}

export interface LoadSettings {
  ratePerSec: number;
  /** Share of messages published raw to the bare subject (routed by the leader's router). */
  rawShare: number;
  /** Mix poison rows into the load (wrong types raw and in bad RowBatches, undecodable payloads). */
  poison: boolean;
  maxRows: number;
}

/** What a scenario that makes writers compact often expects of it at the end (the verifier's `compaction` invariant). */
export interface CompactionExpectation {
  /** Live data files of any bucket in the latest snapshot at most. */
  maxLiveFilesPerBucket: number;
}

/**
 * The primary-key workload: instead of numbered append rows, upserts, updates and deletes over a bounded key space
 * (keys repeat) into a primary-key table, through the producer client (test/helpers/pk-load.ts, in
 * chaos/pk-load-child.ts), judged against the model of every acknowledged change (chaos/pk-verifier.ts).
 */
export interface PkWorkload {
  kind: "pk-upserts";
  /**
   * The table's merge engine (default deduplicate): its columns, options, rows and model are
   * test/helpers/pk-engines.ts's. Only deduplicate's load retracts keys (`deleteShare` 0 for the others).
   */
  engine?: PkEngine;
  /** Keys 0 … keys − 1. */
  keys: number;
  /** Share of changes that delete their key. */
  deleteShare: number;
  /** Share of changes that update their key with +U (half of them after a -U). */
  updateShare: number;
  /** Producers, each with its own connection; keys are partitioned between them so each key has one publisher. */
  producers: number;
}

export interface Scenario {
  /** Unique; `natslake chaos run <name>` (a prefix selects several: `writer-kill` runs every writer failpoint). */
  name: string;
  description: string;
  /** In the CI subset (`npm run chaos:ci`). */
  ci?: boolean;
  /** In the full suite (`npm run chaos` without names); default true. Variants run by name only. */
  suite?: boolean;
  /** The load's duration when `--duration` is not given (ms). */
  defaultDurationMs: number;
  load?: Partial<LoadSettings>;
  /** What the load writes and how the run is judged; default: numbered rows appended (chaos/load-child.ts, verifier.ts). */
  workload?: PkWorkload;
  topology?: TopologyOverrides;
  /**
   * Set: the verifier also judges writer-side compaction (invariant `compaction`): COMPACT snapshots landed, a live
   * file written by a compaction, and at most this many live files per bucket at the end.
   */
  expectCompaction?: CompactionExpectation;
  /**
   * Runs before the topology starts (bounded by the runner): prepares what must exist at the nodes' first start — a
   * warehouse on a small tmpfs, a slow-fsync or libfaketime control file in a node's environment — and returns the
   * topology overrides merged over `topology`, and a cleanup the runner calls after the topology is stopped and the
   * run verified (also after a failure). `{ skip: reason }`: the scenario cannot run on this machine; the run is
   * reported as skipped with that reason (never as passed).
   */
  setup?(run: ScenarioRun): Promise<ScenarioSetup>;
  /** The fault script: runs while the load runs; every wait in it is bounded. */
  run(ctx: ScenarioContext): Promise<void>;
}

export interface ScenarioRun {
  /** The run's directory (removed after the run unless --keep). */
  readonly dir: string;
  readonly seed: number;
  log(msg: string): void;
}

export interface ScenarioSetup {
  topology?: TopologyOverrides;
  /** Releases what `setup` (and the fault script) acquired: unmounts, closes proxies and control files. Bounded. */
  cleanup?(): Promise<void>;
  /** Set when the scenario cannot run here: why (e.g. mount(2) refused). */
  skip?: string;
}

/**
 * Makes a nemesis for one injection of the seeded soak (called again for every injection, so it may pick its target
 * from the current state, e.g. the leader); null when it cannot run now or on this machine (it says why in `log`).
 */
export type NemesisFactory = (ctx: NemesisContext) => Nemesis | null | Promise<Nemesis | null>;

export interface NemesisContext {
  readonly topology: TopologyHandle;
  readonly rng: Rng;
  log(msg: string): void;
}

// -----------------------------------------------------------------------------------------------------------------
// The report

export interface InvariantResult {
  ok: boolean;
  detail: string;
}

export interface ChaosReport {
  scenario: string;
  seed: number;
  run: number;
  startedAt: string;
  durationMs: number;
  natsServer: string;
  /** Where the warehouse was: "local directory", or the object store (`chaos run --s3`). Absent in older reports. */
  warehouse?: string;
  /**
   * Whether the servers required users, every process connecting as its role (`chaos run --auth`); with it the
   * invariants include `permissions`. Absent in older reports.
   */
  auth?: boolean;
  /** With `auth`: how the NATS users signed in — a password each, or an nkey each (`--auth --tls`). Absent in older reports. */
  natsCredentials?: "password" | "nkey";
  /**
   * Whether the servers required mutual TLS (NATS client ports and routes, Redis), every process connecting with the
   * CA and a client certificate (`chaos run --tls`); with it the invariants include `permissions`, where a TLS
   * handshake the servers refused counts. Absent in older reports.
   */
  tls?: boolean;
  faults: FaultRecord[];
  rows: {
    published: number;
    acknowledged: number;
    unknown: number;
    failed: number;
    found: number;
    deadLettered: number;
    /** Poison rows / payloads published, and how many of the acknowledged ones are in the DLQ. */
    poison: number;
    poisonInDlq: number;
    /** Rows in the table that were never published, and definite failures that landed anyway. */
    unexpected: number;
    failedButPresent: number;
  };
  lost: number;
  duplicated: number;
  reordered: number;
  /** A few of the ids behind the counts above (for a first look; the logs are kept with a failed run). */
  samples: { lost: number[]; duplicated: number[]; reordered: number[] };
  /** Acknowledged rows missing because JetStream itself lost them (I7), kept apart from `lost`. */
  infraLoss: { streamMissing: boolean; ackedMissingFromStream: number; detail: string };
  snapshotsChecked: number;
  filesChecked: number;
  orphanFiles: number;
  /** Unreferenced manifests and hidden temp files left by crashes (reported, never a failure). */
  orphanManifests: number;
  tempFiles: number;
  subscriber: { notifications: number; firstId: number | null; lastId: number | null; gaps: number[] };
  recoveryBudgetMs: number;
  /** I1–I7 with pass/fail and a short reason. */
  invariants: Record<string, InvariantResult>;
  pypaimonRows: number | null;
  /** Writer-side compaction as the run saw it (every run; judged only when the scenario sets `expectCompaction`). */
  compaction: { compactSnapshots: number; liveFilesPerBucket: Record<string, number>; compactedLiveFiles: number };
  /** The primary-key workload's findings (absent for the append workload). */
  pk?: PkReport;
  /** Process exits during the run (requested kills and failpoints included). */
  exits: NodeExit[];
  /** Where the run's logs are (kept when the run failed or with --keep). */
  logsDir: string | null;
  /** A failure of the harness itself (the run could not be carried out), if any. */
  error?: string;
  /** Why the scenario did not run on this machine (its `setup` said so); a skipped run is neither passed nor failed. */
  skipped?: string;
  ok: boolean;
}

/** What one engine's read of a primary-key table showed next to the model (test/helpers/pk-model.ts). */
export interface PkReadReport {
  rows: number;
  /** Keys whose last acknowledged change leaves a row. */
  expectedRows: number;
  /** Keys holding the state after an unacknowledged change (allowed: it may have been stored last). */
  ambiguous: number;
  missing: number;
  resurrected: number;
  stale: number;
  unexpected: number;
  duplicateKeys: number;
  /** Keys with too many unacknowledged changes to enumerate the states they allow (aggregation only; 0 normally). */
  unverifiable: number;
  /** A few keys of each finding kind. */
  samples: { missing: number[]; resurrected: number[]; stale: number[]; unexpected: number[]; duplicateKeys: number[] };
}

export interface PkReport {
  /** The table's merge engine. */
  engine: PkEngine;
  keys: number;
  changes: { published: number; acknowledged: number; unknown: number; failed: number };
  natslake: PkReadReport;
  /** Null when pypaimon could not read the table. */
  pypaimon: PkReadReport | null;
  /**
   * first-row: how long after everything acknowledged was committed the writers' compactions left no file at level 0
   * (batch reads skip it), null when it did not happen within the bound; absent for the other engines.
   */
  level0UpMs?: number | null;
  /** natslake and pypaimon read exactly the same rows. */
  enginesAgree: boolean;
  /** The LSM levels of every bucket at every retained snapshot (test/helpers/pk-snapshots.ts). */
  levels: { snapshots: number; trees: number; withUpperLevels: number; maxLevel: number; compactSnapshots: number; problems: number };
  sequenceProblems: number;
  /** Inside the flushed files (chaos/pk-flushes.ts): files and changes looked at, and findings (twice, out of range). */
  flushes: { files: number; changes: number; problems: number };
}
