/**
 * The CLI loads only the group of the command it runs (cluster/cli/command-groups.ts). These checks keep that from
 * changing what the CLI is: each group's program has exactly the commands its table row names, with the same options
 * and subcommands as the whole program's; a command line is routed by its first word that is not an option.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Command } from "commander";
import { buildProgram } from "../../cluster/cli/program.ts";
import { COMMAND_GROUPS, commandWordOf, groupOf } from "../../cluster/cli/command-groups.ts";

/** A command's shape: its name, arguments, options (flags, defaults) and subcommands, recursively. */
function shapeOf(c: Command): unknown {
  return {
    name: c.name(),
    description: c.description(),
    args: c.registeredArguments.map((a) => `${a.required ? "<" : "["}${a.name()}${a.variadic ? "..." : ""}${a.required ? ">" : "]"}`),
    options: c.options.map((o) => `${o.flags}=${JSON.stringify(o.defaultValue)}`),
    commands: c.commands.map(shapeOf),
  };
}

test("command groups - each group's program has exactly the commands its row names, shaped as in the whole program", async () => {
  const whole = await buildProgram(() => undefined);
  const seen: string[] = [];
  for (const g of COMMAND_GROUPS) {
    const part = await buildProgram(() => undefined, [g.names[0]!, "--help"]);
    assert.deepEqual(part.commands.map((c) => c.name()).sort(), [...g.names].sort(), `the group of ${g.names[0]} registers ${g.names.join(", ")}`);
    for (const name of g.names) {
      const mine = part.commands.find((c) => c.name() === name)!;
      const theirs = whole.commands.find((c) => c.name() === name);
      assert.ok(theirs, `${name} is a command of the whole program`);
      assert.deepEqual(shapeOf(mine), shapeOf(theirs), `${name}: the same arguments, options and subcommands`);
    }
    seen.push(...g.names);
  }
  assert.deepEqual(whole.commands.map((c) => c.name()).sort(), seen.sort(), "every command of the whole program is in one group, and only once");
  assert.deepEqual(shapeOf(whole), shapeOf(await buildProgram(() => undefined, ["--help"])), "no command word: the whole program");
  assert.equal((await buildProgram(() => undefined, ["tabel", "list"])).commands.length, whole.commands.length, "an unknown word: the whole program, so commander can suggest the right one");
});

test("command groups - the command word is the first argument that is not an option", () => {
  assert.equal(commandWordOf(["tag", "create", "db.t", "v1"]), "tag");
  assert.equal(commandWordOf(["--version"]), undefined);
  assert.equal(commandWordOf(["--help", "node"]), "node");
  assert.equal(commandWordOf([]), undefined);
  assert.equal(groupOf("snapshots")?.names[0], "table");
  assert.equal(groupOf("publish")?.names.includes("node"), true);
  assert.equal(groupOf("nonsense"), undefined);
  assert.equal(groupOf(undefined), undefined);
});
