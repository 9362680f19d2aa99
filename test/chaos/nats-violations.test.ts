/**
 * The `permissions` invariant of `chaos run --auth` can fail: a real nats-server with the run's users (chaos/auth.ts:
 * the role table's, passwords through the server's environment) logs nothing for what a role may do, and the
 * invariant then holds; a consumer that publishes rows (a subject its role lacks), subscribes to committables and a
 * client with a wrong password are logged, and the invariant fails naming them. The line scan on its own: every kind
 * of refusal nats-server logs (refused TLS handshakes included), nothing else (a handshake cut short is none). The
 * refused handshakes of a real server: test/chaos/chaos-tls.test.ts.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { waitFor } from "../helpers/cluster.ts";
import { newChaosAuth, type ChaosAuth } from "../../chaos/auth.ts";
import { permissionsInvariant, violationLines } from "../../chaos/nats-violations.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";

const subjects = new Subjects();
const TABLE = parseIdentifier("chaos.events");

let dir: string;
let log: string;
let nats: ServerHandle;
let auth: ChaosAuth;
const conns: NatsConnection[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "natslake-violations-"));
  log = join(dir, "nats.log");
  auth = newChaosAuth();
  nats = await startNats({ config: auth.natsConfig, env: { ...process.env, ...auth.natsServerEnv }, logFile: log });
});

after(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await nats?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

async function connectAs(user: "consumer" | "operator"): Promise<NatsConnection> {
  const nc = await connect({ ...auth.connectOptions(user), servers: nats.url });
  conns.push(nc);
  return nc;
}

test("violations - the scan finds each kind of refusal nats-server logs, and nothing else", () => {
  const refusals = [
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:7 - "v3.1.0:javascript:chaos-load" - Publish Violation - Subject "lake.commit.chaos.events"`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:7 - Publish Violation - Reply "lake.ctl.admin"`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:8 - Subscription Violation - Subject "lake.ctl.admin", SID 3`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:9 - authentication error - User "writer"`,
    `[1] 2026/12/07 04:30:00.000000 [TRC] 127.0.0.1:50000 - cid:9 - <<- [-ERR 'Permissions Violation for Publish to "x"']`,
    `[1] 2026/12/07 04:30:00.000000 [TRC] 127.0.0.1:50000 - cid:9 - <<- [-ERR 'Authorization Violation']`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:16 - TLS handshake error: tls: client didn't provide a certificate`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:17 - TLS handshake error: tls: failed to verify certificate: x509: certificate signed by unknown authority (CN=stranger)`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:17 - TLS handshake error: tls: failed to verify client certificate: x509: certificate signed by unknown authority`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:18 - TLS handshake error: remote error: tls: bad certificate`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:19 - "v3.3.1:nats.js" - authentication error - Nkey "UAWN7IHYHN74BSC5VPT5Z5JCJY6QVT7MR5PAI4TXAA55WHE6O7PMTQ4P"`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - rid:19 - TLS route handshake error: tls: client didn't provide a certificate`,
  ];
  const ordinary = [
    `[1] 2026/12/07 04:30:00.000000 [INF] Server is ready`,
    `[1] 2026/12/07 04:30:00.000000 [WRN] 127.0.0.1:50000 - rid:5 - Readloop processing time: 2.1s`,
    `[1] 2026/12/07 04:30:00.000000 [INF] JetStream cluster new stream leader for 'USERS > LAKE_IN_chaos_events'`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:4 - Error reading from client: connection reset by peer`,
    // A handshake cut short (a start-up check hanging up after the plain INFO, a process killed or paused) is no refusal.
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:14 - TLS handshake error: EOF`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:15 - TLS handshake error: read tcp 127.0.0.1:4222->127.0.0.1:50000: read: connection reset by peer`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - cid:15 - TLS handshake error: read tcp 127.0.0.1:4222->127.0.0.1:50000: i/o timeout`,
    `[1] 2026/12/07 04:30:00.000000 [ERR] 127.0.0.1:50000 - rid:14 - TLS route handshake error: EOF`,
    `[1] 2026/12/07 04:30:00.000000 [INF] TLS required for client connections`,
  ];
  assert.deepEqual(violationLines([...ordinary, ...refusals, ""].join("\n")), refusals);
  assert.deepEqual(violationLines(ordinary.join("\n")), []);
});

test("violations - the invariant holds over a log of permitted work and fails on a refusal of the real server", async () => {
  const op = await connectAs("operator");
  // Permitted: the operator's admin request subject (nobody answers; the publish itself is what is checked).
  op.publish(subjects.admin, "{}");
  await op.flush();
  const before = permissionsInvariant([log]);
  assert.ok(before.ok, before.detail);
  assert.match(before.detail, /no permission or authorization violation in the 1 nats-server logs/);

  const consumer = await connectAs("consumer");
  consumer.publish(subjects.ingestRaw(TABLE), JSON.stringify({ id: 1 }));
  consumer.subscribe(subjects.commit(TABLE));
  await consumer.flush().catch(() => undefined);
  const bad = await connect({ servers: nats.url, user: "writer", pass: "not-the-password", reconnect: false }).catch((e: unknown) => e);
  assert.ok(bad instanceof Error, "a wrong password is refused");

  const failed = await waitFor("the three refusals logged", () => {
    const r = permissionsInvariant([log]);
    return /3 refusals/.test(r.detail) ? r : undefined;
  }, 10_000, 100);
  assert.equal(failed.ok, false);
  assert.match(failed.detail, new RegExp(`Publish Violation - Subject "${subjects.ingestRaw(TABLE).replace(/\./g, "\\.")}"`));
  assert.match(failed.detail, new RegExp(`Subscription Violation - Subject "${subjects.commit(TABLE).replace(/\./g, "\\.")}"`));
  assert.match(failed.detail, /authentication error - User "writer"/);
});

test("violations - a log that cannot be read, or none at all, fails the invariant", () => {
  const missing = permissionsInvariant([log, join(dir, "n9.log")]);
  assert.equal(missing.ok, false);
  assert.match(missing.detail, /cannot read nats-server logs: n9\.log \(ENOENT\)/);
  assert.equal(permissionsInvariant([]).ok, false);
});
