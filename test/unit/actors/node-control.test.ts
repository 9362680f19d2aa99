/** Node control requests are checked before a node acts on them: only a well-formed drain is a drain. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseNodeControlRequest } from "../../../actors/wire/node-control.ts";

const enc = (o: unknown): Uint8Array => new TextEncoder().encode(typeof o === "string" ? o : JSON.stringify(o));

test("node control request - a drain with then stay or exit; anything else refused with the reason", () => {
  assert.deepEqual(parseNodeControlRequest(enc({ type: "drain", v: 1, then: "stay" })), { type: "drain", v: 1, then: "stay" });
  assert.deepEqual(parseNodeControlRequest(enc({ type: "drain", v: 1, then: "exit" })), { type: "drain", v: 1, then: "exit" });
  assert.throws(() => parseNodeControlRequest(enc("drain")), /not JSON/);
  assert.throws(() => parseNodeControlRequest(enc({ type: "reboot", v: 1 })), /unknown type "reboot" \(drain\)/);
  assert.throws(() => parseNodeControlRequest(enc({ type: "drain", v: 1 })), /then:/);
  assert.throws(() => parseNodeControlRequest(enc({ type: "drain", v: 1, then: "later" })), /then:/);
  assert.throws(() => parseNodeControlRequest(enc({ type: "drain", v: 2, then: "stay" })), /v:/);
  assert.throws(() => parseNodeControlRequest(enc({ type: "drain", v: 1, then: "stay", force: true })), /unknown keys 'force'/);
});
