/**
 * The pure parts of NATS connection settings: URLs printed without their secrets, credentials taken out of URLs (which
 * nats.js does not read), and settings refused before anything connects. Servers: test/integration/auth.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { redactUrl, redactUrlsIn } from "../../../cluster/nats/connect-errors.ts";
import { splitUrlCredentials } from "../../../cluster/nats/connect.ts";
import { natsAuthFromEnv, natsConnectionOptions } from "../../../cluster/nats/connect-options.ts";

test("connect options - a URL's password or token is printed as ***, in a URL list and in any text", () => {
  assert.equal(redactUrl("nats://lake:s3cret@127.0.0.1:4222"), "nats://lake:***@127.0.0.1:4222");
  assert.equal(redactUrl("nats://t0ken@a:4222, tls://u:p@b:4222,nats://c:4222"), "nats://***@a:4222, tls://u:***@b:4222,nats://c:4222");
  assert.equal(redactUrl("lake:s3cret@127.0.0.1:4222"), "lake:***@127.0.0.1:4222");
  assert.equal(redactUrl("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  assert.equal(redactUrlsIn('error: redis at rediss://lake:pw@h:6380 said "x" to a@b.c'), 'error: redis at rediss://lake:***@h:6380 said "x" to a@b.c');
});

test("connect options - credentials in URLs become user/password or a token; the URLs lose them", () => {
  assert.deepEqual(splitUrlCredentials(["nats://lake:p%40ss@a:4222", "nats://b:4222"]), { servers: ["nats://a:4222", "nats://b:4222"], auth: { user: "lake", pass: "p@ss" } });
  assert.deepEqual(splitUrlCredentials(["tok@a:4222"]), { servers: ["a:4222"], auth: { token: "tok" } });
  assert.deepEqual(splitUrlCredentials(["nats://a:4222"]), { servers: ["nats://a:4222"], auth: {} });
});

test("connect options - settings from the environment; a password without a user, two kinds of credentials, a half client certificate are refused", () => {
  assert.deepEqual(natsAuthFromEnv({ NATSLAKE_NATS_USER: "u", NATSLAKE_NATS_TLS_FIRST: "true", NATSLAKE_NATS_CREDS: "" }), { natsUser: "u", natsTlsFirst: true });
  assert.throws(() => natsAuthFromEnv({ NATSLAKE_NATS_TLS_FIRST: "maybe" }), /NATSLAKE_NATS_TLS_FIRST: expected true or false/);
  assert.deepEqual(natsConnectionOptions({ natsUser: "u" }, { NATSLAKE_NATS_PASSWORD: "p" }), { user: "u", pass: "p" });
  assert.deepEqual(natsConnectionOptions({}, { NATSLAKE_NATS_TOKEN: "t" }), { token: "t" });
  assert.deepEqual(natsConnectionOptions({}, {}), {});
  assert.throws(() => natsConnectionOptions({}, { NATSLAKE_NATS_PASSWORD: "p" }), /needs a user: --nats-user/);
  assert.throws(() => natsConnectionOptions({ natsUser: "u" }, { NATSLAKE_NATS_PASSWORD: "p", NATSLAKE_NATS_TOKEN: "t" }), /give one kind of NATS credentials, not a user \(--nats-user\) and a token \(NATSLAKE_NATS_TOKEN\)/);
  assert.throws(() => natsConnectionOptions({ natsTlsCert: "c.pem" }, {}), /needs both --nats-tls-cert and --nats-tls-key/);
});
