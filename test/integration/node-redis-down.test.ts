/**
 * With Redis down, a committer node's log names Redis: its lease failures are logged as `redis at <url>: <reason>`
 * (rate-limited), not left to be guessed from "lease lost" alone.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { adminRequest } from "../../cluster/admin-client.ts";
import { startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";

test("node - Redis down: the log says 'redis at <url>: <reason>'", { timeout: 120_000 }, async () => {
  const c = await startCluster({ nodes: 1, leaseTtl: "1s" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      // The admin service subscribes just after the first heartbeat: retried until it answers.
      await waitFor("the table created through the cluster", () => adminRequest(c.nc, "lake", { type: "create-table", table: "rd.t", columns: "id BIGINT" }, 5_000).then(() => true, (e: Error) => (/no responders/.test(e.message) ? undefined : Promise.reject(e))), 60_000, 250);
      await waitFor("n1 leads rd.t", () => (/became leader/.test(c.logs("n1")) ? true : undefined), 60_000);
      const url = c.redis.url.replace(/\/$/, "");
      assert.doesNotMatch(c.logs("n1"), /redis at /, "nothing to say while Redis is up");
      await c.redis.stop();
      const line = await waitFor("a log line naming Redis", () => c.logs("n1").split("\n").find((l) => l.includes(`redis at ${url}: `)), 30_000);
      assert.match(line, new RegExp(`redis at ${url.replace(/[.]/g, "\\.")}: lease (renew|acquire|release) of natslake:lake:lease:rd\\.t: `));
    });
  } finally {
    await c.stop();
  }
});
