/**
 * `natslake up`: a local cluster — nats-server (JetStream) and redis-server unless URLs are given, and N nodes.
 *
 * - nats-server: `natsServerForUp` (NATSLAKE_NATS_SERVER, else the current one — found, or built with `go install`, by
 *   scripts/install-nats-server.sh, which scripts/setup.sh runs too — never Debian's 2.9 on PATH); which binary and
 *   version runs is printed, with a warning for an explicit one older than 2.10. It listens on 4222, NATS's standard
 *   port and the examples' default, when that port is free, else on a free port (said so).
 * - What to try next: commands printed to be pasted as they are (cluster/cli/up-guide.ts).
 * - State: with `--warehouse DIR`, the JetStream store and the node logs live in `DIR/.natslake-up/` and are kept,
 *   so rows acknowledged but not yet committed when `up` stops are still in the stream when `up` starts again on
 *   the same warehouse. With a temporary warehouse, everything is removed at stop (after the nodes drained), unless a
 *   node failed: then it is kept for the logs. Redis holds only the committer lease (no persistence is needed).
 * - Servers run in a process group of their own, so a Ctrl-C at the terminal reaches the nodes (which drain) but not
 *   the servers; `up` stops the servers only after every node exited. They run until Ctrl-C (or `--duration`)
 *   whatever the nodes do — nodes started by hand against them keep them too. Each one's output is kept in the logs
 *   folder (`nats-server.log`, `redis-server.log`, `seaweedfs.log`); one that exits during the run is reported at once.
 * - A node that dies during the run (killed by a signal, or a non-zero exit) is reported at once; the others keep
 *   running and take over its buckets, and `up` starts it again a second later (cluster/local/up-node.ts: at most 3
 *   times a minute per node; `--no-restart` leaves it down). `up` then exits 1 when it stops.
 * - Object storage: `--s3` starts SeaweedFS (cluster/local/seaweedfs.ts) with a bucket `natslake` and runs the nodes
 *   on `s3://natslake/warehouse` (temporary, like the default warehouse); `--warehouse s3://bucket/prefix` uses a
 *   store of the user's. Credentials reach the nodes through their environment only (for `--s3` also written to
 *   `<run dir>/s3.env`, mode 600, for the user's own commands), never as flags.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { adminRequest } from "../admin-client.ts";
import { natsServerForUp } from "../local/current-nats-server.ts";
import { PortTakenError, startNats, startRedis, type NatsOptions, type ServerHandle } from "../local/servers.ts";
import { startSeaweed, type SeaweedHandle } from "../local/seaweedfs.ts";
import { UpNode } from "../local/up-node.ts";
import { nodeProcessEnv } from "../local/node-env.ts";
import { isObjectStoreUri } from "../../src/io/warehouse.ts";
import { createProducer } from "../producer.ts";
import { REPO_ROOT } from "../repo-root.ts";
import { connectOrExplain, UsageError } from "./common.ts";
import { connectionArgs, natsAuthFlags, redisAuthFlags } from "./connection-flags.ts";
import type { NatsAuthSettings } from "../nats/connect-options.ts";
import type { RedisAuthSettings } from "../redis/connect-options.ts";
import { redactUrl } from "../nats/connect-errors.ts";
import { demoReadCommand, EXAMPLE_TABLE, exampleCommands, shellQuote, tryCommands, type GuideInput } from "./up-guide.ts";
import { unsupportedNatsServer } from "../nats/server-version.ts";
import { DEFAULT_PREFIX, Subjects } from "../nats/subjects.ts";
import { readWarehouseBinding, warehouseIdentity } from "../nats/warehouse-binding.ts";

/** A node drains within its drain timeout (15 s) and exits by its watchdog 10 s later; past this it is killed. */
const NODE_STOP_BOUND_MS = 35_000;
/** NATS's standard port: the examples' default `--nats nats://127.0.0.1:4222`. */
const STANDARD_NATS_PORT = 4222;

export interface UpFlags extends NatsAuthSettings, RedisAuthSettings {
  nodes: number;
  warehouse?: string;
  nats?: string;
  redis?: string;
  commitInterval: string;
  duration?: number;
  demo?: boolean;
  s3?: boolean;
  /** Start a node that died again (commander's `--no-restart` sets it false). */
  restart: boolean;
}

export async function runUp(o: UpFlags, out: (s: string) => void): Promise<void> {
  // The servers up starts are local (loopback, no credentials); credentials and TLS are for servers of the caller's.
  const natsAuth = natsAuthFlags(o);
  const redisAuth = redisAuthFlags(o);
  if (o.nats === undefined && Object.keys(natsAuth).length > 0) throw new UsageError("NATS credentials and TLS flags are for a server of yours: give its --nats URL too (up's own nats-server listens on loopback without credentials)");
  if (o.redis === undefined && Object.keys(redisAuth).length > 0) throw new UsageError("Redis credentials and TLS flags are for a server of yours: give its --redis URL too (up's own redis-server listens on loopback without credentials)");
  if (o.s3 && o.warehouse !== undefined) throw new UsageError("--s3 starts a temporary object store of its own; to keep the data, use --warehouse s3://bucket/prefix on a store of yours (credentials in the environment)");
  // Before anything is created or started: without a current nats-server (none found, none could be built) `up`
  // stops here, the fix printed by scripts/install-nats-server.sh.
  const natsChoice = o.nats ? undefined : await natsServerForUp();
  if (natsChoice?.old) {
    process.stderr.write(
      `warning: ${unsupportedNatsServer(natsChoice.version)}. It is ${natsChoice.bin} (${natsChoice.source}); unset NATSLAKE_NATS_SERVER to run the current one (scripts/install-nats-server.sh builds it)\n`,
    );
  }
  const objectStore = o.warehouse !== undefined && isObjectStoreUri(o.warehouse);
  // A warehouse on an object store keeps its data there; the JetStream store and logs then live in a temporary dir.
  const temporary = o.warehouse === undefined || objectStore;
  const runDir = temporary ? mkdtempSync(join(tmpdir(), "natslake-up-")) : join(resolve(o.warehouse!), ".natslake-up");
  let warehouse = o.warehouse === undefined ? join(runDir, "warehouse") : objectStore ? o.warehouse : resolve(o.warehouse);
  const logs = join(runDir, "logs");
  if (!o.s3 && !objectStore) mkdirSync(warehouse, { recursive: true });
  mkdirSync(logs, { recursive: true });
  const servers: ServerHandle[] = [];
  let seaweed: SeaweedHandle | undefined;
  let nodeEnv: NodeJS.ProcessEnv = process.env;
  const nodes: UpNode[] = [];
  const failures: string[] = [];
  let stopping = false;
  let demoNc: NatsConnection | undefined;

  let requestStop: (why: string) => void = () => undefined;
  const stopRequested = new Promise<string>((r) => (requestStop = r));
  const onSignal = (sig: NodeJS.Signals): void => {
    if (stopping) out(`${sig} again: still stopping (the nodes are draining; at most ${NODE_STOP_BOUND_MS / 1000} s)…`);
    else requestStop(sig);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const shutdown = async (): Promise<void> => {
    stopping = true;
    await demoNc?.close().catch(() => undefined);
    const draining = nodes.filter((n) => n.drain());
    if (draining.length > 0) out(`draining ${draining.map((n) => n.id).join(", ")}…`);
    const bound = setTimeout(() => {
      for (const n of nodes) {
        if (n.running) {
          out(`node ${n.id} did not stop within ${NODE_STOP_BOUND_MS / 1000} s; killing it (log: ${n.log})`);
          failures.push(`node ${n.id} did not drain`);
          n.kill();
        }
      }
    }, NODE_STOP_BOUND_MS);
    await Promise.all(nodes.map((n) => n.exited));
    clearTimeout(bound);
    // Only now, with every node gone, the servers: a draining node still needs NATS (and Redis for its lease).
    for (const s of servers.reverse()) await s.stop();
    await seaweed?.stop();
    if (temporary) {
      if (failures.length === 0) rmSync(runDir, { recursive: true, force: true });
      else out(`kept ${runDir} (warehouse and logs) after the failure`);
    } else {
      out(o.nats ? `kept the logs in ${logs}` : `kept the JetStream store and logs in ${runDir}; \`npx natslake up --warehouse ${shellQuote(warehouse)}\` resumes from them`);
    }
  };

  try {
    // Given (--nats), or the server started here.
    let natsUrl = o.nats ?? "";
    let redisUrl = o.redis;
    /** A server of up's that exits before the stop: said at once (the nodes lose it until one listens there again). */
    const watch = (what: string, proc: ChildProcess, log: string, url: string): void => {
      proc.once("exit", (code, signal) => {
        if (stopping) return;
        const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
        failures.push(`${what} ${how}`);
        out(`${what} (pid ${proc.pid}) ${how} (its output: ${log}); the nodes cannot reach it until a server listens on ${url} again; Ctrl-C stops the cluster`);
      });
    };
    if (natsChoice !== undefined) {
      const log = join(logs, "nats-server.log");
      const s = await startNatsOnStandardPort({ bin: natsChoice.bin, storeDir: join(runDir, "jetstream"), detached: true, logFile: log }, out);
      servers.push(s);
      natsUrl = s.url;
      watch("nats-server", s.process, log, s.url);
      out(`nats-server ${natsChoice.version ? `v${natsChoice.version}` : "(version unknown)"}: ${natsChoice.bin} (${natsChoice.source}), pid ${s.pid}, JetStream store ${join(runDir, "jetstream")}`);
    }
    if (!redisUrl) {
      const log = join(logs, "redis-server.log");
      const s = await startRedis({ detached: true, logFile: log });
      servers.push(s);
      redisUrl = s.url;
      watch("redis-server", s.process, log, s.url);
      out(`redis-server: pid ${s.pid}`);
    }
    if (o.s3) {
      const log = join(logs, "seaweedfs.log");
      seaweed = await startSeaweed({ dir: join(runDir, "seaweedfs"), detached: true, logFile: log });
      watch("seaweedfs", seaweed.process, log, seaweed.endpoint);
      await seaweed.createBucket("natslake");
      warehouse = `s3://natslake/warehouse?endpoint=${seaweed.endpoint}`;
      nodeEnv = { ...process.env, ...seaweed.env };
      const envFile = join(runDir, "s3.env");
      writeFileSync(envFile, Object.entries(seaweed.env).map(([k, v]) => `export ${k}=${v}\n`).join(""), { mode: 0o600 });
      out(`seaweedfs (S3 gateway ${seaweed.endpoint}): pid ${seaweed.pid}, data ${join(runDir, "seaweedfs")}; credentials for your commands: source ${envFile}`);
    }
    // A NATS of the caller's may already run a cluster on another warehouse: its nodes would refuse to start
    // (cluster/nats/warehouse-binding.ts), so up says so before starting any.
    if (o.nats !== undefined) await refuseOtherWarehouse({ ...natsAuth, nats: natsUrl }, warehouse);
    for (let i = 1; i <= o.nodes; i++) {
      const id = `node-${i}`;
      nodes.push(
        new UpNode({
          id,
          args: ["--nats", natsUrl, "--redis", redisUrl, "--warehouse", warehouse, "--node-id", id, "--commit-interval", o.commitInterval, ...connectionArgs({ ...natsAuth, ...redisAuth })],
          env: nodeProcessEnv(nodeEnv),
          log: join(logs, `${id}.log`),
          restart: o.restart,
          out,
          onFailure: (what) => failures.push(what),
          running: () => nodes.filter((n) => n.running).length,
        }),
      );
    }
    out(`natslake local cluster: ${o.nodes} nodes, warehouse ${warehouse}`);
    out(`  NATS  ${redactUrl(natsUrl)}    Redis ${redactUrl(redisUrl)}    logs ${logs}/node-*.log`);
    out(`  nodes ${nodes.map((n) => `${n.id} (pid ${n.pid})`).join(", ")}`);
    const guide: GuideInput = { natsUrl: redactUrl(natsUrl), warehouse, root: REPO_ROOT, natsAuth, ...(o.s3 ? { s3EnvFile: join(runDir, "s3.env") } : {}) };
    for (const l of tryCommands(guide)) out(l);
    if (o.demo) {
      demoNc = await connectOrExplain({ ...natsAuth, nats: natsUrl });
      const demo = runDemo(demoNc, guide, out).catch((e: unknown) => {
        if (!stopping) throw e;
      });
      await Promise.race([demo, stopRequested]);
    }
    for (const l of exampleCommands(guide)) out(l);
    // --duration counts from here (after the demo, as before).
    const timer = o.duration ? setTimeout(() => requestStop("duration"), o.duration * 1000) : undefined;
    try {
      await stopRequested;
    } finally {
      clearTimeout(timer);
    }
  } finally {
    out("stopping the local cluster…");
    try {
      await shutdown();
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  }
  if (failures.length > 0) throw new LakeError(ErrorKind.Io, `the local cluster had failures: ${failures.join("; ")}`);
}

/**
 * NATS on its standard port when that is free, so that the examples' default URL reaches it; else (another server
 * holds the port) on a free one — every command `up` prints carries the real URL.
 */
async function startNatsOnStandardPort(opts: NatsOptions, out: (s: string) => void): Promise<ServerHandle> {
  try {
    return await startNats({ ...opts, port: STANDARD_NATS_PORT });
  } catch (e) {
    if (!(e instanceof PortTakenError)) throw e;
    out(`port ${STANDARD_NATS_PORT} is taken (another NATS server?): this one listens on a free port, which every command below names`);
    return startNats(opts);
  }
}

/** `up --demo`: create a table through the cluster and publish rows, so the first run shows something. */
async function runDemo(nc: NatsConnection, guide: GuideInput, out: (s: string) => void): Promise<void> {
  // The nodes are still starting: retry until one answers (bounded).
  const deadline = Date.now() + 60_000;
  let existed = false;
  for (;;) {
    try {
      await adminRequest(nc, "lake", { type: "create-table", table: EXAMPLE_TABLE, columns: "id BIGINT NOT NULL, msg STRING, at TIMESTAMP(3)", options: { bucket: "4", "bucket-key": "id" } }, 5_000);
      break;
    } catch (e) {
      if (/already exists/.test(String(e))) {
        existed = true; // an earlier run on this warehouse (or a retry after a lost reply) made it
        break;
      }
      if (Date.now() > deadline || nc.isClosed()) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const producer = await createProducer({ nc, table: EXAMPLE_TABLE });
  for (let i = 0; i < 1000; i++) void producer.write({ id: i, msg: `hello ${i}`, at: Date.now() });
  await producer.flush();
  const started = Date.now();
  await producer.waitVisible(producer.token(), 60_000);
  out(`demo: ${existed ? "found" : "created"} ${EXAMPLE_TABLE} and published 1000 rows; visible in a snapshot ${Date.now() - started} ms after the last ack`);
  out(demoReadCommand(guide));
  await producer.close();
}

/** Refuses (UsageError) when the cluster on the NATS at `flags.nats` serves another warehouse than `warehouse`. */
async function refuseOtherWarehouse(flags: NatsAuthSettings & { nats: string }, warehouse: string): Promise<void> {
  const subjects = new Subjects(DEFAULT_PREFIX);
  const nc = await connectOrExplain(flags);
  try {
    const bound = await readWarehouseBinding(nc, subjects);
    const mine = warehouseIdentity(warehouse);
    if (bound !== null && bound.warehouse !== mine) {
      throw new UsageError(
        `the NATS at ${redactUrl(flags.nats)} already runs a natslake cluster (prefix '${subjects.prefix}') on the warehouse ${bound.warehouse}, not ${mine}: ` +
          `\`natslake up --nats ${redactUrl(flags.nats)} --warehouse ${bound.warehouse.replace(/^file:\/\//, "")}\` joins it; for another warehouse, use a NATS of its own (or up's own: leave out --nats)`,
      );
    }
  } finally {
    await nc.close().catch(() => undefined);
  }
}
