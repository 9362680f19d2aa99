/**
 * Stall reports: what holds rows back is said, not left silent. A bucket whose decode does not come back (a held
 * `session.append`) is reported once with the writer's state, and again when it flushes; an actor held by one message
 * (its `receive` awaiting) is named by the node with the message type, and counted in `natslake_actors_stuck`. Both
 * holds are failpoints (`sleep`) past the node's `stallReport` (2 s here); every row still lands exactly once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../cluster/local/servers.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readJson } from "../helpers/tables.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import type { Producer } from "../../cluster/producer.ts";

type LogLine = Record<string, unknown> & { msg?: string };

function logLines(text: string): LogLine[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);
}

async function writeRounds(p: Producer, from: number, rounds: number, perRound: number): Promise<number> {
  let next = from;
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < perRound; k++, next++) void p.write({ id: next, s: `s${next}` });
    await p.flush();
    await new Promise((res) => setTimeout(res, 300));
  }
  return next;
}

async function stuckGauge(port: number): Promise<number | undefined> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  const m = /^natslake_actors_stuck(?:\{[^}]*\})? (\d+)/m.exec(text);
  return m === null ? undefined : Number(m[1]);
}

test("stall reports - a held decode and an actor held by one message are reported (state, message, gauge) and cleared; every row lands once", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    const config = join(c.dir, "node.json");
    writeFileSync(config, JSON.stringify({ stallReport: "2s" }));
    const port = await freePort();
    // The third decode is held 5 s; later, the writer's handling of its sixth decoded batch is held 5 s.
    c.startNode("n1", ["--config", config, "--metrics-port", String(port)], { FAILPOINTS: "writer.before-append:sleep(5000)@3,writer.appended:sleep(5000)@6" });
    await withNodeLogsOnFailure(c, async () => {
      const name = "stall.t";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "1", "bucket-key": "id" } });
      const p = await producerWhenRegistered(c.nc, name);
      // Phase 1: three decodes, the third held.
      let total = await writeRounds(p, 0, 3, 20);
      await p.waitVisible(p.token(), 60_000);
      const held = logLines(c.logs("n1")).find((l) => l.msg === "bucket has not flushed what it read for long");
      assert.ok(held !== undefined, "the held decode was reported");
      assert.equal(held["level"], 40, "at warn");
      assert.equal(held["decoding"], true, "its state says a decode is in flight");
      assert.equal(held["table"], name);
      assert.ok(Number(held["fetchedSeq"]) > Number(held["prevOffset"]), "what it read and has not flushed");
      assert.ok(logLines(c.logs("n1")).some((l) => l.msg === "bucket flushing again"), "and when it flushed again");
      assert.equal(logLines(c.logs("n1")).filter((l) => l.msg === "bucket has not flushed what it read for long").length, 1, "once per stall");
      // Idle past the stallReport, then rows again: waiting for rows is no stall (the first tick after them must not report).
      await new Promise((r) => setTimeout(r, 2500));
      total = await writeRounds(p, total, 1, 20);
      await p.waitVisible(p.token(), 60_000);
      assert.equal(logLines(c.logs("n1")).filter((l) => l.msg === "bucket has not flushed what it read for long").length, 1, "an idle bucket that gets rows again is not reported");
      // Phase 2: decodes five to eight; the writer's handling of the sixth is held.
      const writing = writeRounds(p, total, 4, 20);
      const stuck = await waitFor("natslake_actors_stuck at 1", async () => ((await stuckGauge(port)) === 1 ? true : undefined), 30_000, 200);
      assert.ok(stuck);
      total = await writing;
      await p.waitVisible(p.token(), 60_000);
      const named = logLines(c.logs("n1")).filter((l) => l.msg === "an actor has been handling one message for long: it handles nothing else meanwhile");
      assert.equal(named.length, 1, "named once");
      assert.match(String(named[0]!["actor"]), /writer-stall\.t-0/);
      assert.equal(named[0]!["message"], "appended");
      await waitFor("natslake_actors_stuck back at 0", async () => ((await stuckGauge(port)) === 0 ? true : undefined), 30_000, 200);
      await p.close();
      const t = await catalog.getTable(parseIdentifier(name));
      const ids = (await readJson(t)).map((r) => Number(r["id"])).sort((a, b) => a - b);
      assert.deepEqual(ids, Array.from({ length: total }, (_, k) => k), "every row once");
    });
  } finally {
    await c.stop();
  }
});
