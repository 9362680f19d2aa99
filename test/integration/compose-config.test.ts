/**
 * compose/ checked without Docker (which does not run here): docker-compose accepts the file and it has the
 * production shape; every node service's command line parses with the CLI's own option parser and makes a valid node
 * configuration; promtool accepts the Prometheus config, its rules and every dashboard query; the current nats-server
 * accepts the NATS config with its users; every process logs in as its role's user with compose/.env's passwords, a
 * missing one is refused by name, and compose/new-secrets.sh replaces them; Redis runs the committers' ACL of
 * cluster/redis/acl.ts; the Dockerfile ships what the npm package ships. compose-topology.test.ts runs it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { COMPOSE_DIR, composeConfig, mountedFrom, natsPasswordVariable, natsServiceNames, nodeServices, parseNodeCommand, PLACE_SETTINGS, redisServerArgs } from "../helpers/compose.ts";
import { dashboardQueries, parsePromQL, DASHBOARD_FILE } from "../helpers/dashboard.ts";
import { natsServerBin } from "../helpers/nats-cluster.ts";
import { REPO_ROOT } from "../helpers/python.ts";
import { parseWarehouse } from "../../src/io/warehouse.ts";
import { COMPOSE_PERMISSIONS_FILE, COMPOSE_USERS, composePermissions } from "../../scripts/nats-permissions.ts";
import { COMPOSE_FILE, COMPOSE_REDIS_PASSWORD_ENV, COMPOSE_REDIS_USER, composeRedisCommand, composeSecretRef, withRedisCommandLine } from "../../scripts/compose-redis-acl.ts";
import { ROLES } from "../../cluster/nats/permissions.ts";
import { clientInboxPrefix } from "../../cluster/nats/inbox.ts";

const compose = composeConfig();
const nodes = nodeServices(compose);
const WAREHOUSE_MOUNT = "warehouse:/var/lib/natslake/warehouse:rw";
const ENV_FILE = join(COMPOSE_DIR, ".env");
const NEW_SECRETS = join(COMPOSE_DIR, "new-secrets.sh");

/** The `NAME=value` lines of an env file, as docker compose reads them (comments and blank lines skipped). */
function envFileValues(file: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m !== null) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** The passwords compose/.env gives (every NATSLAKE_*_PASSWORD_* line). */
const isPasswordVariable = (name: string): boolean => /^NATSLAKE_(NATS|REDIS)_PASSWORD_[A-Z]+$/.test(name);
const passwordsOf = (file: string): Map<string, string> => new Map([...envFileValues(file)].filter(([k]) => isPasswordVariable(k)));

/** `nats-server -t` of compose/nats/nats.conf (its include of permissions.conf) with `env` as the server's environment. */
function natsConfigCheck(env: Record<string, string | undefined>, conf = join(COMPOSE_DIR, "nats", "nats.conf")): { status: number | null; output: string } {
  const r = spawnSync(natsServerBin("current"), ["-t", "-c", conf], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", ...env } });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

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
    // nats.conf includes ./permissions.conf: it must be beside it in the container.
    assert.equal(mountedFrom(s, "/etc/nats/permissions.conf"), COMPOSE_PERMISSIONS_FILE, n);
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

test("compose - nats/permissions.conf is what scripts/nats-permissions.ts generates from the role table; nats.conf includes it, and the NATS services give every user's password", () => {
  assert.equal(readFileSync(COMPOSE_PERMISSIONS_FILE, "utf8"), composePermissions(), "run `npm run nats-permissions`");
  assert.match(readFileSync(join(COMPOSE_DIR, "nats", "nats.conf"), "utf8"), /^include \.\/permissions\.conf$/m);
  const natsEnv = compose.services["nats-1"]!.environment ?? {};
  for (const n of natsServiceNames(compose)) assert.deepEqual(compose.services[n]!.environment, natsEnv, `${n} has the same passwords as nats-1`);
  // Every user of permissions.conf has its password variable in the servers' environment, with compose/.env's value.
  const passwords = passwordsOf(ENV_FILE);
  for (const u of COMPOSE_USERS) {
    assert.ok("env" in u.password, u.user);
    assert.equal(natsEnv[u.password.env], passwords.get(u.password.env), `${u.user}: ${u.password.env}`);
    assert.ok(natsEnv[u.password.env], `${u.user} has a password`);
  }
  // The server accepts the file with them (the nats.conf test below); a password variable its environment lacks is
  // refused, not taken as an empty password.
  const { [natsPasswordVariable("reader")]: _reader, ...withoutReader } = natsEnv;
  const bare = natsConfigCheck(withoutReader);
  assert.notEqual(bare.status, 0, "a missing password variable");
  assert.match(bare.output, /NATSLAKE_NATS_PASSWORD_READER/);
});

test("compose - every node logs in to NATS as the user of its role, committers to Redis as its committer user, with compose/.env's passwords", async () => {
  const natsEnv = compose.services["nats-1"]!.environment ?? {};
  const redisPassword = passwordsOf(ENV_FILE).get(COMPOSE_REDIS_PASSWORD_ENV);
  assert.ok(redisPassword, `compose/.env sets ${COMPOSE_REDIS_PASSWORD_ENV}`);
  for (const [name, s] of nodes) {
    const env = s.environment ?? {};
    const cfg = await parseNodeCommand(s.command, env);
    const user = env["NATSLAKE_NATS_USER"];
    // The user's roles cover the node's: a node with several roles needs a user with all of them.
    const spec = COMPOSE_USERS.find((u) => u.user === user);
    assert.ok(spec !== undefined, `${name}: NATSLAKE_NATS_USER '${user}' is a user of nats/permissions.conf`);
    for (const role of cfg.roles) assert.ok(spec.roles.includes(role), `${name}: its user '${user}' lacks the ${role} role`);
    assert.equal(cfg.natsUser, user, `${name}: the node takes its user from the environment`);
    assert.equal(env["NATSLAKE_NATS_PASSWORD"], natsEnv[natsPasswordVariable(spec.roles[0]!)], `${name}: the password the NATS servers give ${user}`);
    assert.equal(env["NATSLAKE_INBOX_PREFIX"], clientInboxPrefix(user!), `${name}: the inbox prefix its user may subscribe to`);
    if (cfg.roles.includes("committer")) {
      assert.equal(cfg.redisUser, COMPOSE_REDIS_USER, name);
      assert.equal(env["NATSLAKE_REDIS_PASSWORD"], redisPassword, name);
    } else {
      for (const k of ["NATSLAKE_REDIS", "NATSLAKE_REDIS_USER", "NATSLAKE_REDIS_PASSWORD"]) assert.equal(env[k], undefined, `${name}: ${k}`);
    }
  }
});

test("compose - Redis runs the committers' ACL of cluster/redis/acl.ts, the default user off, and its healthcheck logs in as that user", () => {
  const redisPassword = passwordsOf(ENV_FILE).get(COMPOSE_REDIS_PASSWORD_ENV)!;
  const redis = compose.services["redis"]!;
  assert.deepEqual(redis.command, composeRedisCommand(redisPassword));
  assert.deepEqual(redisServerArgs(compose).slice(4, 7), ["--user", "default", "off"]);
  // The file's line is the generated one (with compose/.env's variable in place of the password).
  assert.equal(readFileSync(COMPOSE_FILE, "utf8"), withRedisCommandLine(readFileSync(COMPOSE_FILE, "utf8")), "run `npm run compose-redis-acl`");
  assert.equal(redis.environment?.["REDISCLI_AUTH"], redisPassword, "the healthcheck's password");
  assert.deepEqual(redis.healthcheck?.test, ["CMD-SHELL", `redis-cli --user ${COMPOSE_REDIS_USER} ping | grep -qx PONG`]);
});

test("compose - every password comes from compose/.env, marked development-only; docker-compose refuses the file without one, naming it", () => {
  const text = readFileSync(COMPOSE_FILE, "utf8");
  const required = new Set([...text.matchAll(/\$\{([A-Z0-9_]+):\?[^}]*\}/g)].map((m) => m[1]!));
  const passwords = passwordsOf(ENV_FILE);
  assert.deepEqual([...required].sort(), [...passwords.keys()].sort(), "the variables docker-compose.yml requires are compose/.env's passwords");
  assert.deepEqual([...required].sort(), [...ROLES.map(natsPasswordVariable), COMPOSE_REDIS_PASSWORD_ENV].sort());
  // Each reference is the one that says where the value comes from.
  for (const m of text.matchAll(/\$\{([A-Z0-9_]+):\?[^}]*\}/g)) assert.equal(m[0], composeSecretRef(m[1]!));
  for (const [k, v] of passwords) assert.match(v, /^dev-only-/, `${k}: compose/.env's value says it is for development only`);
  assert.equal(new Set(passwords.values()).size, passwords.size, "a password per user");
  // new-secrets.sh knows the same names.
  const script = readFileSync(NEW_SECRETS, "utf8");
  const listed = /^NAMES=\(\n([\s\S]*?)\n\)/m.exec(script)?.[1]?.split("\n").map((l) => l.trim());
  assert.deepEqual(listed?.sort(), [...required].sort(), "compose/new-secrets.sh's NAMES");

  const dir = mkdtempSync(join(tmpdir(), "natslake-compose-env-"));
  try {
    const { NATSLAKE_NATS_PASSWORD_OPERATOR: _operator, ...shell } = process.env;
    const envFile = join(dir, "missing.env");
    writeFileSync(envFile, readFileSync(ENV_FILE, "utf8").replace(/^NATSLAKE_NATS_PASSWORD_OPERATOR=.*\n/m, ""));
    const r = spawnSync("docker-compose", ["--env-file", envFile, "--file", "docker-compose.yml", "config"], { cwd: COMPOSE_DIR, encoding: "utf8", timeout: 60_000, env: shell });
    assert.notEqual(r.status, 0, "docker-compose config without NATSLAKE_NATS_PASSWORD_OPERATOR");
    assert.match(r.stderr, /NATSLAKE_NATS_PASSWORD_OPERATOR is not set; compose\/.env sets it, compose\/new-secrets\.sh writes a random one/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("compose - new-secrets.sh replaces the passwords with random ones in place (mode 600), keeps every other line, and can run again", () => {
  const dir = mkdtempSync(join(tmpdir(), "natslake-new-secrets-"));
  try {
    const envFile = join(dir, ".env");
    copyFileSync(ENV_FILE, envFile);
    writeFileSync(envFile, `${readFileSync(envFile, "utf8")}# mine\nMY_SETTING=kept as it is\n`);
    const before = readFileSync(envFile, "utf8").split("\n");
    const run = (): Map<string, string> => {
      const r = spawnSync("bash", [NEW_SECRETS, envFile], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(statSync(envFile).mode & 0o777, 0o600, "readable by its owner only");
      const lines = readFileSync(envFile, "utf8").split("\n");
      // The same lines in the same order; only the passwords' values differ.
      assert.deepEqual(lines.map((l) => (isPasswordVariable(l.split("=")[0]!) ? l.split("=")[0] : l)), before.map((l) => (isPasswordVariable(l.split("=")[0]!) ? l.split("=")[0] : l)));
      for (const v of passwordsOf(envFile).values()) assert.ok(!(r.stdout + r.stderr).includes(v), "no password printed");
      return passwordsOf(envFile);
    };
    const first = run();
    const second = run();
    assert.deepEqual([...first.keys()].sort(), [...passwordsOf(ENV_FILE).keys()].sort());
    for (const [k, v] of first) {
      assert.match(v, /^pw[0-9a-f]{48}$/, k);
      assert.notEqual(second.get(k), v, `${k} changes on every run`);
    }
    assert.equal(new Set(first.values()).size, first.size, "a password per user");
    // docker-compose takes the new file, and the NATS servers accept the new passwords.
    const c = composeConfig({}, envFile);
    const natsEnv = c.services["nats-1"]!.environment ?? {};
    for (const role of ROLES) assert.equal(natsEnv[natsPasswordVariable(role)], second.get(natsPasswordVariable(role)), role);
    assert.deepEqual(c.services["redis"]!.command, composeRedisCommand(second.get(COMPOSE_REDIS_PASSWORD_ENV)!));
    const check = natsConfigCheck(natsEnv);
    assert.equal(check.status, 0, check.output);
    // A password line someone deleted comes back.
    writeFileSync(envFile, readFileSync(envFile, "utf8").replace(/^NATSLAKE_NATS_PASSWORD_WRITER=.*\n/m, ""));
    assert.equal(spawnSync("bash", [NEW_SECRETS, envFile]).status, 0);
    assert.match(readFileSync(envFile, "utf8"), /^NATSLAKE_NATS_PASSWORD_WRITER=pw[0-9a-f]{48}$/m);
    // No env file: an error that says how to get it back, and nothing written.
    const missing = spawnSync("bash", [NEW_SECRETS, join(dir, "none.env")], { encoding: "utf8" });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /no env file at .*none\.env .*git checkout compose\/\.env/);
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
    const credentials = ["NATSLAKE_NATS_USER", "NATSLAKE_NATS_PASSWORD", "NATSLAKE_INBOX_PREFIX", "NATSLAKE_REDIS_USER", "NATSLAKE_REDIS_PASSWORD"];
    for (const k of Object.keys(env)) if (k.startsWith("NATSLAKE_") && !(PLACE_SETTINGS as readonly string[]).includes(k)) assert.ok(["NATSLAKE_REPLICAS", "NATSLAKE_LOG_LEVEL", ...credentials].includes(k), `${name}: ${k}`);
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

test("compose - the current nats-server accepts compose/nats/nats.conf with the NATS services' environment", () => {
  const natsEnv = compose.services["nats-1"]!.environment ?? {};
  const r = natsConfigCheck(natsEnv);
  assert.equal(r.status, 0, r.output);
  assert.match(r.output, /is valid/);
  // The check can fail: a setting the server does not know is refused.
  const dir = mkdtempSync(join(tmpdir(), "natslake-natsconf-"));
  try {
    writeFileSync(join(dir, "bad.conf"), readFileSync(join(COMPOSE_DIR, "nats", "nats.conf"), "utf8").replace("sync_interval: always", "sync_interval: sometimes"));
    copyFileSync(COMPOSE_PERMISSIONS_FILE, join(dir, "permissions.conf"));
    assert.notEqual(natsConfigCheck(natsEnv, join(dir, "bad.conf")).status, 0);
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
