/**
 * The quick check of common lookup requests (cluster/lookup-request.ts) beside the protocol's schema: whatever it
 * takes, the schema takes too, with the same fields and values; it takes the requests a client sends most (keys,
 * columns, a wait); anything it leaves (null) the schema decides — refusals included.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { lookupRequestSchema, MAX_LOOKUP_KEYS, MAX_LOOKUP_WAIT_MS } from "../../../actors/wire/lookup.ts";
import { commonLookupRequest } from "../../../cluster/lookup-request.ts";
import { parseRowJson } from "../../../src/format/wire/json.ts";

const base = { type: "lookup", v: 1, table: "db.t", keys: [{ id: 1 }] };

/** Requests as JSON text, as a reader receives them: common ones, and each way of being wrong or unusual. */
const requests: string[] = [
  JSON.stringify(base),
  JSON.stringify({ ...base, waitMs: 0 }),
  JSON.stringify({ ...base, waitMs: MAX_LOOKUP_WAIT_MS }),
  JSON.stringify({ ...base, waitMs: MAX_LOOKUP_WAIT_MS + 1 }),
  JSON.stringify({ ...base, waitMs: -1 }),
  JSON.stringify({ ...base, waitMs: 1.5 }),
  JSON.stringify({ ...base, waitMs: "5" }),
  JSON.stringify({ ...base, waitMs: null }),
  JSON.stringify({ ...base, columns: ["id", "name"] }),
  JSON.stringify({ ...base, columns: [] }),
  JSON.stringify({ ...base, columns: [""] }),
  JSON.stringify({ ...base, columns: ["id", 3] }),
  JSON.stringify({ ...base, columns: "id" }),
  JSON.stringify({ ...base, keys: [{ region: "eu", id: "9007199254740993" }, { region: "us", id: 2 }] }),
  '{"type":"lookup","v":1,"table":"db.t","keys":[{"id":9007199254740993}]}',
  JSON.stringify({ ...base, keys: [] }),
  JSON.stringify({ ...base, keys: Array.from({ length: MAX_LOOKUP_KEYS }, (_, i) => ({ id: i })) }),
  JSON.stringify({ ...base, keys: Array.from({ length: MAX_LOOKUP_KEYS + 1 }, (_, i) => ({ id: i })) }),
  JSON.stringify({ ...base, keys: [[1]] }),
  JSON.stringify({ ...base, keys: [null] }),
  JSON.stringify({ ...base, keys: [1] }),
  JSON.stringify({ ...base, keys: {} }),
  JSON.stringify({ ...base, keys: [{}] }),
  '{"type":"lookup","v":1,"table":"db.t","keys":[{"__proto__":{"id":1}}]}',
  '{"type":"lookup","v":1,"table":"db.t","keys":[{"id":1}],"__proto__":{"x":1}}',
  JSON.stringify({ ...base, table: "" }),
  JSON.stringify({ ...base, table: 7 }),
  JSON.stringify({ ...base, type: "get" }),
  JSON.stringify({ ...base, v: 2 }),
  JSON.stringify({ ...base, extra: true }),
  JSON.stringify({ type: "lookup", v: 1, keys: [{ id: 1 }] }),
  JSON.stringify({ ...base, snapshot: 3 }),
  JSON.stringify({ ...base, minSnapshot: 3, visibleAfter: { "0": 12 } }),
  JSON.stringify({ ...base, snapshot: 3, minSnapshot: 2 }),
  JSON.stringify([base]),
  "null",
  "7",
];

test("lookup request: what the quick check takes the schema takes, as it is; what it leaves the schema decides", () => {
  let taken = 0;
  for (const text of requests) {
    const o = parseRowJson(text);
    const quick = commonLookupRequest(o);
    const schema = lookupRequestSchema.safeParse(o);
    if (quick === null) continue;
    taken++;
    assert.ok(schema.success, `the quick check took a request the schema refuses: ${text.slice(0, 200)}`);
    assert.deepEqual(quick, schema.data, text.slice(0, 200));
  }
  // The common requests take the quick way: keys alone, with a wait, with columns, composite and big-integer keys, the
  // most keys allowed, and an empty key (the schema takes it too: the table refuses it, naming the missing field).
  assert.equal(taken, 8);
});

test("lookup request: the requests a client sends most are taken quickly", () => {
  for (const o of [base, { ...base, waitMs: 10_000 }, { ...base, columns: ["id"] }]) assert.notEqual(commonLookupRequest(o), null, JSON.stringify(o));
});
