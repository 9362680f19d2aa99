/**
 * A table's ingest stream settings (issue 29): its own `natslake.stream.max-bytes` and `duplicate-window` win over a
 * node's defaults, which win over the options' defaults; and the producer names a full stream as such.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { JetStreamApiError } from "@nats-io/jetstream";
import { streamSettings } from "../../../cluster/nats/table-infra.ts";
import { refusalText } from "../../../cluster/producer.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

const dir = tempDir();
after(() => dir.cleanup());

test("stream settings - the table's own bound and window win over the node's defaults", async () => {
  const own = await createTable(dir.path, "s.own", "id INT", { options: { "natslake.stream.max-bytes": "64 kb", "natslake.stream.duplicate-window": "30 s" } });
  assert.deepEqual(streamSettings(own, { maxBytes: 1 << 30, duplicateWindowMs: 120_000 }), { replicas: 1, maxBytes: 64 * 1024, duplicateWindowMs: 30_000 });
  const plain = await createTable(dir.path, "s.plain", "id INT");
  assert.deepEqual(streamSettings(plain, { maxBytes: 5 << 20, duplicateWindowMs: 90_000 }), { replicas: 1, maxBytes: 5 << 20, duplicateWindowMs: 90_000 });
  assert.deepEqual(streamSettings(plain), { replicas: 1, maxBytes: 1 << 30, duplicateWindowMs: 120_000 });
});

test("stream settings - a full stream's refusal says so; other refusals are passed on as they are", () => {
  const full = refusalText(new JetStreamApiError({ code: 503, err_code: 10077, description: "maximum bytes exceeded" }));
  assert.match(full, /^the table's ingest stream is full \(maximum bytes exceeded \(err_code 10077\)\): its writers are behind or stopped/);
  assert.match(refusalText(new JetStreamApiError({ code: 503, err_code: 10077, description: "maximum messages exceeded" })), /ingest stream is full/);
  assert.equal(refusalText(new JetStreamApiError({ code: 400, err_code: 10054, description: "message size exceeds maximum allowed" })), "message size exceeds maximum allowed (err_code 10054)");
});
