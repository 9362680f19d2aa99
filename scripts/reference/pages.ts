/**
 * The reference pages of docs/reference/, each generated from the code it documents: file name → content. The
 * generator script writes them; test/unit/docs-reference.test.ts compares them with the committed files.
 */
import { cliPage } from "./cli.ts";
import { exitCodesPage } from "./exit-codes.ts";
import { banner, page } from "./markdown.ts";
import { metricsPage } from "./metrics.ts";
import { nodeConfigPage } from "./node-config.ts";
import { tableOptionsPage } from "./table-options.ts";
import { wireProtocolPage } from "./wire-protocol.ts";

/** Where the pages go, relative to the repository. */
export const REFERENCE_DIR = "docs/reference";

/** The command that writes them again. */
export const REGENERATE = "npm run docs:reference";

const PAGES: ReadonlyArray<{ file: string; title: string; what: string; make: () => string | Promise<string> }> = [
  { file: "cli.md", title: "CLI", what: "every `natslake` command: arguments, options and defaults, examples", make: cliPage },
  { file: "exit-codes.md", title: "Exit codes", what: "what a `natslake` command's exit code means", make: exitCodesPage },
  { file: "node-config.md", title: "Node configuration", what: "every setting of a node: flag, environment variable, config-file key, default", make: nodeConfigPage },
  { file: "table-options.md", title: "Table options", what: "every table option, Paimon's and natslake's, with its default", make: tableOptionsPage },
  { file: "metrics.md", title: "Metrics", what: "every metric a node exports: type, unit, labels", make: metricsPage },
  { file: "wire-protocol.md", title: "Wire protocol", what: "the subjects and the messages on them, field by field, with their JSON Schemas", make: wireProtocolPage },
];

function indexPage(): string {
  return page(
    banner("Reference", ["the list of reference pages (scripts/reference/pages.ts)"]),
    `These pages are generated from the code they describe, so they say what the code does. Change the code (an option's description, a command's help, a metric's declaration), then run \`${REGENERATE}\`; a unit test (test/unit/docs-reference.test.ts) fails while a page differs from what the code would generate.`,
    PAGES.map((p) => `- [${p.title}](${p.file}): ${p.what}`).join("\n"),
  );
}

/** Every page, README.md first. */
export async function referencePages(): Promise<Record<string, string>> {
  const out: Record<string, string> = { "README.md": indexPage() };
  for (const p of PAGES) out[p.file] = await p.make();
  return out;
}
