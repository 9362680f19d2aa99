/** Which JetStream failures a starting node waits out, and which it reports at once. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { errors } from "@nats-io/transport-node";
import { JetStreamApiError } from "@nats-io/jetstream";
import { isTransientJetStreamError } from "../../../cluster/nats/table-infra.ts";

test("jetstream errors - timeouts, no responders and a cluster without a meta leader pass by themselves", () => {
  assert.ok(isTransientJetStreamError(new errors.TimeoutError()));
  assert.ok(isTransientJetStreamError(new errors.NoRespondersError("$JS.API.INFO")));
  assert.ok(isTransientJetStreamError(new errors.RequestError("no responders", { cause: new errors.NoRespondersError("$JS.API.INFO") })));
  assert.ok(isTransientJetStreamError(new JetStreamApiError({ code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" })));
  // Found as the cause of a wrapping error too.
  assert.ok(isTransientJetStreamError(new Error("creating KV bucket failed", { cause: new errors.TimeoutError() })));
  const notEnabled = new Error("jetstream is not enabled");
  notEnabled.name = "JetStreamNotEnabled";
  assert.ok(isTransientJetStreamError(notEnabled));
});

test("jetstream errors - definite refusals and anything else are not retried", () => {
  assert.ok(!isTransientJetStreamError(new JetStreamApiError({ code: 500, err_code: 10074, description: "replicas > 1 not supported in non-clustered mode" })));
  assert.ok(!isTransientJetStreamError(new JetStreamApiError({ code: 404, err_code: 10059, description: "stream not found" })));
  assert.ok(!isTransientJetStreamError(new Error("timeout")));
  assert.ok(!isTransientJetStreamError("timeout"));
  assert.ok(!isTransientJetStreamError(undefined));
});
