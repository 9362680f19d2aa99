/**
 * Every command's `--help` ends with an example, and every example is a command line the real parser accepts: the
 * test walks commander's command tree (groups and leaves), reads each command's help as a user sees it, and parses
 * each example line with a second copy of the tree whose actions only record which command ran — so an example
 * naming an option the command does not have, a bad value for a parsed option, or a missing required one fails here.
 * `--version` prints package.json's version. Every `natslake` command line in the documentation's shell blocks — the
 * runbook, the guide, the operations pages, the README — parses the same way, so the docs name only commands and
 * options that exist.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CommanderError, type Command } from "commander";
import { buildProgram } from "../../cluster/cli/program.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

interface Entry {
  path: string[];
  cmd: Command;
}

function commandsOf(root: Command): Entry[] {
  const out: Entry[] = [];
  const walk = (c: Command, path: string[]): void => {
    for (const sub of c.commands) {
      const p = [...path, sub.name()];
      out.push({ path: p, cmd: sub });
      walk(sub, p);
    }
  };
  walk(root, []);
  return out;
}

/** The help text exactly as `natslake <path> --help` prints it. */
function helpOf(cmd: Command): string {
  let text = "";
  cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  cmd.outputHelp();
  return text;
}

/** The lines of the help's "Example:" / "Examples:" block(s), without the trailing `  # comment`. */
function examplesIn(help: string): string[] {
  const lines = help.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^Examples?\b.*:$/.test(lines[i]!.trim())) continue;
    for (let j = i + 1; j < lines.length && lines[j]!.trim() !== ""; j++) out.push(lines[j]!.trim().replace(/\s{2,}#.*$/, ""));
  }
  return out;
}

/** Splits a command line as a POSIX shell would for these examples: words, '…' and "…" quoting. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "'" || ch === '"') {
      const end = line.indexOf(ch, i + 1);
      assert.ok(end > i, `unbalanced quote in: ${line}`);
      cur += line.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (ch === " ") {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      assert.ok(!"|;&<>$`\\".includes(ch), `an example is one command, without shell syntax: ${line}`);
      cur += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

test("help - every command and command group shows an example, and every example parses with the real CLI", async () => {
  const entries = commandsOf(await buildProgram(() => undefined));
  assert.ok(entries.length > 30, `the whole tree is walked (${entries.length} commands)`);
  // A second tree whose actions record the command they belong to instead of running it.
  const parser = await buildProgram(() => undefined);
  let ran: string | null = null;
  let parseErrors = "";
  parser.configureOutput({ writeOut: () => undefined, writeErr: (s) => (parseErrors += s) });
  for (const { path, cmd } of commandsOf(parser)) {
    cmd.configureOutput({ writeOut: () => undefined, writeErr: (s) => (parseErrors += s) });
    if (Reflect.get(cmd, "_actionHandler") != null) cmd.action(() => void (ran = path.join(" ")));
  }
  let checked = 0;
  for (const { path, cmd } of entries) {
    const name = path.join(" ");
    const examples = examplesIn(helpOf(cmd));
    assert.ok(examples.length > 0, `natslake ${name} --help shows no example`);
    for (const ex of examples) {
      const words = shellWords(ex);
      assert.equal(words[0], "natslake", `${name}: an example is a natslake command line: ${ex}`);
      assert.deepEqual(words.slice(1, 1 + path.length), path, `${name}: its example runs it (or, for a group, one of its commands): ${ex}`);
      ran = null;
      parseErrors = "";
      try {
        await parser.parseAsync(words.slice(1), { from: "user" });
      } catch (e) {
        assert.fail(`${name}: the example does not parse: ${ex}\n  ${e instanceof CommanderError ? e.message : String(e)} ${parseErrors}`);
      }
      assert.ok(ran !== null, `${name}: the example reaches a command: ${ex}`);
      if (cmd.commands.length === 0) assert.equal(ran, name, `the example of ${name} runs ${name}`);
      checked++;
    }
  }
  assert.ok(checked >= entries.length);
});

test("help - no option takes a secret as its value, and no help text shows one", async () => {
  const entries = commandsOf(await buildProgram(() => undefined));
  // A flag's value shows in `ps` and in shell history: a password, token or key is named by the FILE holding it.
  const secretish = /password|token|secret|creds|nkey|tls-key/;
  let secretFlags = 0;
  for (const { path, cmd } of entries) {
    for (const o of cmd.options) {
      if (o.long === undefined || !secretish.test(o.long)) continue;
      secretFlags++;
      assert.ok(o.flags.endsWith(" <file>"), `natslake ${path.join(" ")} ${o.flags}: a secret's flag takes a <file>`);
    }
    const help = helpOf(cmd);
    assert.ok(!/[a-z][a-z0-9+.-]*:\/\/[^\s/@]*:[^\s/@]*@/i.test(help), `natslake ${path.join(" ")} --help shows a URL with a password`);
    assert.ok(!/(PASSWORD|TOKEN)=(?![\s'"]|$)/.test(help), `natslake ${path.join(" ")} --help shows a password or token by value`);
  }
  assert.ok(secretFlags > 50, `the credential flags of every --nats command are checked (${secretFlags})`);
});

const REPO = new URL("../../", import.meta.url);

/**
 * The `natslake` command lines of a Markdown file's ```sh blocks: a line continued with `\` joined to the next, a
 * leading `npx ` dropped (the checkout runs the same bin), a trailing `  # comment` left out.
 */
function docCommandLines(rel: string): string[] {
  const text = readFileSync(new URL(rel, REPO), "utf8");
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, ""));
  return blocks
    .flatMap((b) => b.split("\n"))
    .map((l) => l.replace(/\s{2,}#.*$/, "").trim().replace(/^npx (?=natslake )/, ""))
    .filter((l) => l.startsWith("natslake "));
}

/** Parses each line with a tree whose actions record the command they reach; fails naming the file and the line. */
async function parseDocLines(rel: string, lines: string[]): Promise<void> {
  const parser = await buildProgram(() => undefined);
  let ran: string | null = null;
  let errors = "";
  parser.configureOutput({ writeOut: () => undefined, writeErr: (s) => (errors += s) });
  for (const { path, cmd } of commandsOf(parser)) {
    cmd.configureOutput({ writeOut: () => undefined, writeErr: (s) => (errors += s) });
    if (Reflect.get(cmd, "_actionHandler") != null) cmd.action(() => void (ran = path.join(" ")));
  }
  // Placeholders as an operator fills them in; `[…]` optional parts and a `> file` redirection are left out.
  const fill: Record<string, string> = { "<leader-node>": "node-1", "<owner-node>": "node-2", "<node>": "node-3", "<N-1>": "41", "<command>": "status" };
  for (const line of lines) {
    if (line.includes("<command> --help")) continue; // the generic help line
    if (line === "natslake --version") continue; // covered by the test below (commander exits through its version path)
    const concrete = line
      .replace(/\[[^\]]*\]/g, "")
      .replace(/\s>\s*\S+$/, "")
      // (a type parameter such as ARRAY<STRING> is not a placeholder)
      .replace(/<(?![A-Z]+>)[^>]+>/g, (p) => {
        assert.ok(fill[p] !== undefined, `${rel}: an unknown placeholder ${p} in: ${line}`);
        return fill[p]!;
      });
    ran = null;
    errors = "";
    try {
      await parser.parseAsync(shellWords(concrete).slice(1), { from: "user" });
    } catch (e) {
      assert.fail(`${rel}: does not parse: ${line}\n  ${e instanceof Error ? e.message : String(e)} ${errors}`);
    }
    assert.ok(ran !== null, `${rel}: reaches no command: ${line}`);
  }
}

test("runbook - every natslake command line in docs/operations/runbook.md parses with the real CLI", async () => {
  const lines = docCommandLines("docs/operations/runbook.md");
  assert.ok(lines.length >= 15, `the runbook's commands are found (${lines.length})`);
  await parseDocLines("docs/operations/runbook.md", lines);
});

test("docs - every natslake command line in the README, the guide and the operations pages parses with the real CLI", async () => {
  const pages = ["README.md", "docs/contributing.md"];
  for (const dir of ["docs/guide/", "docs/operations/"]) {
    for (const f of readdirSync(new URL(dir, REPO)).sort()) if (f.endsWith(".md")) pages.push(dir + f);
  }
  assert.ok(pages.includes("docs/guide/publishing.md") && pages.includes("docs/operations/deploying.md"), `the pages are found: ${pages.join(", ")}`);
  let total = 0;
  for (const rel of pages) {
    const lines = docCommandLines(rel);
    total += lines.length;
    await parseDocLines(rel, lines);
  }
  assert.ok(total >= 60, `the documentation's commands are found (${total})`);
  assert.ok(docCommandLines("README.md").length >= 4, "the README's tour commands are found");
});

test("help - --version prints the version in package.json and which code runs", () => {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  const r = spawnSync(process.execPath, [BIN, "--version"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^${pkg.version.replace(/\./g, "\\.")} \\((sources|dist)\\)\\n$`));
});
