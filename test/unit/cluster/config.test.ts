import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadNodeConfig } from "../../../cluster/config.ts";
import { nodeConfigOf } from "../../../cluster/cli/cluster-commands.ts";
import { natsConnectionOptions } from "../../../cluster/nats/connect-options.ts";
import { redisConnectionOptions } from "../../../cluster/redis/connect-options.ts";
import { tempDir } from "../../helpers/tables.ts";

test("config - flag over environment over file over default", () => {
  const d = tempDir();
  try {
    const file = join(d.path, "node.json");
    writeFileSync(file, JSON.stringify({ nats: "nats://file:4222", warehouse: "/wh-file", roles: ["writer"], commitInterval: "1s", replicas: 3 }));
    const cfg = loadNodeConfig({ flags: { nats: "nats://flag:4222" }, env: { NATSLAKE_WAREHOUSE: "/wh-env", NATSLAKE_COMMIT_INTERVAL: "500ms" }, file });
    assert.equal(cfg.nats, "nats://flag:4222");
    assert.equal(cfg.warehouse, "/wh-env");
    assert.equal(cfg.commitInterval, 500);
    assert.equal(cfg.replicas, 3);
    assert.deepEqual(cfg.roles, ["writer"]);
    assert.equal(cfg.leaseTtl, 2000, "default");
    assert.match(cfg.nodeId, /^[A-Za-z0-9_-]+$/);
  } finally {
    d.cleanup();
  }
});

test("config - wrong values fail naming the setting", () => {
  assert.throws(() => loadNodeConfig({ flags: { nats: "nats://x", warehouse: "/w", roles: ["writer", "chef"] }, env: {} }), /roles\.1/);
  assert.throws(() => loadNodeConfig({ flags: { nats: "nats://x", warehouse: "/w", roles: ["writer"], commitInterval: "soon" }, env: {} }), /commitInterval: 'soon' is not a duration/);
  assert.throws(() => loadNodeConfig({ flags: { nats: "nats://x", warehouse: "/w", roles: ["committer"] }, env: {} }), /committer role needs --redis/);
  assert.throws(() => loadNodeConfig({ flags: { warehouse: "/w", roles: ["writer"] }, env: {} }), /nats/);
  assert.throws(() => loadNodeConfig({ flags: { nats: "nats://x", warehouse: "/w", roles: ["writer"], nodeId: "a b" }, env: {} }), /nodeId/);
  assert.throws(() => loadNodeConfig({ flags: {}, env: {}, file: "/nonexistent.json" }), /cannot read config file/);
});

test("config - the writers' memory budget takes a size from a flag, the environment or a file", () => {
  const base = { nats: "nats://x", warehouse: "/w", roles: ["writer"] };
  assert.equal(loadNodeConfig({ flags: base, env: {} }).writerMemory, 128 * 1024 * 1024, "default");
  assert.equal(loadNodeConfig({ flags: { ...base, writerMemory: "32mb" }, env: { NATSLAKE_WRITER_MEMORY: "1gb" } }).writerMemory, 32 * 1024 * 1024);
  assert.equal(loadNodeConfig({ flags: base, env: { NATSLAKE_WRITER_MEMORY: "512 kb" } }).writerMemory, 512 * 1024);
  assert.throws(() => loadNodeConfig({ flags: { ...base, writerMemory: "lots" }, env: {} }), /writerMemory: 'lots' is not a memory size/);
  assert.throws(() => loadNodeConfig({ flags: { ...base, writerMemory: "0mb" }, env: {} }), /writerMemory: expected a size above zero/);
});

test("config - compaction workers' nice value: 10 by default, from the environment, 0 allowed, beyond 19 refused", () => {
  const base = { nats: "nats://x", warehouse: "/w", roles: ["writer"] };
  assert.equal(loadNodeConfig({ flags: base, env: {} }).compactionNice, 10, "default");
  assert.equal(loadNodeConfig({ flags: base, env: { NATSLAKE_COMPACTION_NICE: "0" } }).compactionNice, 0);
  assert.equal(loadNodeConfig({ flags: base, env: { NATSLAKE_COMPACTION_NICE: "19" } }).compactionNice, 19);
  assert.throws(() => loadNodeConfig({ flags: base, env: { NATSLAKE_COMPACTION_NICE: "20" } }), /compactionNice/);
  assert.throws(() => loadNodeConfig({ flags: base, env: { NATSLAKE_COMPACTION_NICE: "low" } }), /compactionNice/);
});

test("config - the decode deadline: 2 min by default, a duration from the environment or a file, under 1 s refused", () => {
  const base = { nats: "nats://x", warehouse: "/w", roles: ["writer"] };
  assert.equal(loadNodeConfig({ flags: base, env: {} }).decodeDeadline, 120_000, "default");
  assert.equal(loadNodeConfig({ flags: base, env: { NATSLAKE_DECODE_DEADLINE: "4s" } }).decodeDeadline, 4000);
  assert.equal(loadNodeConfig({ flags: { ...base, decodeDeadline: "5 min" }, env: {} }).decodeDeadline, 300_000);
  assert.throws(() => loadNodeConfig({ flags: base, env: { NATSLAKE_DECODE_DEADLINE: "500ms" } }), /decodeDeadline: expected at least 1 s \(got 500 ms\)/);
  assert.throws(() => loadNodeConfig({ flags: base, env: { NATSLAKE_DECODE_DEADLINE: "never" } }), /decodeDeadline: 'never' is not a duration/);
});

test("config - an unknown key in the config file is refused, naming the nearest known setting", () => {
  const d = tempDir();
  try {
    const file = join(d.path, "node.json");
    writeFileSync(file, JSON.stringify({ nats: "nats://x", warehouse: "/w", roles: ["writer"], commitIntervall: "1s", leasettl: "5s", zzzz: 1 }));
    assert.throws(
      () => loadNodeConfig({ flags: {}, env: {}, file }),
      (e: Error) =>
        /commitIntervall: unknown setting \(did you mean 'commitInterval'\?\)/.test(e.message) &&
        /leasettl: unknown setting \(did you mean 'leaseTtl'\?\)/.test(e.message) &&
        /zzzz: unknown setting\n/.test(e.message) &&
        /settings: nodeId, roles, nats/.test(e.message),
    );
    writeFileSync(file, JSON.stringify(["writer"]));
    assert.throws(() => loadNodeConfig({ flags: {}, env: {}, file }), /must hold a JSON object/);
    writeFileSync(file, JSON.stringify({ nats: "nats://x", warehouse: "/w", roles: ["writer"], commitInterval: "1s" }));
    assert.equal(loadNodeConfig({ flags: {}, env: {}, file }).commitInterval, 1000, "known keys still load");
  } finally {
    d.cleanup();
  }
});

test("config - `natslake node` takes its roles from --roles, else NATSLAKE_ROLES, else the config file, else all three", () => {
  const d = tempDir();
  try {
    const file = join(d.path, "node.json");
    writeFileSync(file, JSON.stringify({ nats: "nats://x", warehouse: "/w", roles: ["reader"] }));
    assert.deepEqual(nodeConfigOf({ config: file }, {}).roles, ["reader"], "the file's roles (a default of the flag once hid them)");
    assert.deepEqual(nodeConfigOf({ config: file }, { NATSLAKE_ROLES: "writer" }).roles, ["writer"]);
    assert.deepEqual(nodeConfigOf({ config: file, roles: "writer,reader" }, { NATSLAKE_ROLES: "writer" }).roles, ["writer", "reader"]);
    assert.deepEqual(nodeConfigOf({ nats: "nats://x", warehouse: "/w", redis: "redis://r" }, {}).roles, ["writer", "committer", "reader"]);
  } finally {
    d.cleanup();
  }
});

test("config - the credential and TLS settings from the config file reach the NATS and Redis connections; the environment and flags win over them", () => {
  const d = tempDir();
  try {
    const file = (name: string, text: string): string => {
      const p = join(d.path, name);
      writeFileSync(p, text);
      return p;
    };
    const [natsPw, redisPw, ca, cert, key] = [file("nats-pw", "nats-secret\n"), file("redis-pw", "redis-secret\n"), file("ca.pem", "CA"), file("cert.pem", "CERT"), file("key.pem", "KEY")];
    const config = file("node.json", JSON.stringify({
      nats: "tls://n:4222", warehouse: "/w", roles: ["writer"], redis: "rediss://r:6380",
      natsUser: "lake", natsPasswordFile: natsPw, natsTlsCa: ca, natsTlsCert: cert, natsTlsKey: key, natsTlsFirst: true,
      redisUser: "committer", redisPasswordFile: redisPw, redisTlsCa: ca, redisTlsCert: cert, redisTlsKey: key,
    }));
    const fromFile = loadNodeConfig({ flags: {}, env: {}, file: config });
    const nats = natsConnectionOptions(fromFile, {});
    assert.deepEqual([nats.user, nats.pass, nats.tls], ["lake", "nats-secret", { ca: "CA", cert: "CERT", key: "KEY", handshakeFirst: true }]);
    const redis = redisConnectionOptions(fromFile, {});
    assert.deepEqual([redis.username, redis.password, redis.tls], ["committer", "redis-secret", { ca: "CA", cert: "CERT", key: "KEY" }]);

    // The environment over the file, a flag over both.
    const other = file("other-pw", "other-secret\n");
    const cfg = loadNodeConfig({ flags: { natsUser: "flag-user" }, env: { NATSLAKE_NATS_USER: "env-user", NATSLAKE_NATS_PASSWORD_FILE: other, NATSLAKE_NATS_TLS_FIRST: "false", NATSLAKE_REDIS_USER: "env-committer" }, file: config });
    assert.deepEqual([cfg.natsUser, cfg.natsPasswordFile, cfg.natsTlsFirst, cfg.redisUser, cfg.redisPasswordFile], ["flag-user", other, false, "env-committer", redisPw]);
    assert.equal(natsConnectionOptions(cfg, {}).pass, "other-secret");
  } finally {
    d.cleanup();
  }
});
