/**
 * The Python publisher (examples/python/publish.py: nats-py and msgpack, no natslake client) against a live cluster:
 * rows published raw to `lake.in.<db>.<table>` as JSON and as msgpack, one row, an array and a row batch per
 * message, land exactly once — a whole run repeated with the same publisher id is de-duplicated by the stream — and
 * pypaimon and natslake read the same rows back, 64-bit ids beyond 2^53 exact. A wire tap validates what it sent (and
 * everything the cluster sent meanwhile) against the published schemas (raw-rows.schema.json).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { adminRequest } from "../../cluster/admin-client.ts";
import { subscribeSnapshots } from "../../cluster/snapshots-client.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { toJsonValue } from "../../src/format/values.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { REPO_ROOT, paimonRead, runPython } from "../helpers/python.ts";
import { startWireTap } from "../helpers/wire-tap.ts";

const PUBLISH_PY = join(REPO_ROOT, "examples/python/publish.py");
const TABLE = "py.events";
const PER_RUN = 40;

interface Summary {
  messages: number;
  rows: number;
  duplicates: number;
  firstSeq: number;
  lastSeq: number;
}

/** JSON lines with ids from `from`; every tenth id is beyond 2^53 (written as exact digits, not a double). */
function rowsText(from: number, n: number): { text: string; ids: bigint[] } {
  const ids: bigint[] = [];
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = i % 10 === 9 ? 2n ** 62n + BigInt(from + i) : BigInt(from + i);
    ids.push(id);
    // Every seventh row has no amount (a nullable column left out).
    lines.push(`{"id": ${id}, "msg": "row ${from + i} ✓"${i % 7 === 0 ? "" : `, "amount": ${(from + i) / 4}`}}`);
  }
  return { text: lines.join("\n") + "\n", ids };
}

const publish = async (url: string, args: string[], input: string): Promise<Summary> => JSON.parse((await runPython(PUBLISH_PY, ["--nats", url, "--table", TABLE, ...args], { input, timeoutMs: 60_000 })).trim()) as Summary;

test("python publisher - raw JSON and msgpack rows (a row, an array, a batch per message) land exactly once; a repeated run is de-duplicated; pypaimon and natslake read them", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      // The node answers admin requests once its start-up table scan is done.
      await waitFor("the node serving admin requests", () => adminRequest(c.nc, "lake", { type: "list-tables" }, 2000).then(() => true), 60_000, 200);
      await adminRequest(c.nc, "lake", { type: "create-table", table: TABLE, columns: "id BIGINT NOT NULL, msg STRING, amount DOUBLE", options: { bucket: "2", "bucket-key": "id" } });
      await (await producerWhenRegistered(c.nc, TABLE)).close(); // registered: its stream exists

      const tap = await startWireTap(c.nats.url);
      const published: bigint[] = [];
      let messages = 0;
      const expectedRows = new Map<string, Record<string, unknown>>();
      let run = 0;
      for (const format of ["json", "msgpack"]) {
        for (const shape of ["row", "array", "batch"]) {
          const { text, ids } = rowsText(run * 1000, PER_RUN);
          const s = await publish(c.nats.url, ["--format", format, "--shape", shape, "--batch-size", "16", "--publisher-id", `py-${format}-${shape}`], text);
          assert.equal(s.rows, PER_RUN, `${format}/${shape}: every row sent`);
          assert.equal(s.messages, shape === "row" ? PER_RUN : Math.ceil(PER_RUN / 16), `${format}/${shape}: messages`);
          assert.equal(s.duplicates, 0);
          messages += s.messages;
          published.push(...ids);
          for (const line of text.trim().split("\n")) {
            const id = /"id": (\d+)/.exec(line)![1]!;
            const amount = /"amount": ([\d.]+)/.exec(line)?.[1];
            expectedRows.set(id, { id: BigInt(id) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id, msg: /"msg": "([^"]*)"/.exec(line)![1], amount: amount === undefined ? null : Number(amount) });
          }
          run++;
        }
      }
      // The same run again (same publisher id, same input): the stream drops every message as a duplicate.
      const again = await publish(c.nats.url, ["--format", "msgpack", "--shape", "batch", "--batch-size", "16", "--publisher-id", "py-msgpack-batch"], rowsText(5 * 1000, PER_RUN).text);
      assert.equal(again.duplicates, again.messages, "a repeated run is de-duplicated");
      assert.ok(again.messages > 0);
      messages += again.messages;

      // Visible: a snapshot with every row (and, a moment later, still no more than every row).
      let total = 0;
      const sub = await subscribeSnapshots(c.nc, TABLE, (n) => void (total = Math.max(total, n.totalRecordCount)));
      await waitFor("every published row committed", () => (total >= published.length ? true : undefined), 60_000, 200);
      await new Promise((r) => setTimeout(r, 1000));
      sub.stop();
      assert.equal(total, published.length, "no row twice");

      const want = [...expectedRows.values()].sort((a, b) => String(a["id"]).localeCompare(String(b["id"])));
      const byId = (rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> => rows.map((r) => ({ id: r["id"], msg: r["msg"], amount: r["amount"] })).sort((a, b) => String(a["id"]).localeCompare(String(b["id"])));
      const t = await new Catalog(c.warehouse).getTable(parseIdentifier(TABLE));
      const ours = (await readAllRows(t)).map((r) => Object.fromEntries(t.schema.fields.map((f) => [f.name, toJsonValue(f.type, r[f.name] ?? null)])));
      assert.deepEqual(byId(ours), want, "natslake reads every row once, as published");
      assert.deepEqual(byId(await paimonRead(c.warehouse, TABLE)), want, "pypaimon reads the same rows");
      assert.ok(want.some((r) => typeof r["id"] === "string"), "ids beyond 2^53 are among them, exact");
      await tap.stop();
      assert.deepEqual(tap.failures, []);
      assert.equal(tap.counts.get("raw-rows"), messages, "every message the publisher sent is a valid raw-rows payload");
    });
  } finally {
    await c.stop();
  }
});
