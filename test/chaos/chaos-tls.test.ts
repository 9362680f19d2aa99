/**
 * `chaos run --tls` (chaos/tls.ts). First the run's servers on their own, started as the topology starts them
 * (chaos/topology.ts `natsClusterOptions`, `redisOptions`; with `--auth`'s users too, nkeys as with `--auth --tls`):
 * every process's settings (`processEnv`: its client certificate, its nkey seed file) connect — NATS through
 * connectNats, Redis as a committer's lease does; the routes speak TLS; a process without the run's client
 * certificate, or with one another CA signed, is refused by NATS and Redis, so is an nkey the servers do not know, and
 * the `permissions` invariant names each refusal (while the start-up checks' plain hang-ups do not count).
 * Then one short chaos run with `--auth --tls`, through the runner as `natslake chaos run` starts it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../../cluster/nats/connect.ts";
import { createUser } from "@nats-io/nkeys";
import { NATS_AUTH_ENV, NATS_PASSWORD_ENV } from "../../cluster/nats/connect-options.ts";
import { connectLeaseRedis } from "../../cluster/redis/lease.ts";
import { REDIS_AUTH_ENV, redisConnectionOptions } from "../../cluster/redis/connect-options.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { startRedis, type ServerHandle } from "../helpers/servers.ts";
import { startNatsCluster, type NatsCluster } from "../helpers/nats-cluster.ts";
import { waitFor } from "../helpers/cluster.ts";
import { chaosReportsDir, runChaosRunner } from "../helpers/chaos-runner.ts";
import { newChaosAuth } from "../../chaos/auth.ts";
import { newChaosTls, type ChaosTls } from "../../chaos/tls.ts";
import { chooseNatsServer } from "../../chaos/nats-choice.ts";
import { natsClusterOptions, processEnv, redisOptions, type ConnectingUser, type TopologyConfig } from "../../chaos/topology.ts";
import { permissionsInvariant } from "../../chaos/nats-violations.ts";
import type { ChaosReport } from "../../chaos/types.ts";

let dir: string;
let cfg: TopologyConfig;
let tls: ChaosTls;
let nats: NatsCluster | undefined;
let redis: ServerHandle | undefined;
const conns: NatsConnection[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "natslake-chaos-tls-"));
  tls = newChaosTls(dir);
  // As `chaos run --auth --tls` makes them: the users sign in with nkeys.
  cfg = { dir, nats: chooseNatsServer(), auth: newChaosAuth({ nkeysDir: join(dir, "nkeys") }), tls };
  mkdirSync(join(dir, "logs", "nats"), { recursive: true });
  nats = await startNatsCluster(natsClusterOptions(cfg));
  redis = await startRedis(redisOptions(cfg));
});

after(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await nats?.stop();
  await redis?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const logs = (): string[] => readdirSync(join(dir, "logs", "nats")).map((f) => join(dir, "logs", "nats", f));

/** Connects to the run's NATS servers with exactly `env` (no NATSLAKE_* of this process); the error's message when refused. */
async function tryNats(env: Record<string, string>): Promise<string> {
  try {
    const nc = await connectNats(nats!.urls.join(","), {}, { reconnect: false, timeout: 5000 }, env);
    conns.push(nc);
    return "connected";
  } catch (e) {
    return (e as Error).message;
  }
}

/** Connects to the run's Redis as a committer's lease does, with exactly `env`; the error's message when refused. */
async function tryRedis(env: Record<string, string>): Promise<string> {
  try {
    (await connectLeaseRedis(redis!.url, { auth: redisConnectionOptions({}, env), commandTimeoutMs: 2000 })).disconnect();
    return "connected";
  } catch (e) {
    return (e as Error).message;
  }
}

/** `user`'s settings with the client certificate replaced (or, `undefined`, left out). */
function withCert(user: ConnectingUser, cert: { cert: string; key: string } | undefined): Record<string, string> {
  const env = { ...processEnv(cfg, user) };
  for (const [certKey, keyKey] of [[NATS_AUTH_ENV.natsTlsCert, NATS_AUTH_ENV.natsTlsKey], [REDIS_AUTH_ENV.redisTlsCert, REDIS_AUTH_ENV.redisTlsKey]] as const) {
    if (env[certKey] === undefined) continue;
    delete env[certKey];
    delete env[keyKey];
    if (cert !== undefined) Object.assign(env, { [certKey]: cert.cert, [keyKey]: cert.key });
  }
  return env;
}

test("chaos tls - every process's settings connect to the run's servers over mutual TLS; the routes speak TLS", { timeout: 60_000 }, async () => {
  for (const user of ["operator", "producer", "consumer", "writer", "committer", "reader"] as const) {
    const env = processEnv(cfg, user);
    assert.equal(env[NATS_AUTH_ENV.natsTlsCa], tls.certs.ca, `${user}: the run's CA`);
    assert.equal(env[NATS_AUTH_ENV.natsTlsCert], tls.certs.clientCert, `${user}: the run's client certificate`);
    const seedFile = env[NATS_AUTH_ENV.natsNkey];
    assert.ok(seedFile !== undefined && env[NATS_PASSWORD_ENV] === undefined && env[NATS_AUTH_ENV.natsUser] === undefined, `${user}: an nkey seed file, no password`);
    assert.equal(statSync(seedFile).mode & 0o777, 0o600, `${user}: its seed readable by its owner only`);
    assert.equal(await tryNats(env), "connected", user);
  }
  assert.doesNotMatch(cfg.auth!.natsConfig, /password:/, "the servers hold public keys, no password");
  const nc = conns[0]!;
  assert.equal(nc.info?.tls_required, true, "the server requires TLS");
  assert.equal(nc.info?.tls_verify, true, "the server verifies client certificates");
  // A round trip as the operator (its admin subject; nobody answers, the publish is what is checked).
  nc.publish(new Subjects().admin, "{}");
  await nc.flush();
  assert.equal(processEnv(cfg, "writer")[REDIS_AUTH_ENV.redisTlsCa], undefined, "only committers are given Redis's settings");
  assert.match(redis!.url, /^rediss:\/\//);
  assert.equal(await tryRedis(processEnv(cfg, "committer")), "connected");

  // A route: TLS from the first byte, the peer's certificate verified against the run's CA.
  const route = nats!.nodes[0]!;
  const authorized = await new Promise<boolean>((resolve, reject) => {
    const sock = tlsConnect({ host: "127.0.0.1", port: route.clusterPort, ca: readFileSync(tls.certs.ca), cert: readFileSync(tls.certs.serverCert), key: readFileSync(tls.certs.serverKey) }, () => {
      resolve(sock.authorized);
      sock.destroy();
    });
    sock.once("error", reject);
  });
  assert.ok(authorized, "the route port completed a TLS handshake with a certificate of the run's CA");

  // The start-up checks read each server's plain INFO line and hang up: logged as a handshake error, yet no refusal.
  const clean = permissionsInvariant(logs(), { tls: true });
  assert.ok(clean.ok, clean.detail);
  assert.match(clean.detail, /no permission or authorization violation in the 3 nats-server logs .*, no refused TLS handshake/);
});

test("chaos tls - a process without the run's client certificate is refused by NATS and Redis, and the invariant names it", { timeout: 60_000 }, async () => {
  const stranger = { cert: tls.certs.strangerCert, key: tls.certs.strangerKey };
  assert.notEqual(await tryNats(withCert("operator", undefined)), "connected", "NATS: the CA but no client certificate");
  assert.notEqual(await tryNats(withCert("operator", stranger)), "connected", "NATS: a client certificate of another CA");
  assert.match(await tryNats(processEnv({ ...cfg, tls: undefined }, "operator")), /TLS|certificate/i, "NATS: the credentials but no TLS settings at all");
  const strangerSeed = join(dir, "stranger.nk");
  writeFileSync(strangerSeed, `${new TextDecoder().decode(createUser().getSeed())}\n`, { mode: 0o600 });
  assert.match(await tryNats({ ...processEnv(cfg, "operator"), [NATS_AUTH_ENV.natsNkey]: strangerSeed }), /refused the credentials/, "NATS: an nkey the servers do not know");
  assert.notEqual(await tryRedis(withCert("committer", undefined)), "connected", "Redis: the CA but no client certificate");
  assert.notEqual(await tryRedis(withCert("committer", stranger)), "connected", "Redis: a client certificate of another CA");

  const failed = await waitFor("both refused handshakes and the unknown nkey logged", () => {
    const r = permissionsInvariant(logs(), { tls: true });
    return /\b3 refusals\b/.test(r.detail) ? r : undefined;
  }, 10_000, 100);
  assert.equal(failed.ok, false);
  assert.match(failed.detail, /TLS handshake error: tls: client didn't provide a certificate/);
  // Go's TLS stack says "failed to verify client certificate" in older nats-servers (2.9), "certificate" in current ones.
  assert.match(failed.detail, /TLS handshake error: tls: failed to verify (?:client )?certificate: x509: /);
  assert.match(failed.detail, /authentication error - Nkey "U[A-Z2-7]{55}"/);
});

test("chaos tls - a short chaos run with --auth --tls passes every invariant, its servers requiring mutual TLS", { timeout: 240_000 }, async (t) => {
  const reports = chaosReportsDir("tls");
  const { code, out } = await runChaosRunner(["run", "leader-kill@commit.after-snapshot", "--auth", "--tls", "--duration", "10s", "--keep", "--reports", reports], 200_000);
  for (const line of out.split("\n").filter((l) => /^(PASS|FAIL)|against|^\s+(ok|FAIL) /.test(l))) t.diagnostic(line);
  const files = readdirSync(reports).filter((f) => f.endsWith(".json"));
  assert.equal(files.length, 1, out.slice(-4000));
  const r = JSON.parse(readFileSync(join(reports, files[0]!), "utf8")) as ChaosReport;
  const failed = Object.entries(r.invariants).filter(([, v]) => !v.ok);
  assert.ok(r.ok, `${r.scenario} (seed ${r.seed}) failed: ${r.error ?? failed.map(([k, v]) => `${k}: ${v.detail}`).join("; ")}`);
  assert.equal(r.auth, true);
  assert.equal(r.tls, true);
  assert.equal(r.natsCredentials, "nkey", "with --auth --tls the users sign in with nkeys");
  assert.ok(r.rows.acknowledged > 0 && r.lost === 0 && r.duplicated === 0);
  assert.match(r.invariants["permissions"]?.detail ?? "", /no permission or authorization violation in the 3 nats-server logs .*, no refused TLS handshake/);
  assert.match(out, /auth on \(an nkey per role, least privilege; Redis ACL\); TLS on \(mutual TLS: NATS client ports and routes, Redis\)/, "the summary says nkeys and TLS were on");
  // The kept logs show the servers required TLS (Redis has no plain port at all: its leases worked over TLS).
  const logsDir = join(reports, readdirSync(reports).find((f) => f.endsWith("-logs"))!);
  for (const n of ["n1", "n2", "n3"]) assert.match(readFileSync(join(logsDir, "nats", `${n}.log`), "utf8"), /TLS required for client connections/, n);
  const kept = /run directory kept: (\S+)\)/.exec(r.logsDir ?? "")?.[1];
  if (kept !== undefined) rmSync(kept, { recursive: true, force: true });
  assert.equal(code, 0, out.slice(-4000));
});
