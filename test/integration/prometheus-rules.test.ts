/**
 * The operators' alert rules (compose/prometheus/alerts.yml): promtool accepts them and their unit tests pass (each
 * alert fires just above its threshold, not at it); and a real Prometheus on loopback scraping a live node sees the
 * P0 alert (commit failures) fire when a failpoint makes the node's commit rounds fail.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../cluster/local/servers.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { parse as parseYaml } from "yaml";

const RULES_DIR = fileURLToPath(new URL("../../compose/prometheus/", import.meta.url));
const COMPOSE_README = fileURLToPath(new URL("../../compose/README.md", import.meta.url));

/** The alerting rules of alerts.yml, counted from the file itself. */
function alertRuleCount(): number {
  const doc = parseYaml(readFileSync(join(RULES_DIR, "alerts.yml"), "utf8")) as { groups: Array<{ rules: Array<{ alert?: string }> }> };
  return doc.groups.flatMap((g) => g.rules).filter((r) => typeof r.alert === "string").length;
}

const NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"];

/**
 * Every count of rules or alerts a text states ("the seven rules", "7 alert rules", "Six alerts"), with where: in
 * words up to twenty or in digits.
 */
function statedCounts(text: string): Array<{ count: number; said: string }> {
  const re = new RegExp(`\\b(${NUMBER_WORDS.join("|")}|\\d+) (?:alerting rules|alert rules|rules|alerts)\\b`, "gi");
  return [...text.matchAll(re)].map((m) => {
    const n = m[1]!.toLowerCase();
    return { count: /^\d+$/.test(n) ? Number(n) : NUMBER_WORDS.indexOf(n), said: m[0] };
  });
}

test("prometheus rules - every count of the rules stated in compose/README.md and in alerts.yml's header is the number of rules in alerts.yml", () => {
  const rules = alertRuleCount();
  assert.ok(rules > 0, "alerts.yml has alerting rules");
  const header = readFileSync(join(RULES_DIR, "alerts.yml"), "utf8").split("\n").filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith("#"))).join("\n");
  for (const [what, text] of [["alerts.yml's header comment", header], ["compose/README.md", readFileSync(COMPOSE_README, "utf8")]] as const) {
    const counts = statedCounts(text);
    assert.ok(counts.length > 0, `${what} states how many rules there are`);
    for (const c of counts) assert.equal(c.count, rules, `${what} says "${c.said}" but alerts.yml has ${rules} rules`);
  }
  // The counter itself: it finds a count in words and in digits, and one that is wrong.
  assert.deepEqual(statedCounts("shows the Six alerts, 12 alert rules and three rules; the seven nodes").map((c) => c.count), [6, 12, 3]);
});

test("prometheus rules - promtool check rules and promtool test rules pass", () => {
  const check = spawnSync("promtool", ["check", "rules", "alerts.yml"], { cwd: RULES_DIR, encoding: "utf8" });
  assert.equal(check.error, undefined, "promtool is installed (scripts/setup.sh installs Debian's prometheus package)");
  assert.equal(check.status, 0, check.stdout + check.stderr);
  assert.match(check.stdout, new RegExp(`SUCCESS: ${alertRuleCount()} rules found`));
  const unit = spawnSync("promtool", ["test", "rules", "alerts.test.yml"], { cwd: RULES_DIR, encoding: "utf8" });
  assert.equal(unit.status, 0, unit.stdout + unit.stderr);
  assert.match(unit.stdout, /SUCCESS/);
});

test("prometheus rules - a real Prometheus scraping a node sees NatslakeCommitFailures (P0) fire when commit rounds fail", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  const dir = mkdtempSync(join(tmpdir(), "natslake-prom-"));
  const metricsPort = await freePort();
  const promPort = await freePort();
  // The 30th commit attempt fails (an IO error before the snapshot): the round is retried, the counter counts it.
  c.startNode("n1", ["--metrics-port", String(metricsPort)], { FAILPOINTS: "commit.after-manifests:throw@30" });
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global: { scrape_interval: 1s, evaluation_interval: 1s }",
      `rule_files: ["${join(RULES_DIR, "alerts.yml")}"]`,
      "scrape_configs:",
      "  - job_name: natslake",
      `    static_configs: [{ targets: ["127.0.0.1:${metricsPort}"] }]`,
      "",
    ].join("\n"),
  );
  const prom = spawn("prometheus", [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ["ignore", "ignore", "pipe"] });
  let promLog = "";
  prom.stderr.on("data", (b: Buffer) => (promLog += b.toString()));
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "prom.t";
      await new Catalog(c.warehouse).createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "1", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      // Prometheus must hold the counter at 0 before the failure (increase() needs a sample before it): rounds only
      // run once rows arrive, so wait for that sample first.
      await waitFor("Prometheus scraped natslake_commit_failures_total = 0", async () => {
        const q = encodeURIComponent(`natslake_commit_failures_total{table="${name}"}`);
        const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${q}`, { signal: AbortSignal.timeout(3000) }).catch(() => null);
        if (r === null || !r.ok) return undefined;
        const body = (await r.json()) as { data: { result: Array<{ value: [number, string] }> } };
        return body.data.result.length > 0 && body.data.result[0]!.value[1] === "0" ? true : undefined;
      }, 60_000, 500);
      // Small commits until the failing round came (under CPU load a flush can take several writes, so the number of
      // rounds a number of writes makes is not fixed), bounded in rounds and time.
      const failed = (): boolean => /commit round failed; retrying next interval/.test(c.logs("n1"));
      const deadline = Date.now() + 90_000;
      for (let round = 0; round < 400 && Date.now() < deadline && !failed(); round++) {
        void producer.write({ id: round });
        await producer.flush();
        await new Promise((r) => setTimeout(r, 100));
      }
      await producer.waitVisible(producer.token(), 60_000);
      await producer.close();
      assert.match(c.logs("n1"), /commit round failed; retrying next interval/, "the failpoint made a round fail");
      const alert = await waitFor("Prometheus fires NatslakeCommitFailures", async () => {
        const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/alerts`, { signal: AbortSignal.timeout(3000) }).catch(() => null);
        if (r === null || !r.ok) return undefined;
        const body = (await r.json()) as { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } };
        return body.data.alerts.find((a) => a.labels["alertname"] === "NatslakeCommitFailures" && a.state === "firing");
      }, 60_000, 500);
      assert.equal(alert.labels["severity"], "P0");
      assert.equal(alert.labels["table"], name);
    }, 40);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nprometheus said:\n${promLog.slice(-2000)}`, { cause: e });
  } finally {
    prom.kill("SIGKILL");
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
