/**
 * `natslake get`: rows of a primary-key table looked up by key (src/scan/lookup.ts), one output line per key asked
 * for, in order — `{"key":{…},"row":{…}}`, or `"row":null` for a key never written or deleted. A key is
 * `field=value[,field=value…]`, its values text as a CSV file gives them to `write` (converted by the column's type
 * the same way), or a JSON object for values that hold commas (parsed as `write` parses JSON lines: no rounding).
 *
 * With `--nats` and no warehouse (`--warehouse` or NATSLAKE_WAREHOUSE) the keys are looked up by the cluster's reader
 * nodes (cluster/lookup-client.ts): no warehouse access needed; a key is then printed as it was given.
 */
import type { Command } from "commander";
import { isLakeError } from "../../src/errors.ts";
import { parseRowJson } from "../../src/format/wire/json.ts";
import { toJsonText, toJsonValue, type Row } from "../../src/format/values.ts";
import type { DataField } from "../../src/format/data-types.ts";
import { KeyLookup, type LookupKey } from "../../src/scan/lookup.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { LookupClient, LookupError } from "../lookup-client.ts";
import { DEFAULT_PREFIX } from "../nats/subjects.ts";
import { catalogFrom, connectOrExplain, durationArg, examples, parseNonNegativeInt, parsePositiveInt, UsageError, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";

interface GetOpts extends WarehouseOpts {
  key: string[];
  snapshot?: number;
  tag?: string;
  columns?: string;
  format: string;
  nats?: string;
  prefix: string;
  atLeastSnapshot?: number;
  wait?: number;
}

/** One `--key` as the input record it stands for; UsageError for text that is neither form. */
export function parseKeyText(text: string): LookupKey {
  const bad = (why: string): never => {
    throw new UsageError(`--key '${text}': ${why}`);
  };
  if (text.trimStart().startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = parseRowJson(text);
    } catch (e) {
      return bad(`not valid JSON (${(e as Error).message})`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return bad("a JSON key must be an object");
    return parsed as LookupKey;
  }
  const key: Record<string, string | null> = {};
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) bad(`'${part}' is not field=value (give every primary-key field: id=42 or id=42,region=eu, or a JSON object)`);
    const name = part.slice(0, eq).trim();
    if (name in key) bad(`field '${name}' is given twice`);
    // As a CSV field: the text itself, an empty one null.
    const value = part.slice(eq + 1);
    key[name] = value === "" ? null : value;
  }
  return key;
}

const collect = (v: string, acc: string[]): string[] => [...acc, v];

/** A row (or key) of `fields` as JSON values, the way `read --format jsonl` renders them. */
const jsonOf = (fields: readonly DataField[], row: Row): Record<string, unknown> => Object.fromEntries(fields.map((f) => [f.name, toJsonValue(f.type, row[f.name] ?? null)]));

export function registerGetCommand(program: Command, out: (s: string) => void): void {
  program
    .command("get <table>")
    .description("look rows of a primary-key table up by key: one line per --key, in order, with the row or null (never written, or deleted)")
    .option("--key <key>", "a key: field=value[,field=value…] naming every primary-key field, or a JSON object; repeat for more keys", collect, [])
    .option("--snapshot <id>", "look up in this snapshot (in its own schema)", parseNonNegativeInt("--snapshot"))
    .option("--tag <name>", "look up in the snapshot this tag holds")
    .option("--columns <cols>", "comma-separated columns of the rows (default: all)")
    .option("--format <jsonl|json>", "jsonl: one object per line; json: one array", "jsonl")
    .option("--nats <url>", "without --warehouse: look the keys up through the cluster's reader nodes (no warehouse access needed)")
    .option("--prefix <p>", "the cluster's subject prefix (with --nats)", DEFAULT_PREFIX)
    .option("--at-least-snapshot <id>", "with --nats: answer from this snapshot or a newer one, waiting for it up to --wait", parsePositiveInt("--at-least-snapshot"))
    .option("--wait <duration>", "with --nats: how long a reader may wait for the snapshot asked for", durationArg)
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText(
      "after",
      examples("natslake get shop.users --key id=42 --key id=43 --warehouse /data/wh", "natslake get shop.users --key id=42 --nats nats://127.0.0.1:4222", "natslake get shop.orders --key 'region=eu,order_id=1001' --columns status,total --snapshot 17", `natslake get shop.users --key '{"id":42,"region":"eu"}' --format json`),
    )
    .action(async (name: string, o: GetOpts) => {
      if (o.key.length === 0) throw new UsageError("give at least one --key (e.g. --key id=42)");
      if (o.format !== "jsonl" && o.format !== "json") throw new UsageError(`--format must be jsonl or json, got '${o.format}'`);
      if (o.snapshot !== undefined && o.tag !== undefined) throw new UsageError("use one of --snapshot and --tag");
      const keys = o.key.map(parseKeyText);
      const columns = o.columns?.split(",").map((s) => s.trim()).filter(Boolean);
      const print = (lines: string[]): void => {
        if (o.format === "jsonl") for (const l of lines) out(l);
        else out(lines.length === 0 ? "[]" : `[\n${lines.map((l) => `  ${l}`).join(",\n")}\n]`);
      };
      if (o.nats !== undefined && (o.warehouse ?? process.env["NATSLAKE_WAREHOUSE"]) === undefined) {
        print(await getThroughReaders(name, keys, columns, o));
        return;
      }
      if (o.atLeastSnapshot !== undefined || o.wait !== undefined) throw new UsageError("--at-least-snapshot and --wait go with --nats (lookups through the cluster's reader nodes), without a warehouse");
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const lookup = await KeyLookup.open(t, {
        ...(o.snapshot !== undefined ? { snapshotId: o.snapshot } : {}),
        ...(o.tag !== undefined ? { tag: o.tag } : {}),
        ...(columns !== undefined ? { columns } : {}),
      });
      let rows: Array<Row | null>;
      try {
        rows = await lookup.get(keys);
      } catch (e) {
        // The library names the key by its place; the user wrote it as text.
        const at = isLakeError(e) ? e.context["key"] : undefined;
        if (typeof at === "number" && o.key[at] !== undefined) throw new UsageError(`--key '${o.key[at]}': ${e instanceof Error ? e.message : String(e)}`);
        throw e;
      }
      const keyFields = lookup.table.schema.primaryKeys.map((k) => lookup.table.schema.fields.find((f) => f.name === k)!);
      print(rows.map((row, i) => toJsonText({ key: jsonOf(keyFields, lookup.canonicalKey(keys[i]!, i)), row: row === null ? null : jsonOf(lookup.columns, row) })));
    });
}

/** The lines of `get --nats`: the keys looked up by the cluster's reader nodes, each printed as given. */
async function getThroughReaders(name: string, keys: LookupKey[], columns: string[] | undefined, o: GetOpts): Promise<string[]> {
  if (o.tag !== undefined) throw new UsageError("--tag needs the warehouse (--warehouse); through the cluster, name the snapshot with --snapshot");
  const nc = await connectOrExplain({ ...o, nats: o.nats! }, { name: "natslake-get" });
  try {
    const client = new LookupClient(nc, false, { prefix: o.prefix });
    const r = await client
      .get(name, keys, {
        ...(columns !== undefined ? { columns } : {}),
        ...(o.snapshot !== undefined ? { snapshot: o.snapshot } : {}),
        ...(o.atLeastSnapshot !== undefined ? { atLeastSnapshot: o.atLeastSnapshot } : {}),
        ...(o.wait !== undefined ? { waitMs: o.wait } : {}),
      })
      .catch((e: unknown) => {
        // The reader names the key by its place; the user wrote it as text.
        const at = e instanceof LookupError ? e.context["key"] : undefined;
        if (typeof at === "number" && o.key[at] !== undefined) throw new UsageError(`--key '${o.key[at]}': ${e instanceof Error ? e.message : String(e)}`);
        throw e;
      });
    // A JSON key's integers beyond 2^53 were read as bigints: printed as their digits' text, as rows print them.
    const printable = (k: LookupKey): Record<string, unknown> => Object.fromEntries(Object.entries(k).map(([f, v]) => [f, typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : String(v)) : v]));
    return r.rows.map((row, i) => toJsonText({ key: printable(keys[i]!), row }));
  } finally {
    await nc.close().catch(() => undefined);
  }
}
