/**
 * The role table's generator: what a table list grants is that table's subjects only, `*` stands for every table with
 * whole-token wildcards, no role gets `$JS.>` and no client role `$JS.API.>`, each user its own inbox; and the
 * nats-server block refuses what it cannot write; an nkey user is written by its public key. (test/integration/least-privilege.test.ts runs a server on it.)
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createUser } from "@nats-io/nkeys";
import { authorizationBlock, NODE_ROLES, permissionsOf, ROLES, type UserSpec } from "../../../cluster/nats/permissions.ts";
import { isClientInbox } from "../../../cluster/nats/inbox.ts";
import { Subjects } from "../../../cluster/nats/subjects.ts";

const s = new Subjects("lake");
const spec = (o: Partial<UserSpec>): UserSpec => ({ user: "u", password: { literal: "pw" }, roles: ["producer"], tables: ["shop.orders"], ...o });

test("permissions - a producer of one table publishes to that table's subjects only, never its stream marker", () => {
  const p = permissionsOf(spec({}), s);
  assert.ok(p.publish.allow.includes("lake.in.shop.orders"));
  assert.ok(p.publish.allow.includes("lake.in.shop.orders.*"));
  assert.deepEqual(p.publish.deny, ["lake.in.shop.orders.stream-id"]);
  // Every subject that names a table names this one (no wildcard over tables, no other table).
  for (const subject of [...p.publish.allow, ...p.subscribe.allow]) {
    if (/lake[._]/i.test(subject) && !/KV_lake_(tables|snap)$|^\$JS\.API\.(INFO|CONSUMER\.(INFO|DELETE)\.KV_lake_tables\.\*)$|^\$JS\.FC\.KV_lake_tables\.>$/.test(subject))
      assert.match(subject, /shop[._]orders/, subject);
  }
  assert.deepEqual(p.subscribe.allow, ["_INBOX.u.>", "lake.snap.shop.orders"]);
});

test("permissions - a lookup user sends lookups of its tables only and receives its own inbox; readers answer every table's", () => {
  const p = permissionsOf(spec({ roles: ["lookup"] }), s);
  assert.deepEqual(p.publish.allow, ["lake.ctl.lookup.shop.orders"]);
  assert.deepEqual(p.subscribe.allow, ["_INBOX.u.>"]);
  const reader = permissionsOf(spec({ roles: ["reader"], tables: "*" }), s);
  assert.ok(reader.subscribe.allow.includes(s.lookupAnyTable), "readers subscribe to every table's lookups");
});

test("permissions - no role gets $JS.>, only nodes get $JS.API.>, every user subscribes to its own inbox", () => {
  for (const role of ROLES) {
    for (const tables of ["*", ["a.b", "c.d"]] as const) {
      const p = permissionsOf(spec({ user: `${role}-1`, roles: [role], tables }), s);
      const all = [...p.publish.allow, ...p.subscribe.allow];
      assert.ok(!all.includes("$JS.>") && !all.includes(">"), role);
      assert.equal(all.includes("$JS.API.>"), NODE_ROLES.includes(role), role);
      assert.ok(p.subscribe.allow.includes(`_INBOX.${role}-1.>`), role);
      assert.ok(!p.subscribe.allow.includes("_INBOX.>"), `${role} reads no other inbox`);
    }
  }
});

test("permissions - every table: whole-token wildcards for tables and stream names", () => {
  const p = permissionsOf(spec({ roles: ["consumer"], tables: "*" }), s);
  assert.ok(p.publish.allow.includes("lake.ctl.consume.open.*.*"));
  assert.ok(p.publish.allow.includes("$JS.API.DIRECT.GET.KV_lake_snap.$KV.lake_snap.*.*"));
  for (const subject of [...p.publish.allow, ...p.subscribe.allow]) for (const token of subject.split(".")) assert.ok(token === "*" || token === ">" || !/[*>]/.test(token), subject);
});

test("permissions - the block quotes subjects, references environment passwords, and refuses bad users", () => {
  const text = authorizationBlock([spec({ password: { env: "NATS_PW" } }), spec({ user: "w", roles: ["writer", "reader"], tables: "*" })], s);
  assert.match(text, /password: \$NATS_PW\n/);
  assert.match(text, /"\$JS\.API\.>"/);
  assert.doesNotMatch(text, /[^"]\$JS/);
  assert.throws(() => authorizationBlock([spec({}), spec({})], s), /given twice/);
  assert.throws(() => authorizationBlock([spec({ user: "a.b" })], s), /user name 'a\.b' cannot be used in a NATS subject/);
  assert.throws(() => authorizationBlock([spec({ password: { env: "lower" } })], s), /environment variable name/);
  assert.throws(() => permissionsOf(spec({ tables: ["db.>"] }), s), /cannot be used in a NATS subject/);
  assert.throws(() => permissionsOf(spec({ roles: [] }), s), /has no role/);
});

test("permissions - a user outside the role table gets exactly the permissions given, beside the role users", () => {
  const harness = { user: "harness", password: { env: "HARNESS_PW" }, what: "a test harness", permissions: { publish: { allow: ["$JS.API.CONSUMER.LIST.*"], deny: [] }, subscribe: { allow: ["_INBOX.harness.>"], deny: [] } } };
  const text = authorizationBlock([spec({}), harness], s);
  assert.match(text, /# a test harness; inbox prefix _INBOX\.harness\n\s+\{\n\s+user: "harness"\n\s+password: \$HARNESS_PW\n\s+permissions: \{\n\s+publish: \{ allow: \["\$JS\.API\.CONSUMER\.LIST\.\*"\] \}\n\s+subscribe: \{ allow: \["_INBOX\.harness\.>"\] \}/);
  assert.match(text, /# producer — tables: shop\.orders; inbox prefix _INBOX\.u\n/, "role users are written as before");
  assert.throws(() => authorizationBlock([spec({ user: "harness" }), harness], s), /given twice/);
});

test("permissions - an nkey user's entry holds its public key, no user or password; a seed is refused, never printed", () => {
  const kp = createUser();
  const text = authorizationBlock([spec({ user: "writer", password: { nkey: kp.getPublicKey() }, roles: ["writer"], tables: "*" })], s);
  assert.match(text, new RegExp(`# writer \\(nkey\\): writer — tables: every table; inbox prefix _INBOX\\.writer\n\\s+\\{\n\\s+nkey: "${kp.getPublicKey()}"\n\\s+permissions: \\{`));
  assert.doesNotMatch(text, /\buser:|password:/);
  const seed = new TextDecoder().decode(kp.getSeed());
  const refused = (() => {
    try {
      authorizationBlock([spec({ password: { nkey: seed } })], s);
      return "";
    } catch (e) {
      return (e as Error).message;
    }
  })();
  assert.match(refused, /user 'u': 'SU…' is not a user nkey's public key/);
  assert.ok(!refused.includes(seed.slice(2, 12)), "the message does not show the seed");
});

test("inboxes - nodes answer only subjects under _INBOX", () => {
  for (const ok of ["_INBOX.abc", "_INBOX.producer-a.xyz.1", "_INBOX_x.y"]) assert.equal(isClientInbox(ok), true, ok);
  for (const bad of [undefined, "", "_INBOX", "_INBOX.>", "_INBOX.*.x", "$JS.API.STREAM.PURGE.LAKE_IN_a_b", "lake.commit.a.b", "x._INBOX.y", "_INBOX. x"]) assert.equal(isClientInbox(bad), false, String(bad));
});
