/**
 * compose/ checked without Docker (which does not run here): docker-compose accepts the file and it has the
 * production shape; every node service's command line parses with the CLI's own option parser and makes a valid node
 * configuration; promtool accepts the Prometheus config, its rules and every dashboard query; the current nats-server
 * accepts the NATS config; the Dockerfile ships what the npm package ships. compose-topology.test.ts runs it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { COMPOSE_DIR, composeConfig, mountedFrom, nodeServices, parseNodeCommand, PLACE_SETTINGS } from "../helpers/compose.ts";
import { dashboardQueries, parsePromQL, DASHBOARD_FILE } from "../helpers/dashboard.ts";
import { natsServerBin } from "../helpers/nats-cluster.ts";
import { REPO_ROOT } from "../helpers/python.ts";
import { parseWarehouse } from "../../src/io/warehouse.ts";
import { COMPOSE_PERMISSIONS_FILE, COMPOSE_USERS, composePermissions } from "../../scripts/nats-permissions.ts";

const compose = composeConfig();
const nodes = nodeServices(compose);
const WAREHOUSE_MOUNT = "warehouse:/var/lib/natslake/warehouse:rw";

test("compose - docker-compose config accepts the file: 3 NATS servers, Redis, 3 writers, 2 committers, 2 readers, Prometheus, Grafana", async () => {
  const names = Object.keys(compose.services).sort();
  assert.deepEqual(names, ["committer-1", "committer-2", "grafana", "nats-1", "nats-2", "nats-3", "prometheus", "reader-1", "reader-2", "redis", "writer-1", "writer-2", "writer-3"]);
  const byRole = new Map<string, string[]>();
  for (const [name, s] of nodes) {
    const cfg = await parseNodeCommand(s.command, s.environment ?? {});
    const roles = cfg.roles.join(",");
    byRole.set(roles, [...(byRole.get(roles) ?? []), name]);
  }
  assert.deepEqual(Object.fromEntries(byRole), { writer: ["writer-1", "writer-2", "writer-3"], committer: ["committer-1", "committer-2"], reader: ["reader-1", "reader-2"] });
  // The NATS image is the release the tests run against (scripts/nats-server-version); Prometheus is promtool's.
  const natsVersion = readFileSync(join(REPO_ROOT, "scripts", "nats-server-version"), "utf8").trim().replace(/^v/, "");
  for (const n of ["nats-1", "nats-2", "nats-3"]) {
    const s = compose.services[n]!;
    assert.equal(s.image, `nats:${natsVersion}-alpine`, n);
    assert.deepEqual(s.command, ["--config", "/etc/nats/nats.conf", "--name", n, "--store_dir", "/data"], n);
    assert.equal(mountedFrom(s, "/etc/nats/nats.conf"), join(COMPOSE_DIR, "nats", "nats.conf"), n);
    assert.ok(s.volumes?.includes(`${n}:/data:rw`), `${n} keeps its JetStream store in its own volume`);
    assert.match(s.healthcheck?.test.join(" ") ?? "", /healthz\?js-enabled-only=true/, n);
  }
  const promtool = /version (\d+\.\d+\.\d+)/.exec(spawnSync("promtool", ["--version"], { encoding: "utf8" }).stdout)?.[1];
  assert.equal(compose.services["prometheus"]!.image, `prom/prometheus:v${promtool}`);
  assert.ok(Object.keys(compose.volumes ?? {}).includes("warehouse"));
  for (const [name, s] of nodes) {
    assert.equal(s.image, "natslake:0.1.0", name);
    assert.equal(s.build?.dockerfile, "compose/Dockerfile", name);
    assert.equal(s.build?.context, REPO_ROOT.replace(/\/$/, ""), name);
    assert.ok(s.volumes?.includes(WAREHOUSE_MOUNT), `${name} mounts the shared warehouse (${s.volumes?.join(", ")})`);
    assert.match(s.healthcheck?.test.join(" ") ?? "", /\/readyz/, `${name}'s healthcheck asks /readyz`);
    assert.deepEqual(Object.keys(s.depends_on ?? {}).filter((d) => d.startsWith("nats-")).sort(), ["nats-1", "nats-2", "nats-3"], name);
    for (const d of Object.values(s.depends_on ?? {})) assert.equal(d.condition, "service_healthy", name);
    // A drain (flush, last commit, hand-over; 15 s drain timeout) must not be cut short by docker's SIGKILL.
    assert.ok(Number.parseInt(s.stop_grace_period ?? "10") >= 25, `${name}: stop_grace_period ${s.stop_grace_period}`);
  }
  for (const name of ["committer-1", "committer-2"]) assert.equal(compose.services[name]!.depends_on?.["redis"]?.condition, "service_healthy", name);
});

test("compose - nats/permissions.conf is what scripts/nats-permissions.ts generates from the role table, and the current nats-server accepts it with the passwords from its environment", () => {
  assert.equal(readFileSync(COMPOSE_PERMISSIONS_FILE, "utf8"), composePermissions(), "run `npm run nats-permissions`");
  const dir = mkdtempSync(join(tmpdir(), "natslake-compose-perms-"));
  try {
    // As docs/operations/permissions.md turns it on: nats.conf includes the file beside it.
    writeFileSync(join(dir, "permissions.conf"), readFileSync(COMPOSE_PERMISSIONS_FILE));
    writeFileSync(join(dir, "nats.conf"), `${readFileSync(join(COMPOSE_DIR, "nats", "nats.conf"), "utf8")}\ninclude ./permissions.conf\n`);
    const env = { ...process.env, ...Object.fromEntries(COMPOSE_USERS.map((u) => ["env" in u.password ? u.password.env : "", "example-password"])) };
    const r = spawnSync(natsServerBin("current"), ["-t", "-c", join(dir, "nats.conf")], { encoding: "utf8", env });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    // A password variable the server's environment lacks is refused, not taken as an empty password.
    const bare = spawnSync(natsServerBin("current"), ["-t", "-c", join(dir, "nats.conf")], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "" } });
    assert.notEqual(bare.status, 0, "a missing password variable");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("compose - NATSLAKE_WAREHOUSE and the AWS credentials of the shell put every node on an S3 warehouse (compose/README.md, An S3 warehouse)", async () => {
  const uri = "s3://lake/prod?endpoint=http://store:8333";
  const shell = { NATSLAKE_WAREHOUSE: uri, AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "secret-example", AWS_REGION: "eu-west-1" };
  const onS3 = nodeServices(composeConfig(shell));
  assert.equal(onS3.length, 7);
  for (const [name, s] of onS3) {
    const env = s.environment ?? {};
    for (const [k, v] of Object.entries(shell)) assert.equal(env[k], v, `${name}: ${k}`);
    const cfg = await parseNodeCommand(s.command, env);
    assert.equal(cfg.warehouse, uri, name);
    assert.deepEqual(parseWarehouse(cfg.warehouse), { kind: "s3", bucket: "lake", prefix: "prod", endpoint: "http://store:8333" }, name);
  }
  // Without them (the file as the other tests read it): the shared volume, and the credentials empty.
  for (const [name, s] of nodes) {
    assert.equal(s.environment?.["NATSLAKE_WAREHOUSE"], "/var/lib/natslake/warehouse", name);
    for (const k of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"]) assert.equal(s.environment?.[k], "", `${name}: ${k}`);
  }
});

test("compose - every node service's command line parses with the CLI's option parser into a valid node configuration", async () => {
  assert.equal(nodes.length, 7);
  for (const [name, s] of nodes) {
    const env = s.environment ?? {};
    // The places are environment variables, so the local topology can replace exactly those.
    for (const k of Object.keys(env)) if (k.startsWith("NATSLAKE_") && !(PLACE_SETTINGS as readonly string[]).includes(k)) assert.ok(["NATSLAKE_REPLICAS", "NATSLAKE_LOG_LEVEL"].includes(k), `${name}: ${k}`);
    const cfg = await parseNodeCommand(s.command, env);
    assert.equal(cfg.nodeId, name);
    assert.deepEqual(cfg.nats.split(","), ["nats://nats-1:4222", "nats://nats-2:4222", "nats://nats-3:4222"], name);
    assert.equal(cfg.replicas, 3, `${name}: streams with 3 replicas`);
    assert.equal(cfg.warehouse, "/var/lib/natslake/warehouse", name);
    assert.equal(cfg.metricsPort, 9464, name);
    assert.equal(cfg.metricsHost, "0.0.0.0", name);
    assert.equal(cfg.redis, cfg.roles.includes("committer") ? "redis://redis:6379" : undefined, name);
  }
  // The parser is the real one: a misspelt flag, a bad role or a bad setting in the file would be refused.
  const writer = compose.services["writer-1"]! as (typeof nodes)[number][1];
  await assert.rejects(parseNodeCommand(["node", "--role", "writer"], writer.environment ?? {}), /unknown option '--role'/);
  await assert.rejects(parseNodeCommand(["node", "--roles", "writter"], writer.environment ?? {}), /roles/);
  await assert.rejects(parseNodeCommand(writer.command, { ...writer.environment, NATSLAKE_REPLICAS: "three" }), /replicas/);
  await assert.rejects(parseNodeCommand(["node", "--roles", "committer"], writer.environment ?? {}), /the committer role needs --redis/);
});

test("compose - promtool accepts prometheus.yml and its rules; it scrapes exactly the compose file's nodes", () => {
  const check = spawnSync("promtool", ["check", "config", "prometheus.yml"], { cwd: join(COMPOSE_DIR, "prometheus"), encoding: "utf8" });
  assert.equal(check.error, undefined, "promtool is installed (scripts/setup.sh installs Debian's prometheus package)");
  assert.equal(check.status, 0, check.stdout + check.stderr);
  const alertRules = (parseYaml(readFileSync(join(COMPOSE_DIR, "prometheus", "alerts.yml"), "utf8")) as { groups: Array<{ rules: unknown[] }> }).groups.reduce((n, g) => n + g.rules.length, 0);
  assert.match(check.stdout, new RegExp(`SUCCESS: ${alertRules} rules found`));
  const prom = parseYaml(readFileSync(join(COMPOSE_DIR, "prometheus", "prometheus.yml"), "utf8")) as {
    rule_files: string[];
    scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[]; labels?: Record<string, string> }> }>;
  };
  const scraped = new Map<string, string | undefined>();
  for (const job of prom.scrape_configs) for (const sc of job.static_configs) for (const t of sc.targets) scraped.set(t, sc.labels?.["role"]);
  const expected = new Map(nodes.map(([name, s]) => [`${name}:${s.environment?.["NATSLAKE_METRICS_PORT"]}`, s.command[s.command.indexOf("--roles") + 1]]));
  assert.deepEqual([...scraped].sort(), [...expected].sort());
  // The compose file mounts this directory as Prometheus's /etc/prometheus, so the relative rule file resolves there.
  assert.equal(mountedFrom(compose.services["prometheus"]!, "/etc/prometheus"), join(COMPOSE_DIR, "prometheus"));
  assert.deepEqual(prom.rule_files, ["alerts.yml"]);
});

test("compose - the current nats-server accepts compose/nats/nats.conf", () => {
  const bin = natsServerBin("current");
  const r = spawnSync(bin, ["-t", "-c", join(COMPOSE_DIR, "nats", "nats.conf")], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /is valid/);
  // The check can fail: a setting the server does not know is refused.
  const dir = mkdtempSync(join(tmpdir(), "natslake-natsconf-"));
  try {
    writeFileSync(join(dir, "bad.conf"), readFileSync(join(COMPOSE_DIR, "nats", "nats.conf"), "utf8").replace("sync_interval: always", "sync_interval: sometimes"));
    assert.notEqual(spawnSync(bin, ["-t", "-c", join(dir, "bad.conf")], { encoding: "utf8" }).status, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("compose - every dashboard query is valid PromQL (Prometheus's grammar and promtool) and names natslake metrics", () => {
  const queries = dashboardQueries();
  assert.ok(queries.length >= 20, `${queries.length} queries`);
  for (const q of queries) {
    const p = parsePromQL(q.expr);
    assert.deepEqual(p.errors, [], `${q.where}: ${q.expr}`);
    assert.equal(p.unnamedSelectors, 0, `${q.where}: every selector names its metric`);
    assert.ok(p.metrics.length > 0, `${q.where}: ${q.expr}`);
    for (const m of p.metrics) assert.match(m, /^natslake_/, q.where);
  }
  assert.ok(parsePromQL("sum(rate(natslake_rows_in_total[1m]").errors.length > 0, "the grammar refuses broken PromQL");
  // promtool parses each one as Prometheus would: as recording rules.
  const dir = mkdtempSync(join(tmpdir(), "natslake-dashq-"));
  try {
    const rules = { groups: [{ name: "dashboard", rules: queries.map((q, i) => ({ record: `dashboard:q${i}`, expr: q.expr })) }] };
    writeFileSync(join(dir, "q.yml"), stringifyYaml(rules));
    const r = spawnSync("promtool", ["check", "rules", "q.yml"], { cwd: dir, encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${queries.length} rules found`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Grafana loads it: provisioned from the directory the compose file mounts, against the provisioned Prometheus.
  const grafana = compose.services["grafana"]!;
  assert.equal(mountedFrom(grafana, "/etc/grafana/dashboards"), join(COMPOSE_DIR, "grafana", "dashboards"));
  const provider = parseYaml(readFileSync(join(COMPOSE_DIR, "grafana", "provisioning", "dashboards", "natslake.yml"), "utf8")) as { providers: Array<{ options: { path: string } }> };
  assert.equal(provider.providers[0]!.options.path, "/etc/grafana/dashboards");
  const ds = parseYaml(readFileSync(join(COMPOSE_DIR, "grafana", "provisioning", "datasources", "prometheus.yml"), "utf8")) as { datasources: Array<{ type: string; url: string }> };
  assert.deepEqual(ds.datasources.map((d) => [d.type, d.url]), [["prometheus", "http://prometheus:9090"]]);
  assert.ok(readFileSync(DASHBOARD_FILE, "utf8").includes('"uid": "${datasource}"'));
});

test("compose - the Dockerfile builds dist/ and ships what the npm package ships, production dependencies only, not as root", () => {
  const text = readFileSync(join(COMPOSE_DIR, "Dockerfile"), "utf8");
  const stages = text.split(/^FROM /m).slice(1);
  assert.equal(stages.length, 2, "a build stage and a runtime stage");
  const [build, runtime] = stages as [string, string];
  assert.match(build, /RUN npm ci\b/);
  assert.match(build, /RUN node scripts\/build\.mjs/);
  assert.match(runtime, /RUN npm ci --omit=dev\b/);
  assert.match(runtime, /^USER node$/m);
  assert.match(runtime, /^ENTRYPOINT \["natslake"\]$/m);
  const copied = [...runtime.matchAll(/^COPY (?:--from=\S+ )?(\S+) \S+$/gm)].map((m) => m[1]!.replace(/^\/src\//, ""));
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { files: string[] };
  for (const f of pkg.files.filter((f) => f !== "README.md")) assert.ok(copied.includes(f), `the image has the package's ${f} (copied: ${copied.join(", ")})`);
  // The build context lets in what the stages copy.
  const ignore = readFileSync(join(REPO_ROOT, ".dockerignore"), "utf8");
  for (const m of text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
    for (const src of m[1]!.split(" ")) assert.ok(ignore.includes(`!${src.split("/")[0]}${src.includes("/") ? "/" : ""}`), `.dockerignore lets ${src} in`);
  }
});

test("compose - the dashboard's first row has a panel for every alert of alerts.yml, and names no alert that is not there", () => {
  const rules = parseYaml(readFileSync(join(COMPOSE_DIR, "prometheus", "alerts.yml"), "utf8")) as { groups: Array<{ rules: Array<{ alert?: string }> }> };
  const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).filter((a): a is string => a !== undefined).sort();
  const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as { panels: Array<{ type: string; title: string; description?: string }> };
  // The panels between the first row and the second: the alerts row.
  const rows = dashboard.panels.flatMap((p, i) => (p.type === "row" ? [i] : []));
  assert.ok(rows.length >= 2 && rows[0] === 0, "the dashboard opens with a row");
  const named = dashboard.panels.slice(1, rows[1]).flatMap((p) => [...(p.description ?? "").matchAll(/\bAlert (Natslake\w+)/g)].map((m) => m[1]!));
  assert.deepEqual([...new Set(named)].sort(), alerts, "each alert named by a panel of the alerts row (its description: 'Alert <name> ...')");
});
