/**
 * How Redis failures of the lease are worded and rate-limited (cluster/redis/lease.ts): always `redis at <url>:
 * <reason>`, the password left out; the first failure and every change reported at once, repeats at most every
 * 10 s, the recovery once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { redactRedisUrl, redisError, RedisErrorReporter } from "../../../cluster/redis/lease.ts";

test("redis errors - 'redis at <url>: <reason>', without the password", () => {
  const e = redisError("redis://127.0.0.1:6390", new Error("connect ECONNREFUSED 127.0.0.1:6390"), "cannot connect");
  assert.equal(e.message, "redis at redis://127.0.0.1:6390: cannot connect: connect ECONNREFUSED 127.0.0.1:6390");
  assert.equal(redisError("redis://u:secret@h:1/2", "boom").message, "redis at redis://u:***@h:1/2: boom");
  assert.equal(redactRedisUrl("redis://h:6379"), "redis://h:6379");
  assert.equal(redactRedisUrl("not a url"), "not a url");
});

test("redis errors - the reporter: first failure at once, same reason at most every 10 s, a new reason at once, recovery once", () => {
  let now = 0;
  const seen: string[] = [];
  const r = new RedisErrorReporter((e, ok) => seen.push(`${ok ? "ok" : "fail"} ${e.message}`), () => now);
  const refused = (what: string): Error => redisError("redis://h:1", new Error("connection refused"), what);
  r.ok("redis://h:1"); // nothing failed yet: nothing to say
  r.report(refused("lease acquire of natslake:lake:lease:a.b"));
  now = 500;
  r.report(refused("lease renew of natslake:lake:lease:c.d")); // the same reason, another table: not repeated
  now = 10_600;
  r.report(refused("lease acquire of natslake:lake:lease:a.b")); // 10 s on: said again
  now = 10_700;
  r.report(redisError("redis://h:1", new Error("no reply within 250 ms"), "lease renew of k")); // changed: at once
  r.ok("redis://h:1");
  r.ok("redis://h:1");
  assert.deepEqual(seen, [
    "fail redis at redis://h:1: lease acquire of natslake:lake:lease:a.b: connection refused",
    "fail redis at redis://h:1: lease acquire of natslake:lake:lease:a.b: connection refused",
    "fail redis at redis://h:1: lease renew of k: no reply within 250 ms",
    "ok redis at redis://h:1: answering again",
  ]);
});
