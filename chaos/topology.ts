/**
 * The chaos topology: every piece a separate OS process on 127.0.0.1 —
 * a 3-node nats-server cluster with JetStream (test/helpers/nats-cluster.ts; streams and KV with 3 replicas),
 * redis-server (cluster/local/servers.ts), writer nodes w1…, committer-capable nodes c1…, reader nodes r1…
 * (`natslake node --roles …`, test/helpers/cluster.ts `spawnNode`), and the table the load goes to, created through
 * the cluster's admin request (served by a reader node): an append table, or the primary-key table of the scenario's
 * workload (`TopologyOverrides.table`).
 *
 * The warehouse is a directory in the run directory, or with `s3` an S3 bucket on a SeaweedFS of the run's own
 * (chaos/s3-warehouse.ts), which the verifier reads through a copy (`verifiableWarehouse`).
 *
 * With `auth` (chaos/auth.ts) the servers require users and every process connects as its role; the runner's own
 * connection (`nc`) is the operator's. With `tls` (chaos/tls.ts) the servers require mutual TLS and every process
 * is given the CA and a client certificate. Every connection the harness opens itself (the runner's, the readiness
 * probe's) goes through cluster/nats/connect.ts `connectNats` with the environment a process of its user gets
 * (`processEnv`), as the nodes' and the load generators' do. The nats-servers' output goes to logs/nats/n<i>.log
 * either way.
 *
 * Every process is registered by PID (chaos/procs.ts) and stopped by PID in `teardown()`, also after a failure.
 */
import { mkdirSync, openSync, readSync, closeSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import type { ConnectionOptions, NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../cluster/nats/connect.ts";
import { Kvm, type KV } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../cluster/nats/subjects.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import { spawnNode } from "../test/helpers/cluster.ts";
import { startNatsCluster, type NatsCluster, type NatsClusterOptions } from "../test/helpers/nats-cluster.ts";
import { startRedis, type RedisOptions, type ServerHandle } from "../cluster/local/servers.ts";
import { adminRequest } from "../cluster/admin-client.ts";
import { requestMaintenance } from "../cluster/maintenance-client.ts";
import type { CompactSummary } from "../src/maintenance/compact-summary.ts";
import { parseDuration } from "../src/options.ts";
import type { MemberHeartbeat, TableAssignment } from "../actors/wire/messages.ts";
import type { NatsChoice } from "./nats-choice.ts";
import { startChaosS3, type ChaosS3 } from "./s3-warehouse.ts";
import { trackPid, untrackPid } from "./procs.ts";
import type { NodeExit, NodeRole, TopologyHandle, TopologyOverrides } from "./types.ts";
import { HARNESS_USER, type ChaosAuth } from "./auth.ts";
import type { ChaosTls } from "./tls.ts";
import { ErrorKind, isLakeError } from "../src/errors.ts";

export const TABLE = "chaos.events";
export const TABLE_COLUMNS = "id BIGINT NOT NULL, src STRING, n INT";

export interface TopologyConfig {
  /** The run's directory: logs/ and (unless overridden) warehouse/. */
  dir: string;
  nats: NatsChoice;
  overrides?: TopologyOverrides;
  /** Print events as they happen. */
  verbose?: boolean;
  /** The warehouse in an S3 bucket on a SeaweedFS of the run's own instead of a directory (`chaos run --s3`). */
  s3?: boolean;
  /** Users and permissions on the servers, each process connecting as its role (`chaos run --auth`). */
  auth?: ChaosAuth;
  /** Mutual TLS on the servers, each process given the CA and a client certificate (`chaos run --tls`). */
  tls?: ChaosTls;
}

/** Who a process connects as: a natslake role, or the harness's own user (with `auth`; the operator's without it). */
export type ConnectingUser = "producer" | "consumer" | "operator" | NodeRole | typeof HARNESS_USER;

/**
 * The connection settings of a process that connects as `user`, as environment variables (cluster/nats/connect-options.ts,
 * cluster/redis/connect-options.ts read them): its TLS files, and its credentials with `auth`. Redis's only for
 * committers, the only processes that talk to it. Nothing when the servers require neither.
 */
export function processEnv(cfg: TopologyConfig, user: ConnectingUser): Record<string, string> {
  const tls = cfg.tls === undefined ? {} : { ...cfg.tls.natsEnv, ...(user === "committer" ? cfg.tls.redisEnv : {}) };
  return { ...tls, ...cfg.auth?.envFor(user) };
}

/**
 * A connection the harness opens itself, through the product's `connectNats` with `user`'s settings only (the
 * runner's own NATSLAKE_* environment, if any, is not the run's).
 */
function harnessConnect(cfg: TopologyConfig, servers: readonly string[], user: "operator" | typeof HARNESS_USER, opts: Omit<ConnectionOptions, "servers">): Promise<NatsConnection> {
  return connectNats(servers.join(","), {}, opts, processEnv(cfg, user));
}

/** Where the nats-servers of a run write their output (`logs/nats/<name>.log`: beside the nodes' logs, kept with them). */
const natsLogDir = (dir: string): string => join(dir, "logs", "nats");

interface NodeSlot {
  id: string;
  roles: NodeRole[];
  logFile: string;
  proc: ChildProcess | null;
  /** Log size when the current incarnation started (its own lines come after). */
  logStart: number;
  requested: boolean;
  exited: Promise<NodeExit> | null;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Topology implements TopologyHandle {
  readonly table = TABLE;
  readonly warehouse: string;
  readonly commitIntervalMs: number;
  readonly leaseTtlMs: number;
  readonly subscriberNats = 0;
  readonly exits: NodeExit[] = [];
  readonly events: Array<{ at: number; msg: string; fields?: Record<string, unknown> }> = [];
  private readonly slots = new Map<string, NodeSlot>();
  private redis: ServerHandle | null = null;
  private readonly redisPort: number;
  private kvs: { members: KV; assign: KV } | null = null;

  private constructor(
    private readonly cfg: TopologyConfig,
    readonly nats: NatsCluster,
    redis: ServerHandle,
    /** The runner's connection: the operator's with `auth`. */
    readonly nc: NatsConnection,
    /** The harness's own connection (HARNESS_USER with `auth`, else `nc`): calls no role makes (consumerHosts). */
    private readonly harnessNc: NatsConnection,
    /** The object store holding the warehouse, when it is not a directory. */
    readonly s3: ChaosS3 | null,
  ) {
    this.redis = redis;
    this.redisPort = redis.port;
    const o = cfg.overrides ?? {};
    if (s3 !== null && o.warehouse !== undefined) throw new Error(`the warehouse is S3, yet the scenario sets it to ${o.warehouse}`);
    this.warehouse = s3?.uri ?? o.warehouse ?? join(cfg.dir, "warehouse");
    this.commitIntervalMs = parseDuration(o.commitInterval ?? "250ms");
    this.leaseTtlMs = parseDuration(o.leaseTtl ?? "2s");
    mkdirSync(join(cfg.dir, "logs"), { recursive: true });
    if (s3 === null) mkdirSync(this.warehouse, { recursive: true });
    const add = (prefix: string, n: number, roles: NodeRole[]): void => {
      for (let i = 1; i <= n; i++) {
        const id = `${prefix}${i}`;
        this.slots.set(id, { id, roles, logFile: join(cfg.dir, "logs", `${id}.log`), proc: null, logStart: 0, requested: false, exited: null });
      }
    };
    add("w", o.writers ?? 3, ["writer"]);
    add("c", o.committers ?? 2, ["committer"]);
    add("r", o.readers ?? 1, ["reader"]);
  }

  /** Starts the servers and every node, creates the table and waits until its buckets are spread over the writers. */
  static async start(cfg: TopologyConfig): Promise<Topology> {
    const auth = cfg.auth;
    mkdirSync(natsLogDir(cfg.dir), { recursive: true });
    const nats = await startNatsCluster(natsClusterOptions(cfg));
    for (const n of nats.nodes) trackPid(n.handle?.pid, `nats-server ${n.name}`);
    let redis: ServerHandle | null = null;
    let nc: NatsConnection | null = null;
    let harnessNc: NatsConnection | null = null;
    let s3: ChaosS3 | null = null;
    try {
      redis = await startRedis(redisOptions(cfg));
      trackPid(redis.pid, "redis-server");
      if (cfg.s3 === true) {
        s3 = await startChaosS3(join(cfg.dir, "seaweedfs"));
        trackPid(s3.server.pid, "weed (SeaweedFS)");
      }
      const connectAs = (user: "operator" | typeof HARNESS_USER, name: string): Promise<NatsConnection> =>
        harnessConnect(cfg, nats.urls, user, { maxReconnectAttempts: -1, reconnectTimeWait: 100, name });
      nc = await connectAs("operator", "chaos-runner");
      harnessNc = auth ? await connectAs(HARNESS_USER, "chaos-harness") : nc;
      const t = new Topology(cfg, nats, redis, nc, harnessNc, s3);
      t.event("servers started", { nats: nats.urls, redis: redis.url, auth: auth !== undefined, tls: cfg.tls !== undefined, ...(s3 ? { s3: s3.server.endpoint } : {}) });
      try {
        // Committers first: c1 becomes the leader (scenarios that arm a committer rely on knowing who leads).
        const env = (id: string): Record<string, string> => cfg.overrides?.nodeEnv?.[id] ?? {};
        for (const id of t.nodeIds("committer")) t.startNode(id, { env: env(id) });
        await t.waitMembers(t.nodeIds("committer"), 90_000, env);
        for (const id of [...t.nodeIds("reader"), ...t.nodeIds("writer")]) t.startNode(id, { env: env(id) });
        await t.waitMembers(t.nodeIds(), 90_000, env);
        await t.createTable(cfg.overrides?.buckets ?? 4);
        if (!(await t.waitBalanced(90_000))) throw new Error(`the buckets of ${TABLE} were not spread over the writers within 90 s`);
        t.event("topology ready", { leader: await t.leader(), owners: Object.fromEntries(await t.bucketOwners()) });
        return t;
      } catch (e) {
        await t.teardown();
        throw e;
      }
    } catch (e) {
      // teardown() stops everything once the Topology exists; before that, stop what was started here.
      if (harnessNc !== nc) await harnessNc?.close().catch(() => undefined);
      await nc?.close().catch(() => undefined);
      if (redis && redis.process.exitCode === null) await redis.stop().catch(() => undefined);
      await nats.stop().catch(() => undefined);
      await s3?.stop().catch(() => undefined);
      throw e;
    }
  }

  get dir(): string {
    return this.cfg.dir;
  }

  /**
   * A warehouse directory the verifier can read once the nodes are stopped: the warehouse itself, or — on S3 — a
   * copy of its objects in the run directory (chaos/s3-warehouse.ts says why and how mtimes are kept).
   */
  async verifiableWarehouse(): Promise<string> {
    if (this.s3 === null) return this.warehouse;
    const dir = join(this.cfg.dir, "warehouse-copy");
    const t0 = Date.now();
    const copied = await this.s3.copyTo(dir);
    this.event("S3 warehouse copied for the verifier", { ...copied, ms: Date.now() - t0, dir });
    return dir;
  }
  get natsUrls(): readonly string[] {
    return this.nats.urls;
  }
  /** The nats-servers' log files (every output of every start of each). */
  get natsLogFiles(): string[] {
    return this.nats.nodes.map((n) => join(natsLogDir(this.cfg.dir), `${n.name}.log`));
  }
  /** Whether the servers require users (`chaos run --auth`). */
  get auth(): boolean {
    return this.cfg.auth !== undefined;
  }
  get tls(): boolean {
    return this.cfg.tls !== undefined;
  }
  /** The environment of a process that connects as `role` (nothing without auth and TLS). */
  envFor(role: "producer" | "consumer" | "operator" | NodeRole): Record<string, string> {
    return processEnv(this.cfg, role);
  }
  get redisUrl(): string {
    return `${this.cfg.tls === undefined ? "redis" : "rediss"}://127.0.0.1:${this.redisPort}`;
  }

  event(msg: string, fields?: Record<string, unknown>): void {
    const e = { at: Date.now(), msg, ...(fields ? { fields } : {}) };
    this.events.push(e);
    if (this.cfg.verbose) process.stderr.write(`  [${new Date(e.at).toISOString().slice(11, 23)}] ${msg}${fields ? " " + JSON.stringify(fields) : ""}\n`);
  }

  nodeIds(role?: NodeRole): string[] {
    return [...this.slots.values()].filter((s) => role === undefined || s.roles.includes(role)).map((s) => s.id);
  }

  private slot(id: string): NodeSlot {
    const s = this.slots.get(id);
    if (!s) throw new Error(`no node '${id}' in the topology (${[...this.slots.keys()].join(", ")})`);
    return s;
  }

  nodePid(id: string): number | undefined {
    const p = this.slot(id).proc;
    return p && p.exitCode === null && p.signalCode === null ? p.pid : undefined;
  }

  isRunning(id: string): boolean {
    return this.nodePid(id) !== undefined;
  }

  startNode(id: string, opts: { env?: Record<string, string>; nats?: string } = {}): void {
    const s = this.slot(id);
    if (this.isRunning(id)) throw new Error(`node ${id} is already running (pid ${s.proc?.pid})`);
    let logStart = 0;
    try {
      logStart = statSync(s.logFile).size;
    } catch {
      // first start
    }
    const nats = opts.nats ?? this.cfg.overrides?.natsUrlFor?.(id, this.nats.urls) ?? this.nats.urls.join(",");
    const proc = spawnNode({
      id,
      nats,
      ...(s.roles.includes("committer") ? { redis: this.redisUrl } : {}),
      warehouse: this.warehouse,
      logFile: s.logFile,
      commitInterval: this.cfg.overrides?.commitInterval ?? "250ms",
      leaseTtl: this.cfg.overrides?.leaseTtl ?? "2s",
      extra: ["--roles", s.roles.join(","), "--replicas", "3"],
      // The credentials last: what a scenario sets cannot make a node connect as another user.
      env: { ...this.cfg.overrides?.env, ...opts.env, ...this.nodeAuthEnv(s.roles) },
    });
    trackPid(proc.pid, `node ${id}`);
    s.proc = proc;
    s.logStart = logStart;
    s.requested = false;
    s.exited = new Promise<NodeExit>((resolve) => {
      proc.once("exit", (code, signal) => {
        untrackPid(proc.pid);
        const fp = this.failpointFired(s, logStart);
        const exit: NodeExit = { id, pid: proc.pid ?? -1, code, signal, at: Date.now(), requested: s.requested, ...(fp ? { failpoint: fp } : {}) };
        this.exits.push(exit);
        this.event(`node ${id} exited`, { pid: exit.pid, code, signal, ...(fp ? { failpoint: fp } : {}), requested: exit.requested });
        resolve(exit);
      });
    });
    this.event(`node ${id} started`, { pid: proc.pid, roles: s.roles, ...(opts.env && Object.keys(opts.env).length ? { env: opts.env } : {}) });
  }

  /** A node's connection settings: its role's (the chaos topology gives each node one role). */
  private nodeAuthEnv(roles: readonly NodeRole[]): Record<string, string> {
    if (this.cfg.auth === undefined && this.cfg.tls === undefined) return {};
    if (roles.length !== 1) throw new Error(`with --auth or --tls every chaos node has one role (its user's), not ${roles.join(", ")}`);
    return processEnv(this.cfg, roles[0]!);
  }

  nodeLog(id: string): string {
    const s = this.slot(id);
    try {
      const size = statSync(s.logFile).size;
      const buf = Buffer.alloc(size - s.logStart);
      const fd = openSync(s.logFile, "r");
      try {
        readSync(fd, buf, 0, buf.length, s.logStart);
      } finally {
        closeSync(fd);
      }
      return buf.toString("utf8");
    } catch {
      return "";
    }
  }

  /** The failpoint named in this incarnation's log ("failpoint <name>: SIGKILL"), if any. */
  private failpointFired(s: NodeSlot, from: number): string | undefined {
    try {
      const size = statSync(s.logFile).size;
      const start = Math.max(from, size - 64 * 1024);
      const buf = Buffer.alloc(size - start);
      const fd = openSync(s.logFile, "r");
      try {
        readSync(fd, buf, 0, buf.length, start);
      } finally {
        closeSync(fd);
      }
      const m = /failpoint (\S+): (SIGKILL|exit 137)/.exec(buf.toString("utf8"));
      return m?.[1];
    } catch {
      return undefined;
    }
  }

  signalNode(id: string, signal: NodeJS.Signals): void {
    const s = this.slot(id);
    const pid = this.nodePid(id);
    if (pid === undefined) throw new Error(`node ${id} is not running`);
    if (signal === "SIGKILL" || signal === "SIGTERM") s.requested = true;
    process.kill(pid, signal);
    this.event(`${signal} ${id}`, { pid });
  }

  async waitExit(id: string, timeoutMs: number): Promise<NodeExit | null> {
    const s = this.slot(id);
    if (!s.exited) return null;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs)));
    try {
      return await Promise.race([s.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async kv(): Promise<{ members: KV; assign: KV }> {
    if (!this.kvs) {
      const kvm = new Kvm(this.nc);
      this.kvs = { members: await kvm.open("lake_members"), assign: await kvm.open("lake_assign") };
    }
    return this.kvs;
  }

  /** Heartbeats of the members (fresh or not). */
  async members(): Promise<MemberHeartbeat[]> {
    return (await this.memberEntries()).map((m) => m.hb);
  }

  /**
   * Heartbeats written within `maxAgeMs`, judged by the time NATS stored them (the server's clock, this machine's),
   * not by the `at` a node wrote: a node under a clock-skew nemesis writes a skewed `at`.
   */
  private async freshMembers(maxAgeMs: number): Promise<MemberHeartbeat[]> {
    const now = Date.now();
    return (await this.memberEntries()).filter((m) => now - m.storedAt < maxAgeMs).map((m) => m.hb);
  }

  private async memberEntries(): Promise<Array<{ hb: MemberHeartbeat; storedAt: number }>> {
    const { members } = await this.kv();
    const keys: string[] = [];
    for await (const k of await members.keys()) keys.push(k);
    const out: Array<{ hb: MemberHeartbeat; storedAt: number }> = [];
    for (const k of keys) {
      const e = await members.get(k);
      if (e && e.operation === "PUT") out.push({ hb: e.json<MemberHeartbeat>(), storedAt: e.created.getTime() });
    }
    return out;
  }

  /**
   * Waits for the nodes' heartbeats. A node that exits during start-up (e.g. JetStream timing out while the fresh
   * cluster settles) is started again, at most twice — as a supervisor would.
   */
  private async waitMembers(ids: string[], timeoutMs: number, env: (id: string) => Record<string, string> = () => ({})): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const retries = new Map<string, number>();
    for (;;) {
      const live = new Set((await this.freshMembers(2000).catch(() => [])).map((m) => m.nodeId));
      const missing = ids.filter((id) => !live.has(id));
      if (missing.length === 0) return;
      for (const id of missing) {
        if (this.isRunning(id)) continue;
        const n = retries.get(id) ?? 0;
        if (n >= 2) throw new Error(`node ${id} exited during start-up three times; see ${this.slot(id).logFile}`);
        retries.set(id, n + 1);
        this.event(`node ${id} exited during start-up; starting it again`);
        this.startNode(id, { env: env(id) });
      }
      if (Date.now() > deadline) throw new Error(`nodes ${missing.join(", ")} did not join within ${timeoutMs} ms`);
      await sleep(200);
    }
  }

  async requestCompaction(o: { full: boolean; acceptTimeoutMs?: number }): Promise<{ node: string; snapshotId: number | null }> {
    const out = await requestMaintenance(this.nc, { type: "maintenance", v: 1, table: TABLE, task: "compact", options: o.full ? { full: true } : {} }, { prefix: "lake", acceptTimeoutMs: o.acceptTimeoutMs ?? 10_000, silenceTimeoutMs: 10_000 });
    return { node: out.node, snapshotId: (out.result as CompactSummary).snapshotId };
  }

  private async createTable(buckets: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (let attempt = 1; ; attempt++) {
      try {
        // A primary-key table's buckets follow its key; the append table's its id.
        const def = this.cfg.overrides?.table;
        const keyed = def !== undefined ? { primaryKeys: def.primaryKeys } : {};
        const options = { ...(this.cfg.overrides?.tableOptions ?? {}), bucket: String(buckets), ...(def === undefined ? { "bucket-key": "id" } : {}) };
        await adminRequest(this.nc, "lake", { type: "create-table", table: TABLE, columns: def?.columns ?? TABLE_COLUMNS, ...keyed, options });
        this.event("table created", { table: TABLE, buckets, ...keyed });
        return;
      } catch (e) {
        // The warehouse is the run's own: a table that exists on a retry was created by an earlier attempt whose
        // reply was lost (the request timed out under load).
        if (attempt > 1 && isLakeError(e, ErrorKind.AlreadyExists)) {
          this.event("table created (by an earlier attempt whose reply was lost)", { table: TABLE, buckets });
          return;
        }
        if (Date.now() > deadline) throw e;
        await sleep(500);
      }
    }
  }

  async leader(): Promise<string | null> {
    const fresh = (await this.freshMembers(1500)).filter((m) => (m.leading ?? []).includes(TABLE));
    fresh.sort((a, b) => b.startedAt - a.startedAt);
    return fresh[0]?.nodeId ?? null;
  }

  async assignment(): Promise<TableAssignment | null> {
    const { assign } = await this.kv();
    const e = await assign.get(TABLE);
    return e && e.operation === "PUT" ? e.json<TableAssignment>() : null;
  }

  async bucketOwners(): Promise<Map<number, string>> {
    const a = await this.assignment();
    const out = new Map<number, string>();
    for (const [b, x] of Object.entries(a?.buckets ?? {})) if (x.state === "active") out.set(Number(b), x.node);
    return out;
  }

  async waitBalanced(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const buckets = this.cfg.overrides?.buckets ?? 4;
    for (;;) {
      try {
        const a = await this.assignment();
        const live = new Set((await this.freshMembers(1500)).filter((m) => m.roles.includes("writer") && !m.draining).map((m) => m.nodeId));
        const entries = Object.values(a?.buckets ?? {});
        const owners = new Set(entries.map((b) => b.node));
        if (entries.length === buckets && entries.every((b) => b.state === "active" && live.has(b.node)) && owners.size >= Math.min(buckets, live.size)) return true;
      } catch {
        // KV not reachable at this moment (a NATS node restarting): try again
      }
      if (Date.now() > deadline) return false;
      await sleep(200);
    }
  }

  natsPid(index: number): number | undefined {
    return this.nats.nodes[index]?.handle?.pid;
  }

  async ingestStreamLeader(): Promise<number> {
    const jsm = await jetstreamManager(this.nc, { timeout: 5000 });
    const info = await jsm.streams.info(new Subjects().ingestStream(parseIdentifier(TABLE)));
    return this.nats.nodes.findIndex((n) => n.name === info.cluster?.leader);
  }

  async consumerHosts(): Promise<number[]> {
    // Listing a stream's consumers is no role's grant: the harness's own user asks.
    const jsm = await jetstreamManager(this.harnessNc, { timeout: 5000 });
    const subjects = new Subjects();
    const id = parseIdentifier(TABLE);
    const counts = this.nats.nodes.map(() => 0);
    for (const stream of [subjects.ingestStream(id), subjects.commitStream(id)]) {
      for await (const ci of jsm.consumers.list(stream)) {
        const i = this.nats.nodes.findIndex((n) => n.name === ci.cluster?.leader);
        if (i >= 0) counts[i]!++;
      }
    }
    return counts;
  }

  async killNats(index: number): Promise<void> {
    const pid = this.natsPid(index);
    await this.nats.kill(index);
    untrackPid(pid);
    this.event(`SIGKILL nats ${this.nats.nodes[index]?.name}`, { pid });
  }

  async restartNats(index: number): Promise<void> {
    await this.nats.restart(index, { wait: false });
    trackPid(this.natsPid(index), `nats-server n${index + 1}`);
    this.event(`nats ${this.nats.nodes[index]?.name} restarted`, { pid: this.natsPid(index) });
    await this.nats.waitReady(60_000);
  }

  redisPid(): number | undefined {
    return this.redis?.pid;
  }

  async stopRedis(crash = false): Promise<void> {
    const r = this.redis;
    if (!r) return;
    this.redis = null;
    if (crash) await r.kill();
    else await r.stop({ keepData: true });
    untrackPid(r.pid);
    this.event(`redis ${crash ? "SIGKILL" : "stopped"}`, { pid: r.pid });
  }

  async startRedis(): Promise<void> {
    if (this.redis) throw new Error("redis-server is running");
    // The same port: nodes keep their URL and reconnect. The OS may have handed the port out meanwhile (rare): retry.
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        this.redis = await startRedis({ ...redisOptions(this.cfg), port: this.redisPort });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await sleep(250);
      }
    }
    trackPid(this.redis.pid, "redis-server");
    this.event("redis started", { pid: this.redis.pid, port: this.redisPort });
  }

  /** Stops every node process (SIGCONT + SIGKILL; the verifier then sees a warehouse nobody writes to). */
  async stopNodes(): Promise<void> {
    const waits: Array<Promise<unknown>> = [];
    for (const s of this.slots.values()) {
      const p = s.proc;
      if (p && p.exitCode === null && p.signalCode === null && p.pid !== undefined) {
        s.requested = true;
        try {
          process.kill(p.pid, "SIGCONT");
          process.kill(p.pid, "SIGKILL");
        } catch {
          // already gone
        }
        if (s.exited) waits.push(Promise.race([s.exited, sleep(10_000)]));
      }
    }
    await Promise.all(waits);
  }

  /** Stops every node, then the servers; the run directory is left to the runner. */
  async teardown(): Promise<void> {
    await this.stopNodes();
    if (this.harnessNc !== this.nc) await this.harnessNc.close().catch(() => undefined);
    await this.nc.close().catch(() => undefined);
    const nodes = this.nats.nodes.map((n) => n.handle?.pid);
    for (const n of this.nats.nodes) if (n.paused && n.handle) process.kill(n.handle.pid, "SIGCONT");
    await this.nats.stop().catch(() => undefined);
    nodes.forEach(untrackPid);
    const r = this.redis;
    this.redis = null;
    if (r) {
      await r.stop().catch(() => undefined);
      untrackPid(r.pid);
    }
    if (this.s3 !== null) {
      await this.s3.stop().catch(() => undefined);
      untrackPid(this.s3.server.pid);
    }
  }
}

/**
 * The run's nats-server cluster: JetStream's fsync setting of the chosen server, with `auth` the users' block and
 * their passwords in the servers' environment, with `tls` mutual TLS; its logs under logs/nats/. Exported for the
 * test that the run's servers refuse a process without the client certificate (test/chaos/chaos-tls.test.ts).
 */
export function natsClusterOptions(cfg: TopologyConfig): NatsClusterOptions {
  const auth = cfg.auth;
  return {
    bin: cfg.nats.bin,
    ...(cfg.nats.syncAlways ? { jetstream: { sync_interval: "always" } } : {}),
    ...(auth !== undefined || cfg.tls !== undefined ? { config: `${auth?.natsConfig ?? ""}${cfg.tls?.natsConfig ?? ""}` } : {}),
    ...(auth ? { env: { ...process.env, ...auth.natsServerEnv } } : {}),
    // The readiness probe creates a stream no role may: the harness's user with auth.
    readyConnect: (servers) => harnessConnect(cfg, servers, auth ? HARNESS_USER : "operator", { timeout: 2000, reconnectTimeWait: 100, maxReconnectAttempts: -1, name: "chaos-ready" }),
    logDir: natsLogDir(cfg.dir),
    readyTimeoutMs: 60_000,
  };
}

/**
 * redis-server's options: with auth the default user off and the committers' ACL user (checked by it at start-up),
 * with TLS the TLS port only and client certificates required.
 */
export function redisOptions(cfg: TopologyConfig): RedisOptions {
  return {
    ...(cfg.auth === undefined ? {} : { extraArgs: cfg.auth.redisArgs, probeAuth: cfg.auth.redisProbe }),
    ...(cfg.tls === undefined ? {} : { tls: cfg.tls.redis }),
  };
}
