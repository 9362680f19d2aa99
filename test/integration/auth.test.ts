/**
 * Authenticated, encrypted NATS and Redis (cluster/nats/connect-options.ts, cluster/redis/connect-options.ts) against
 * real servers configured for each: nats-server with users and passwords, an nkey user, mutual TLS (certificates made
 * by openssl), a token, TLS-first, and an operator with JWT accounts (resolver MEMORY); redis-server with an ACL user
 * (`default` off) over mutual TLS. Each kind of credentials connects; none, wrong ones and an untrusted certificate are
 * refused quickly with a message that says which; a whole cluster (node, producer, consumer, CLI) runs on the
 * authenticated servers, and its logs, `status` and metrics never show a secret.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { createUser } from "@nats-io/nkeys";
import { startNats, startRedis, type ServerHandle } from "../helpers/servers.ts";
import { makeOperatorSetup, makeTestCerts, type TestCerts } from "../helpers/security.ts";
import { producerWhenRegistered, spawnNode, waitFor } from "../helpers/cluster.ts";
import { pythonBin, REPO_ROOT } from "../helpers/python.ts";
import { startOtlpReceiver } from "../helpers/otlp-receiver.ts";
import { connectNats } from "../../cluster/nats/connect.ts";
import type { NatsAuthSettings } from "../../cluster/nats/connect-options.ts";
import { openConsumer } from "../../cluster/consumer.ts";
import { connectLeaseRedis } from "../../cluster/redis/lease.ts";
import { RedisCommitLock } from "../../cluster/redis/commit-lock.ts";
import { redisConnectionOptions, type RedisAuthSettings } from "../../cluster/redis/connect-options.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

const dir = mkdtempSync(join(tmpdir(), "natslake-auth-"));
const PASSWORD = `pw-${randomBytes(12).toString("hex")}`;
const TOKEN = `tok-${randomBytes(12).toString("hex")}`;
const REDIS_PASSWORD = `rpw-${randomBytes(12).toString("hex")}`;
const SECRETS = [PASSWORD, TOKEN, REDIS_PASSWORD];
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
};
const passwordFile = file("nats-password", `${PASSWORD}\n`);
const redisPasswordFile = file("redis-password", `${REDIS_PASSWORD}\n`);
const wrongPasswordFile = file("wrong-password", "not-the-password\n");
const tokenFile = file("token", `${TOKEN}\n`);

let certs: TestCerts;
let userNkeySeed: string;
/** Users with passwords and an nkey user, over TLS that requires a client certificate signed by the test CA. */
let natsMtls: ServerHandle;
/** A token, no TLS. */
let natsToken: ServerHandle;
/** TLS first (handshake_first), no credentials. */
let natsTlsFirst: ServerHandle;
/** Operator mode: an account preloaded in the memory resolver, users with JWT credentials. */
let natsOperator: ServerHandle;
let operator: ReturnType<typeof makeOperatorSetup>;
/** An ACL user (default user off), mutual TLS. */
let redis: ServerHandle;

function natsConfig(name: string, text: string): string[] {
  return ["-c", file(`${name}.conf`, text)];
}

before(async () => {
  certs = makeTestCerts(dir);
  const nkey = createUser();
  userNkeySeed = file("user.nk", `${new TextDecoder().decode(nkey.getSeed())}\n`);
  const tls = `cert_file: "${certs.serverCert}"\n  key_file: "${certs.serverKey}"\n  ca_file: "${certs.ca}"\n  timeout: 2`;
  operator = makeOperatorSetup();
  const started = await Promise.allSettled([
    startNats({ extraArgs: natsConfig("mtls", `authorization {\n  users: [\n    { user: "lake", password: "${PASSWORD}" }\n    { nkey: "${nkey.getPublicKey()}" }\n  ]\n}\ntls {\n  ${tls}\n  verify: true\n}\n`) }),
    startNats({ extraArgs: natsConfig("token", `authorization {\n  token: "${TOKEN}"\n}\n`) }),
    startNats({
      extraArgs: natsConfig("tls-first", `tls {\n  ${tls}\n  handshake_first: true\n}\n`),
      probeTls: { ca: readFileSync(certs.ca) },
    }),
    startNats({ extraArgs: natsConfig("operator", operator.serverConfig) }),
    startRedis({
      // The narrowest ACL docs/operations/security.md documents for natslake.
      extraArgs: ["--user", "default", "off", "--user", "lake", "on", `>${REDIS_PASSWORD}`, "~natslake:*", "+set", "+get", "+incr", "+pexpire", "+del", "+ping", "+eval", "+evalsha", "+info"],
      probeAuth: { user: "lake", password: REDIS_PASSWORD },
      tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, authClients: true },
    }),
  ]);
  // Every server that started is stopped after, even when another one failed to.
  [natsMtls, natsToken, natsTlsFirst, natsOperator, redis] = started.map((r) => (r.status === "fulfilled" ? r.value : undefined)) as [ServerHandle, ServerHandle, ServerHandle, ServerHandle, ServerHandle];
  const failed = started.find((r) => r.status === "rejected");
  if (failed !== undefined) throw failed.reason;
});

after(async () => {
  await Promise.all([natsMtls, natsToken, natsTlsFirst, natsOperator, redis].filter((s) => s !== undefined).map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const mtls = (): NatsAuthSettings => ({ natsTlsCa: certs.ca, natsTlsCert: certs.clientCert, natsTlsKey: certs.clientKey });
const NO_ENV = {};

/** Connects, checks the connection works (a round trip), closes; or returns the refusal's message (within 10 s). */
async function tryConnect(url: string, settings: NatsAuthSettings, env: NodeJS.ProcessEnv = NO_ENV): Promise<string> {
  const started = Date.now();
  try {
    const nc = await connectNats(url, settings, { timeout: 5000 }, env);
    await nc.flush();
    await nc.close();
    return "connected";
  } catch (e) {
    assert.ok(Date.now() - started < 10_000, `refused within 10 s, not after ${Date.now() - started} ms`);
    const msg = (e as Error).message;
    for (const s of SECRETS) assert.ok(!msg.includes(s), `a secret in the message: ${msg}`);
    return msg;
  }
}

test("auth - users, nkeys, tokens, JWT credentials and TLS-first connect; none, wrong or unknown ones and untrusted certificates are refused, saying which", { timeout: 120_000 }, async () => {
  const url = natsMtls.url;
  assert.equal(await tryConnect(url, { ...mtls(), natsUser: "lake", natsPasswordFile: passwordFile }), "connected");
  assert.equal(await tryConnect(url, { ...mtls(), natsUser: "lake" }, { NATSLAKE_NATS_PASSWORD: PASSWORD }), "connected", "the password from the environment");
  assert.equal(await tryConnect(url, { ...mtls(), natsNkey: userNkeySeed }), "connected", "an nkey seed file");
  assert.equal(await tryConnect(url.replace("nats://", `nats://lake:${PASSWORD}@`), mtls()), "connected", "a password in the URL still works");

  assert.match(await tryConnect(url, mtls()), /^cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+: the NATS server requires credentials and none were given/);
  assert.match(await tryConnect(url, { ...mtls(), natsUser: "lake", natsPasswordFile: wrongPasswordFile }), /refused the credentials \(authorization violation; user 'lake'\)/);
  assert.match(await tryConnect(url, { ...mtls(), natsNkey: file("other.nk", new TextDecoder().decode(createUser().getSeed())) }), /refused the credentials .*nkey seed file/);
  const inUrl = await tryConnect(url.replace("nats://", "nats://lake:wrong-in-url@"), mtls());
  assert.match(inUrl, /nats:\/\/lake:\*\*\*@127\.0\.0\.1:\d+: the NATS server refused the credentials .*credentials in the URL/);
  assert.ok(!inUrl.includes("wrong-in-url"), inUrl);

  // TLS: the server's certificate signed by a CA this client does not trust; no TLS settings at all (the server
  // requires TLS: the client upgrades, and the system's CAs do not know the test CA); no client certificate; one signed
  // by a CA the server does not trust.
  const user = { natsUser: "lake", natsPasswordFile: passwordFile };
  assert.match(await tryConnect(url, { ...user, natsTlsCa: certs.otherCa, natsTlsCert: certs.clientCert, natsTlsKey: certs.clientKey }), /TLS certificate is not trusted .*--nats-tls-ca/);
  assert.match(await tryConnect(url, user), /TLS certificate is not trusted/);
  assert.match(await tryConnect(url, { ...user, natsTlsCa: certs.ca }), /requires a client certificate|refused this client.s certificate/);
  assert.match(await tryConnect(url, { ...user, natsTlsCa: certs.ca, natsTlsCert: certs.strangerCert, natsTlsKey: certs.strangerKey }), /refused this client's certificate|requires a client certificate/);

  // A token, from the environment or a file; TLS asked of a server without it.
  assert.equal(await tryConnect(natsToken.url, {}, { NATSLAKE_NATS_TOKEN: TOKEN }), "connected");
  assert.equal(await tryConnect(natsToken.url, { natsTokenFile: tokenFile }), "connected");
  assert.equal(await tryConnect(natsToken.url.replace("nats://", `nats://${TOKEN}@`), {}), "connected", "a token in the URL");
  assert.match(await tryConnect(natsToken.url, { natsTokenFile: wrongPasswordFile }), /refused the credentials .*token file/);
  assert.match(await tryConnect(natsToken.url, {}), /requires credentials and none were given/);
  assert.match(await tryConnect(natsToken.url, { natsTokenFile: tokenFile, natsTlsCa: certs.ca }), /TLS was asked for .* does not offer it/);

  // TLS first.
  assert.equal(await tryConnect(natsTlsFirst.url, { natsTlsCa: certs.ca, natsTlsFirst: true }), "connected");

  // Operator mode: a user of the preloaded account (JetStream enabled for it), a user of an unknown account.
  const creds = file("user.creds", operator.userCreds);
  const nc = await connectNats(natsOperator.url, { natsCreds: creds }, {}, NO_ENV);
  try {
    assert.ok((await (await jetstreamManager(nc)).getAccountInfo()).limits !== undefined, "JetStream answers the account's user");
  } finally {
    await nc.close();
  }
  assert.match(await tryConnect(natsOperator.url, { natsCreds: file("stranger.creds", operator.strangerCreds) }), /refused the credentials .*credentials file/);
  assert.match(await tryConnect(natsOperator.url, {}), /requires credentials and none were given|refused the credentials/);

  // Settings that cannot be used are named before anything connects.
  assert.match(await tryConnect(url, { natsCreds: join(dir, "missing.creds") }), /cannot read the file of --nats-creds \(NATSLAKE_NATS_CREDS\) '.*missing\.creds': no such file/);
  assert.match(await tryConnect(url, { natsCreds: passwordFile }), /is not a NATS credentials file/);
  assert.match(await tryConnect(url, { natsUser: "lake", natsTokenFile: tokenFile }), /give one kind of NATS credentials/);
  assert.match(await tryConnect(url, { natsUser: "lake" }), /needs a password: --nats-password-file <file> or NATSLAKE_NATS_PASSWORD/);
});

function natslake(args: string[], env: NodeJS.ProcessEnv = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("NATSLAKE_NATS_") && !k.startsWith("NATSLAKE_REDIS")));
  return spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: 60_000, env: { ...clean, ...env } });
}

test("auth - CLI refusals: exit 1 with the reason for no, wrong and in-URL credentials and an untrusted certificate; exit 2 for a credentials file that cannot be read; --help names the flags", { timeout: 120_000 }, () => {
  const url = natsMtls.url;
  const tlsFlags = ["--nats-tls-ca", certs.ca, "--nats-tls-cert", certs.clientCert, "--nats-tls-key", certs.clientKey];
  const cases: [string, string[], NodeJS.ProcessEnv, number, RegExp][] = [
    ["no credentials", ["status", "--nats", url, ...tlsFlags], {}, 1, /^error: cannot connect to NATS at .*requires credentials and none were given/],
    ["a wrong password", ["status", "--nats", url, ...tlsFlags, "--nats-user", "lake"], { NATSLAKE_NATS_PASSWORD: "wrong" }, 1, /refused the credentials \(authorization violation; user 'lake'\)/],
    ["a wrong password in the URL", ["table", "create", "a.b", "--columns", "id INT", "--nats", url.replace("nats://", "nats://lake:bad-secret@"), ...tlsFlags], {}, 1, /NATS at nats:\/\/lake:\*\*\*@127/],
    ["an untrusted certificate", ["status", "--nats", url, "--nats-user", "lake", "--nats-password-file", passwordFile, "--nats-tls-ca", certs.otherCa], {}, 1, /TLS certificate is not trusted/],
    ["a credentials file that is not there", ["dlq", "list", "a.b", "--nats", url, "--nats-creds", join(dir, "nope.creds")], {}, 2, /cannot read the file of --nats-creds/],
    ["up with NATS credentials but its own server", ["up", "--nats-user", "lake", "--duration", "1"], {}, 2, /NATS credentials and TLS flags are for a server of yours: give its --nats URL too/],
    ["a node whose password file is not there", ["node", "--nats", url, "--warehouse", dir, "--roles", "reader", "--nats-user", "lake", "--nats-password-file", join(dir, "nope")], {}, 2, /cannot read the file of --nats-password-file/],
  ];
  for (const [what, args, env, code, message] of cases) {
    const started = Date.now();
    const r = natslake(args, env);
    assert.equal(r.status, code, `${what}: exit ${r.status}\n${r.stderr}`);
    assert.match(r.stderr, message, what);
    assert.ok(!/\n\s+at /.test(r.stderr), `${what}: no stack\n${r.stderr}`);
    assert.ok(!r.stderr.includes("bad-secret") && !r.stdout.includes("bad-secret"), `${what}: the URL's password printed`);
    assert.ok(Date.now() - started < 30_000, `${what}: took ${Date.now() - started} ms`);
  }
  // The Python examples take the same environment (examples/python/example_nats.py): a token file, TLS with the CA.
  const py = (env: NodeJS.ProcessEnv, url: string) =>
    spawnSync(pythonBin(), ["-c", "import asyncio, sys, example_nats\nasync def m():\n    nc = await example_nats.connect('t', sys.argv[1])\n    print('connected' if nc else 'refused')\n    if nc: await nc.close()\nasyncio.run(m())", url], { cwd: join(REPO_ROOT, "examples/python"), encoding: "utf8", timeout: 60_000, env: { ...process.env, ...env } });
  assert.equal(py({ NATSLAKE_NATS_TOKEN_FILE: tokenFile }, natsToken.url).stdout.trim(), "connected");
  assert.equal(py({ NATSLAKE_NATS_USER: "lake", NATSLAKE_NATS_PASSWORD_FILE: passwordFile, NATSLAKE_NATS_TLS_CA: certs.ca, NATSLAKE_NATS_TLS_CERT: certs.clientCert, NATSLAKE_NATS_TLS_KEY: certs.clientKey }, url).stdout.trim(), "connected");
  const refused = py({ NATSLAKE_NATS_TOKEN_FILE: wrongPasswordFile }, natsToken.url.replace("nats://", "nats://u:in-url-secret@"));
  assert.equal(refused.stdout.trim(), "refused");
  assert.ok(!refused.stderr.includes("in-url-secret"), refused.stderr);

  const help = natslake(["status", "--help"]);
  for (const flag of ["--nats-creds <file>", "--nats-nkey <file>", "--nats-user <name>", "--nats-password-file <file>", "--nats-token-file <file>", "--nats-tls-ca <file>", "--nats-tls-cert <file>", "--nats-tls-key <file>", "--nats-tls-first"]) assert.ok(help.stdout.includes(flag), `status --help lists ${flag}`);
  assert.ok(natslake(["node", "--help"]).stdout.includes("--redis-password-file <file>"));
});

test("auth - a cluster on NATS with users over mutual TLS and Redis with an ACL user over mutual TLS: table created by the CLI, rows land, commit and are consumed; no secret in the logs, status, metrics or traces; bad credentials fail a node's start with the reason", { timeout: 240_000 }, async () => {
  const warehouse = join(dir, "warehouse");
  const natsFlags = ["--nats-user", "lake", "--nats-tls-ca", certs.ca, "--nats-tls-cert", certs.clientCert, "--nats-tls-key", certs.clientKey];
  const redisFlags = ["--redis-user", "lake", "--redis-password-file", redisPasswordFile, "--redis-tls-ca", certs.ca, "--redis-tls-cert", certs.clientCert, "--redis-tls-key", certs.clientKey];
  const logFile = join(dir, "n1.log");
  // Traces too are searched for the secrets: the node exports its spans to a collector of the test's.
  const traces = await startOtlpReceiver();
  const node = spawnNode({ id: "n1", nats: natsMtls.url, redis: redis.url, warehouse, logFile, extra: [...natsFlags, ...redisFlags, "--metrics-port", "0"], env: { NATSLAKE_NATS_PASSWORD: PASSWORD, OTEL_EXPORTER_OTLP_ENDPOINT: traces.url, OTEL_BSP_SCHEDULE_DELAY: "200" } });
  const logs = (): string => readFileSync(logFile, "utf8");
  try {
    const metricsUrl = await waitFor("the node's metrics endpoint", () => {
      if (node.exitCode !== null) throw new Error(`the node exited (${node.exitCode}):\n${logs()}`);
      return /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(logs())?.[1];
    }, 60_000);
    await waitFor("the node started", () => (logs().includes('"msg":"node started"') ? true : undefined), 60_000);

    const env = { NATSLAKE_NATS_PASSWORD: PASSWORD };
    const created = natslake(["table", "create", "au.t", "--columns", "id BIGINT NOT NULL", "--option", "bucket=2", "--option", "bucket-key=id", "--nats", natsMtls.url, ...natsFlags], env);
    assert.equal(created.status, 0, created.stderr);

    const nc = await connectNats(natsMtls.url, { ...mtls(), natsUser: "lake", natsPasswordFile: passwordFile }, {}, NO_ENV);
    try {
      const producer = await producerWhenRegistered(nc, "au.t");
      const pending = Array.from({ length: 300 }, (_, i) => producer.write({ id: i }));
      await producer.flush();
      assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0);
      await producer.waitVisible(producer.token(), 60_000);
      await producer.close();
      const snapshot = await (await new Catalog(warehouse).getTable(parseIdentifier("au.t"))).snapshots.latest();
      assert.equal(snapshot?.totalRecordCount, 300);

      const consumer = await openConsumer({ nc, table: "au.t", from: "full", consumerId: "auth" });
      const ids = new Set<number>();
      for await (const s of consumer) {
        for await (const b of s.batches) for (const v of b.getChild("id")!.toArray()) ids.add(Number(v));
        await s.ack();
        if (ids.size >= 300) break;
      }
      await consumer.close();
      assert.equal(ids.size, 300);
    } finally {
      await nc.close();
    }

    const status = natslake(["status", "--nats", natsMtls.url, ...natsFlags, "--json"], env);
    assert.equal(status.status, 0, status.stderr);
    assert.match(status.stdout, /au\.t/);
    const metrics = await (await fetch(metricsUrl)).text();
    await waitFor("the node's commit spans", () => (traces.spans.some((sp) => sp.name === "natslake.commit") ? true : undefined), 30_000);
    for (const [where, text] of [["the node's log", logs()], ["status", status.stdout + status.stderr], ["metrics", metrics], ["traces", JSON.stringify(traces.spans)]] as const) {
      for (const s of SECRETS) assert.ok(!text.includes(s), `a secret in ${where}`);
    }

    // Bad credentials fail a node's start at once, with the reason: NATS's, then Redis's.
    for (const [what, env2, extra, message] of [
      ["a wrong NATS password", { NATSLAKE_NATS_PASSWORD: "wrong" }, redisFlags, /refused the credentials \(authorization violation; user 'lake'\)/],
      ["a wrong Redis password", { NATSLAKE_NATS_PASSWORD: PASSWORD }, [...redisFlags.slice(0, 2), "--redis-password-file", wrongPasswordFile, ...redisFlags.slice(4)], /WRONGPASS/],
    ] as const) {
      const started = Date.now();
      const bad = spawn(process.execPath, [BIN, "node", "--nats", natsMtls.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", "bad", ...natsFlags, ...extra], { env: { ...process.env, ...env2 }, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      bad.stdout.on("data", (b: Buffer) => (out += b.toString()));
      bad.stderr.on("data", (b: Buffer) => (out += b.toString()));
      const code = await new Promise<number | null>((resolve) => bad.once("exit", resolve));
      assert.equal(code, 1, `${what}: exit ${code}\n${out}`);
      assert.match(out, message, what);
      assert.ok(Date.now() - started < 30_000, `${what}: the start failed after ${Date.now() - started} ms`);
      for (const s of SECRETS) assert.ok(!out.includes(s), `${what}: a secret in the output`);
    }
  } finally {
    node.kill("SIGKILL");
    await traces.close();
  }
});

test("auth - Redis refusals name which: no credentials, a wrong password, an untrusted certificate", { timeout: 60_000 }, async () => {
  const tls = { redisTlsCa: certs.ca, redisTlsCert: certs.clientCert, redisTlsKey: certs.clientKey };
  const refusal = async (settings: RedisAuthSettings): Promise<string> => {
    const started = Date.now();
    try {
      (await connectLeaseRedis(redis.url, { auth: redisConnectionOptions(settings, NO_ENV), commandTimeoutMs: 1000 })).disconnect();
      return "connected";
    } catch (e) {
      assert.ok(Date.now() - started < 10_000, `refused after ${Date.now() - started} ms`);
      return (e as Error).message;
    }
  };
  assert.equal(await refusal({ ...tls, redisUser: "lake", redisPasswordFile: redisPasswordFile }), "connected");
  assert.match(await refusal(tls), /^redis at rediss:\/\/127\.0\.0\.1:\d+: cannot connect: Redis requires authentication and none was given/);
  assert.match(await refusal({ ...tls, redisUser: "lake", redisPasswordFile: wrongPasswordFile }), /Redis refused the credentials \(WRONGPASS/);
  assert.match(await refusal({ ...tls, redisTlsCa: certs.otherCa, redisUser: "lake", redisPasswordFile: redisPasswordFile }), /TLS certificate is not trusted .*--redis-tls-ca/);
});

test("auth - the commit lock's Redis: an ACL user over mutual TLS, from the NATSLAKE_REDIS_* environment, takes and releases a lock; none, a wrong password or an untrusted certificate fails the commit naming which, in seconds", { timeout: 60_000 }, async () => {
  const env = { NATSLAKE_REDIS_USER: "lake", NATSLAKE_REDIS_PASSWORD_FILE: redisPasswordFile, NATSLAKE_REDIS_TLS_CA: certs.ca, NATSLAKE_REDIS_TLS_CERT: certs.clientCert, NATSLAKE_REDIS_TLS_KEY: certs.clientKey };
  const lockWith = (lockEnv: NodeJS.ProcessEnv) => new RedisCommitLock(redis.url, { auth: redisConnectionOptions({}, lockEnv), commandTimeoutMs: 2000, waitMs: 2000 });
  const lock = lockWith(env);
  try {
    assert.equal(await lock.withLock("au.t", async (timeLeft) => ((await timeLeft()) > 0 ? "held" : "lost")), "held");
  } finally {
    await lock.close();
  }
  // Without `auth`, a lock reads the same settings from the process's environment (a CLI command writing the warehouse).
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const fromEnv = new RedisCommitLock(redis.url, { commandTimeoutMs: 2000 });
  try {
    await fromEnv.check();
  } finally {
    await fromEnv.close();
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }

  const tls = { NATSLAKE_REDIS_TLS_CA: certs.ca, NATSLAKE_REDIS_TLS_CERT: certs.clientCert, NATSLAKE_REDIS_TLS_KEY: certs.clientKey };
  for (const [what, lockEnv, message] of [
    ["no credentials", tls, /Redis requires authentication and none was given/],
    ["a wrong password", { ...env, NATSLAKE_REDIS_PASSWORD_FILE: wrongPasswordFile }, /Redis refused the credentials \(WRONGPASS/],
    ["an untrusted certificate", { ...env, NATSLAKE_REDIS_TLS_CA: certs.otherCa }, /TLS certificate is not trusted .*--redis-tls-ca/],
  ] as const) {
    const bad = lockWith(lockEnv);
    const started = Date.now();
    try {
      const err = await bad.withLock("au.t", async () => "held").then(() => assert.fail(`${what}: the lock was taken`), (e: unknown) => e as Error);
      assert.match(err.message, /^commit lock: redis at rediss:\/\/127\.0\.0\.1:\d+: SET NX failed: /, what);
      assert.match(err.message, message, what);
      for (const s of SECRETS) assert.ok(!err.message.includes(s), `${what}: a secret in the message`);
      assert.ok(Date.now() - started < 10_000, `${what}: refused after ${Date.now() - started} ms`);
    } finally {
      await bad.close();
    }
  }
});
