/**
 * node-config.md: every setting of a node's configuration schema (cluster/config.ts), with the `natslake node` flag
 * that sets it (the node command's option whose attribute is the setting's key), its environment variable, type,
 * default and meaning (the schema's `.describe()`).
 */
import { z } from "zod";
import type { Option } from "commander";
import { buildProgram } from "../../cluster/cli/program.ts";
import { durationSetting, NODE_CONFIG_ENV, NodeConfigSchema, sizeSetting, type NodeConfig } from "../../cluster/config.ts";
import { banner, code, page, prose, table } from "./markdown.ts";

type Key = keyof NodeConfig;

/** A zod schema's own definition (zod 4 keeps it on `_zod.def`). */
interface Def {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The value schema under `.default()` / `.optional()`, and the default. */
function unwrap(s: z.ZodType): { inner: z.ZodType; dflt: unknown } {
  let inner = s;
  let dflt: unknown;
  for (let d = defOf(inner); (d.type === "default" || d.type === "optional") && d.innerType !== undefined; d = defOf(inner)) {
    if (d.type === "default") dflt = d.defaultValue;
    inner = d.innerType;
  }
  return { inner, dflt };
}

function formatMs(ms: number): string {
  for (const [unit, n] of [["d", 86_400_000], ["h", 3_600_000], ["min", 60_000], ["s", 1000]] as const) if (ms >= n && ms % n === 0) return `${ms / n} ${unit}`;
  return `${ms} ms`;
}

function formatBytes(b: number): string {
  for (const [unit, n] of [["gb", 1024 ** 3], ["mb", 1024 ** 2], ["kb", 1024]] as const) if (b >= n && b % n === 0) return `${b / n} ${unit}`;
  return `${b}`;
}

/** The setting's type as a reader writes it, from the schema (JSON Schema for the plain ones). */
function typeOf(inner: z.ZodType): string {
  if (inner === durationSetting) return "duration";
  if (inner === sizeSetting) return "size";
  const js = z.toJSONSchema(inner) as { type?: string; enum?: unknown[]; minimum?: number; maximum?: number; items?: { enum?: unknown[] } };
  if (js.enum !== undefined) return `one of ${js.enum.map((v) => code(String(v))).join(", ")}`;
  if (js.type === "array" && js.items?.enum !== undefined) return `list of ${js.items.enum.map((v) => code(String(v))).join(", ")}`;
  if (js.type === "integer") return js.minimum !== undefined && js.maximum !== undefined ? `integer ${js.minimum}–${js.maximum}` : js.minimum !== undefined ? `integer ≥ ${js.minimum}` : "integer";
  if (js.type === "string") return "string";
  if (js.type === "boolean") return "boolean";
  throw new Error(`node-config: no way to show the type of a setting of JSON Schema ${JSON.stringify(js)}`);
}

function defaultOf(inner: z.ZodType, dflt: unknown): string {
  if (dflt === undefined) return "";
  if (inner === durationSetting && typeof dflt === "number") return code(formatMs(dflt));
  if (inner === sizeSetting && typeof dflt === "number") return code(formatBytes(dflt));
  return code(Array.isArray(dflt) ? dflt.join(",") : String(dflt));
}

/** The `natslake node` flag of each setting: the option whose commander attribute is the setting's key. */
const PROGRAM = await buildProgram(() => undefined);

function nodeFlags(): Map<string, Option> {
  const node = PROGRAM.commands.find((c) => c.name() === "node");
  if (node === undefined) throw new Error("node-config: the CLI has no `node` command");
  const keys = new Set(Object.keys(NodeConfigSchema.shape));
  const out = new Map<string, Option>();
  for (const o of node.options) {
    if (o.long === "--config" || o.long === "--help") continue;
    // A flag that sets no setting would be missing from the page: refuse to write it.
    if (!keys.has(o.attributeName())) throw new Error(`node-config: the node option ${o.flags} sets no setting of NodeConfigSchema (${o.attributeName()})`);
    out.set(o.attributeName(), o);
  }
  return out;
}

export function nodeConfigPage(): string {
  const flags = nodeFlags();
  const rows = Object.entries(NodeConfigSchema.shape).map(([key, schema]) => {
    const { inner, dflt } = unwrap(schema as z.ZodType);
    const description = (schema as z.ZodType).description;
    if (description === undefined) throw new Error(`node-config: setting ${key} has no description (add .describe() in cluster/config.ts)`);
    const flag = flags.get(key);
    const env = NODE_CONFIG_ENV[key as Key];
    return [code(key), flag === undefined ? "" : code(flag.flags), env === undefined ? "" : code(env), typeOf(inner), defaultOf(inner, dflt), prose(description)];
  });
  return page(
    banner("Node configuration", ["the node configuration schema (cluster/config.ts) and the `natslake node` command"]),
    prose(
      "A node (`natslake node`) takes each setting from, in this order: its flag, its environment variable, the JSON config file given by `--config <file>` (an object whose keys are the setting names below), and the default. Every value is checked at start: a wrong one stops the node with a message naming the setting and exit code 2, and a key in the config file that is not a setting is refused, naming the nearest one.",
    ),
    prose(
      "Durations are written like `250ms`, `2 s`, `1 min` (a number in the config file is milliseconds); sizes like `512 kb`, `64mb`, `1 gb` (a number is bytes). Settings without a flag or variable are set in the config file.",
    ),
    "## Settings",
    table(["Setting", "Flag", "Environment", "Type", "Default", "Meaning"], rows),
    "## Tracing",
    prose(
      "Traces are off unless asked for: a node exports them when `OTEL_TRACES_EXPORTER` names an exporter (`otlp`, `console`), or, with it unset, when an OTLP endpoint is given (`otlpEndpoint`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`); `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true` turn them off. natslake also reads `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`, `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`; the exporter reads its own standard variables (headers, timeout, compression, certificates).",
    ),
  );
}
