/**
 * The commands `natslake up` prints (cluster/cli/up-guide.ts) where the paste test (test/cli/up-cli.test.ts) does
 * not reach: paths that need quoting, an S3 run, and a folder without examples/ or .venv (an installed package, a
 * checkout before scripts/setup.sh) — no line then names a file that is not there.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exampleCommands, shellQuote, tryCommands } from "../../../cluster/cli/up-guide.ts";

test("up guide - shellQuote gives one shell word for any path, unquoted when it needs nothing", () => {
  assert.equal(shellQuote("/tmp/wh-1/a_b.c"), "/tmp/wh-1/a_b.c");
  for (const s of ["/tmp/my warehouse", "s3://b/p?endpoint=http://127.0.0.1:1", "it's", "$HOME/x", "a\"b", ""]) {
    const echoed = spawnSync("bash", ["-c", `printf %s ${shellQuote(s)}`], { encoding: "utf8" }).stdout;
    assert.equal(echoed, s, `${s} → ${shellQuote(s)}`);
  }
});

test("up guide - without examples/ or .venv no line names them; with examples but no .venv the Python ones are a note, not commands", () => {
  const root = mkdtempSync(join(tmpdir(), "natslake-guide-"));
  try {
    const g = { natsUrl: "nats://127.0.0.1:4222", warehouse: "/tmp/my warehouse", root };
    const bare = [...tryCommands(g), ...exampleCommands(g)].join("\n");
    assert.doesNotMatch(bare, /examples\/|\.venv/);
    assert.match(bare, /npx natslake read db\.events --warehouse '\/tmp\/my warehouse'/);

    mkdirSync(join(root, "examples", "typescript"), { recursive: true });
    mkdirSync(join(root, "examples", "data"), { recursive: true });
    writeFileSync(join(root, "examples", "data", "events.jsonl"), "");
    const noVenv = [...tryCommands(g), ...exampleCommands(g)].join("\n");
    assert.match(noVenv, /npx natslake publish db\.events examples\/data\/events\.jsonl/);
    assert.match(noVenv, /npx tsx --conditions=development examples\/typescript\/producer\.ts --nats nats:\/\/127\.0\.0\.1:4222 --table demo\.events/);
    assert.doesNotMatch(noVenv, /\.venv\/bin\/python/);
    assert.match(noVenv, /scripts\/setup\.sh makes \.venv/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("up guide - on an --s3 run the commands that read the warehouse source the credentials first; no query.py line", () => {
  const root = mkdtempSync(join(tmpdir(), "natslake-guide-"));
  try {
    mkdirSync(join(root, "examples", "typescript"), { recursive: true });
    mkdirSync(join(root, ".venv", "bin"), { recursive: true });
    writeFileSync(join(root, ".venv", "bin", "python"), "");
    const g = { natsUrl: "nats://127.0.0.1:4222", warehouse: "s3://natslake/warehouse?endpoint=http://127.0.0.1:8333", s3EnvFile: "/tmp/run/s3.env", root };
    const lines = [...tryCommands(g), ...exampleCommands(g)];
    assert.ok(lines.includes("  read the table:     source /tmp/run/s3.env && npx natslake read db.events --warehouse 's3://natslake/warehouse?endpoint=http://127.0.0.1:8333'"), lines.join("\n"));
    assert.ok(lines.some((l) => l.includes("consume.py")));
    assert.ok(!lines.some((l) => l.includes("query.py")));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("up guide - given NATS credentials, its natslake commands carry the same flags and its examples the same settings as NATSLAKE_NATS_* (file names, never a secret)", () => {
  const root = mkdtempSync(join(tmpdir(), "natslake-guide-"));
  try {
    mkdirSync(join(root, "examples", "typescript"), { recursive: true });
    mkdirSync(join(root, ".venv", "bin"), { recursive: true });
    writeFileSync(join(root, ".venv", "bin", "python"), "");
    const natsAuth = { natsUser: "sre", natsPasswordFile: "/run/secrets/nats pw", natsTlsCa: "/etc/natslake/ca.pem", natsTlsFirst: true };
    const lines = [...tryCommands({ natsUrl: "tls://nats-1:4222", warehouse: "/wh", root, natsAuth }), ...exampleCommands({ natsUrl: "tls://nats-1:4222", warehouse: "/wh", root, natsAuth })];
    const flags = "--nats tls://nats-1:4222 --nats-user sre --nats-password-file '/run/secrets/nats pw' --nats-tls-ca /etc/natslake/ca.pem --nats-tls-first";
    for (const what of ["table create db.events", "subscribe db.events", "status"]) {
      assert.ok(lines.some((l) => l.includes(`npx natslake ${what} ${flags}`)), `${what}:\n${lines.join("\n")}`);
    }
    const env = "NATSLAKE_NATS_USER=sre NATSLAKE_NATS_PASSWORD_FILE='/run/secrets/nats pw' NATSLAKE_NATS_TLS_CA=/etc/natslake/ca.pem NATSLAKE_NATS_TLS_FIRST=true ";
    for (const example of ["examples/typescript/producer.ts", "examples/typescript/consumer.ts", "examples/python/publish.py", "examples/python/consume.py"]) {
      assert.ok(lines.some((l) => l.includes(env) && l.includes(example)), `${example} with the settings in its environment:\n${lines.join("\n")}`);
    }
    // The assignments are shell words: a path with a space arrives whole.
    const echoed = spawnSync("bash", ["-c", `${env}printenv NATSLAKE_NATS_PASSWORD_FILE`], { encoding: "utf8" }).stdout;
    assert.equal(echoed, "/run/secrets/nats pw\n");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
