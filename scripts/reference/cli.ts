/**
 * cli.md: every command of the `natslake` program as commander holds it (cluster/cli/program.ts): name, aliases,
 * description, usage, arguments, options with their defaults, subcommands, and what its --help shows after the option
 * list (examples and notes).
 */
import type { Argument, Command, Option } from "commander";
import { slug } from "github-slugger";
import { buildProgram } from "../../cluster/cli/program.ts";
import { banner, block, code, page, prose, table } from "./markdown.ts";

interface Entry {
  /** `natslake table create`. */
  title: string;
  cmd: Command;
  depth: number;
}

function commandsOf(root: Command): Entry[] {
  const out: Entry[] = [];
  const walk = (c: Command, path: string[], depth: number): void => {
    out.push({ title: path.join(" "), cmd: c, depth });
    for (const sub of root.createHelp().visibleCommands(c)) {
      // commander's implicit `help [command]` is not a command of ours: every command takes --help instead.
      if (sub.name() === "help" && !c.commands.includes(sub)) continue;
      walk(sub, [...path, sub.name()], depth + 1);
    }
  };
  walk(root, [root.name()], 0);
  return out;
}

/** What `--help` prints after the option list (`addHelpText("after", …)`), as a user sees it. */
function afterHelp(cmd: Command): string {
  let text = "";
  cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  cmd.outputHelp();
  const main = cmd.helpInformation();
  if (!text.startsWith(main)) throw new Error(`${cmd.name()}: its help does not start with the option list (help text before it is not rendered here)`);
  return text.slice(main.length);
}

/** The after-help text split into its example command lines and its notes (paragraphs of wrapped lines). */
function examplesAndNotes(text: string): { examples: string[]; notes: string[] } {
  const examples: string[] = [];
  const notes: string[] = [];
  let para: string[] = [];
  const endPara = (): void => {
    if (para.length > 0) notes.push(para.join(" "));
    para = [];
  };
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^Examples?\b.*:$/.test(line.trim())) {
      endPara();
      for (i++; i < lines.length && lines[i]!.trim() !== ""; i++) examples.push(lines[i]!.trim());
      continue;
    }
    if (line.trim() === "") endPara();
    else para.push(line.trim());
  }
  endPara();
  return { examples, notes };
}

function argumentTerm(a: Argument): string {
  const name = a.name() + (a.variadic ? "..." : "");
  return a.required ? `<${name}>` : `[${name}]`;
}

/** The default column: what applies when the option is not given. */
function defaultOf(o: Option): string {
  if (o.mandatory) return "required";
  if (o.defaultValueDescription !== undefined) return code(o.defaultValueDescription);
  const v: unknown = o.defaultValue;
  if (v === undefined || o.negate) return "";
  // A repeatable option's accumulator starts empty: nothing to show.
  if ((Array.isArray(v) && v.length === 0) || (typeof v === "object" && v !== null && Object.keys(v).length === 0)) return "";
  return code(typeof v === "string" ? v : JSON.stringify(v));
}

function optionDescription(o: Option): string {
  const extra: string[] = [];
  if (o.argChoices !== undefined) extra.push(`one of ${o.argChoices.map(code).join(", ")}`);
  if (o.envVar !== undefined) extra.push(`environment ${code(o.envVar)}`);
  return [prose(o.description), ...extra.map((e) => `(${e})`)].join(" ");
}

function commandSection(e: Entry, help: ReturnType<Command["createHelp"]>): string {
  const { cmd } = e;
  const parts: string[] = [`## ${e.title}`];
  if (cmd.description() !== "") parts.push(prose(cmd.description()));
  parts.push(`Usage: ${code(`${e.title} ${cmd.usage()}`)}`);
  if (cmd.aliases().length > 0) parts.push(`Aliases: ${cmd.aliases().map(code).join(", ")}`);
  const args = cmd.registeredArguments;
  if (args.some((a) => a.description !== "")) {
    parts.push(table(["Argument", "Description"], args.map((a) => [code(argumentTerm(a)), prose(a.description) + (a.defaultValue !== undefined ? ` (default ${code(String(a.defaultValue))})` : "")])));
  } else if (args.length > 0) {
    parts.push(`Arguments: ${args.map((a) => `${code(argumentTerm(a))} (${a.required ? "required" : "optional"}${a.variadic ? ", any number" : ""})`).join(", ")}`);
  }
  const opts = help.visibleOptions(cmd).filter((o) => o.long !== "--help");
  if (opts.length > 0) parts.push(table(["Option", "Default", "Description"], opts.map((o) => [code(o.flags), defaultOf(o), optionDescription(o)])));
  const subs = help.visibleCommands(cmd).filter((s) => cmd.commands.includes(s));
  if (subs.length > 0) {
    parts.push(table(["Command", "Description"], subs.map((s) => [`[${code(`${e.title} ${s.name()}`)}](#${slug(`${e.title} ${s.name()}`)})`, prose(s.description())])));
  }
  const { examples, notes } = examplesAndNotes(afterHelp(cmd));
  if (examples.length > 0) parts.push(`Example${examples.length > 1 ? "s" : ""}:`, block("sh", examples));
  parts.push(...notes.map(prose));
  return parts.join("\n\n");
}

// The whole program (every command group), built once: building it is asynchronous (the groups load on demand).
const PROGRAM = await buildProgram(() => undefined);

export function cliPage(): string {
  const program = PROGRAM;
  const help = program.createHelp();
  const entries = commandsOf(program);
  const index = entries.slice(1).map((e) => `${"  ".repeat(e.depth - 1)}- [${e.title}](#${slug(e.title)})`);
  return page(
    banner("CLI reference", ["the commander program (cluster/cli/program.ts)"]),
    prose(program.description()) + ".",
    "Every command takes `-h, --help` (its usage, options and examples, as below); `natslake --version` prints the version and whether the compiled build or the TypeScript sources run. A command's options are written after it. Exit codes: [exit-codes.md](exit-codes.md).",
    ["## Commands", "", ...index].join("\n"),
    ...entries.map((e) => commandSection(e, help)),
  );
}
