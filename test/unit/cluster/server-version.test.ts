import { test } from "node:test";
import assert from "node:assert/strict";
import { unsupportedNatsServer } from "../../../cluster/nats/server-version.ts";

test("nats-server version - below 2.10 is named unsupported with the reasons; 2.10 and later, or unknown, pass", () => {
  const why = unsupportedNatsServer("2.9.10");
  assert.ok(why !== undefined, "2.9.10 is refused");
  assert.match(why, /nats-server 2\.9\.10 is older than the supported 2\.10/);
  assert.match(why, /nats-io\/nats-server#4771/);
  assert.ok(unsupportedNatsServer("v1.4.1") !== undefined, "a 1.x server is refused");
  for (const ok of ["2.10.0", "2.12.15", "v2.11.3", "3.0.0"]) assert.equal(unsupportedNatsServer(ok), undefined, ok);
  assert.equal(unsupportedNatsServer(undefined), undefined, "no INFO version: nothing to say");
  assert.equal(unsupportedNatsServer("dev"), undefined);
});
