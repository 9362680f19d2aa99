/**
 * wire-protocol.md: the subjects and messages of the wire protocol, from the JSON Schemas the package publishes in
 * schemas/ (actors/wire/published.ts writes them from actors/wire/schemas.ts; a unit test keeps the committed files
 * equal to it). Every message gets its subjects, encoding, schema file and a table of its fields, nested ones by path.
 */
import { publishedSchemaFiles } from "../../actors/wire/published.ts";
import { banner, code, page, prose, table } from "./markdown.ts";

/** The JSON Schema keywords zod writes for the wire schemas (no $ref: every schema is inline). */
interface JsonSchema {
  /** One type, or several (`["string", "null"]`). */
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  description?: string;
  title?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  contentEncoding?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  "x-natslake-encoding"?: string;
}

interface SubjectContract {
  subject: string;
  schema: string;
  carrier: string;
  from: string;
  headers?: string[];
  reply?: string;
}

interface SubjectsFile {
  description: string;
  encodings: Record<string, string>;
  subjects: SubjectContract[];
  consumeInbox: { subject: string; headers: string; errorBody: string; chunkBody: string };
}

const SAFE = Number.MAX_SAFE_INTEGER;
const SCHEMA_DIR = "../../schemas";

const isNull = (s: JsonSchema): boolean => s.type === "null";
const alternatives = (s: JsonSchema): JsonSchema[] | undefined => s.anyOf ?? s.oneOf;
const isObject = (s: JsonSchema): boolean => s.type === "object" && s.properties !== undefined;
const isMap = (s: JsonSchema): boolean => s.type === "object" && s.properties === undefined;

function integerType(s: JsonSchema): string {
  const min = s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : s.minimum;
  const lo = min === undefined || min <= -SAFE ? undefined : min;
  const hi = s.maximum === undefined || s.maximum >= SAFE ? undefined : s.maximum;
  if (lo !== undefined && hi !== undefined) return `integer ${lo}–${hi}`;
  if (lo !== undefined) return `integer ≥ ${lo}`;
  if (hi !== undefined) return `integer ≤ ${hi}`;
  return "integer";
}

/** A one-line type of a schema (its nested fields, if any, get rows of their own). */
function typeOf(s: JsonSchema): string {
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (s.enum !== undefined) return `one of ${s.enum.map((v) => code(JSON.stringify(v))).join(", ")}`;
  const alts = alternatives(s);
  if (alts !== undefined) {
    const nonNull = alts.filter((a) => !isNull(a));
    return nonNull.map(typeOf).join(" or ") + (nonNull.length < alts.length ? " or `null`" : "");
  }
  if (Array.isArray(s.type)) return s.type.map((t) => typeOf({ ...s, type: t })).join(" or ");
  switch (s.type) {
    case "string": {
      // msgpack bin: its description says so, and how the JSON view shows it.
      if (s.contentEncoding === "base64") return "bytes";
      const limits = [s.minLength !== undefined && s.minLength > 0 ? `non-empty` : "", s.maxLength !== undefined ? `at most ${s.maxLength} characters` : ""].filter(Boolean);
      return `string${limits.length > 0 ? ` (${limits.join(", ")})` : ""}${s.pattern !== undefined ? ` matching ${code(s.pattern)}` : ""}`;
    }
    case "integer":
      return integerType(s);
    case "number":
      return s.minimum === 0 ? "number ≥ 0" : "number";
    case "boolean":
      return "boolean";
    case "null":
      return "`null`";
    case "array":
      return `array${s.minItems !== undefined && s.minItems > 0 ? " (non-empty)" : ""} of ${s.items === undefined ? "anything" : plural(s.items)}`;
    case "object":
      if (isObject(s)) return "object";
      return `map of ${s.propertyNames?.pattern !== undefined ? `keys matching ${code(s.propertyNames.pattern)}` : "keys"} to ${valueOf(s.additionalProperties)}`;
    case undefined:
      return "any value";
    default:
      throw new Error(`wire-protocol: no way to show JSON Schema type ${String(s.type)}`);
  }
}

function valueOf(v: boolean | JsonSchema | undefined): string {
  if (v === undefined || v === true || (typeof v === "object" && Object.keys(v).length === 0)) return "any value";
  if (v === false) return "nothing";
  return plural(v);
}

function plural(s: JsonSchema): string {
  if (isObject(s)) return "objects";
  if (s.type === "array") return `arrays of ${s.items === undefined ? "anything" : plural(s.items)}`;
  const t = typeOf(s);
  if (t === "any value") return "values of any type";
  // "string (non-empty)" → "strings (non-empty)", "integer ≥ 0" → "integers ≥ 0"; "(integers or `null`)".
  const many = t.replace(/^(string|integer|number|boolean)\b/, "$1s");
  return alternatives(s) !== undefined ? `(${many})` : many;
}

/** Rows of every field of an object schema, nested objects (in arrays, maps or nullable) by their path. */
function fieldRows(s: JsonSchema, prefix: string, out: string[][]): void {
  const required = new Set(s.required ?? []);
  for (const [name, f] of Object.entries(s.properties ?? {})) {
    const path = `${prefix}${name}`;
    const notes = [f.description === undefined ? "" : prose(f.description), f.default !== undefined ? `default ${code(JSON.stringify(f.default))}` : ""].filter(Boolean);
    out.push([code(path), typeOf(f), required.has(name) ? "yes" : "", notes.join("; ")]);
    nested(f, path, out);
  }
}

function nested(f: JsonSchema, path: string, out: string[][]): void {
  if (isObject(f)) fieldRows(f, `${path}.`, out);
  else if (f.type === "array" && f.items !== undefined) nested(f.items, `${path}[]`, out);
  else if (isMap(f) && typeof f.additionalProperties === "object") nested(f.additionalProperties, `${path}.<key>`, out);
  else for (const a of alternatives(f) ?? []) if (!isNull(a)) nested(a, path, out);
}

const FIELD_HEADER = ["Field", "Type", "Required", "Description"];

/** A message's body: one field table, or one per alternative of a union. */
function body(s: JsonSchema): string[] {
  const alts = alternatives(s);
  if (alts === undefined) {
    if (!isObject(s)) return [`A value of type: ${typeOf(s)}.`];
    const rows: string[][] = [];
    fieldRows(s, "", rows);
    return [table(FIELD_HEADER, rows)];
  }
  const parts: string[] = [`One of ${alts.length}:`];
  alts.forEach((a, i) => {
    const tag = Object.entries(a.properties ?? {}).filter(([, p]) => p.const !== undefined).map(([k, p]) => `${code(k)} = ${code(JSON.stringify(p.const))}`);
    const label = `**${i + 1}.** ${tag.length > 0 ? tag.join(", ") : ""}${a.description !== undefined ? `${tag.length > 0 ? " — " : ""}${prose(a.description)}` : ""}`;
    if (isObject(a)) {
      const rows: string[][] = [];
      fieldRows(a, "", rows);
      parts.push(label, table(FIELD_HEADER, rows));
    } else {
      const nestedRows: string[][] = [];
      nested(a, "", nestedRows);
      parts.push(`${label} (${typeOf(a)})`);
      if (nestedRows.length > 0) parts.push(table(FIELD_HEADER, nestedRows));
    }
  });
  return parts;
}

function messageSection(name: string, s: JsonSchema, index: SubjectsFile): string {
  const subjects = index.subjects.filter((c) => c.schema === name).map((c) => code(c.subject));
  const replyTo = index.subjects.filter((c) => c.reply === name).map((c) => code(c.subject));
  const inbox = index.consumeInbox.headers === name || index.consumeInbox.errorBody === name ? [`messages to a consumer's inbox (${code(index.consumeInbox.subject)})`] : [];
  const where = [
    subjects.length > 0 ? `on ${subjects.join(", ")}` : "",
    replyTo.length > 0 ? `the reply to a request on ${replyTo.join(", ")}` : "",
    ...inbox,
  ].filter(Boolean);
  return [
    `### ${name}`,
    `**${s.title ?? name}** — ${prose(s.description ?? "")}`,
    [
      `Encoding: ${code(s["x-natslake-encoding"] ?? index.encodings[name] ?? "?")}.`,
      where.length > 0 ? ` Where: ${where.join("; ")}.` : "",
      ` Schema: [${name}.schema.json](${SCHEMA_DIR}/${name}.schema.json).`,
    ].join(""),
    ...body(s),
  ].join("\n\n");
}

export function wireProtocolPage(): string {
  const files = publishedSchemaFiles();
  const index = JSON.parse(files["subjects.json"]!) as SubjectsFile;
  const names = Object.keys(files).filter((f) => f.endsWith(".schema.json")).map((f) => f.slice(0, -".schema.json".length));
  const known = new Set(names);
  const link = (n: string): string => {
    if (!known.has(n)) throw new Error(`wire-protocol: subjects.json names a schema '${n}' that is not published`);
    return `[${n}](#${n})`;
  };
  const subjectRows = index.subjects.map((c) => [code(c.subject), c.carrier, link(c.schema), c.reply === undefined ? "" : link(c.reply), prose(c.from), (c.headers ?? []).map(code).join(", ")]);
  const inbox = index.consumeInbox;
  return page(
    banner("Wire protocol", ["the JSON Schemas in schemas/ (written by `npm run schemas` from actors/wire/schemas.ts)"]),
    prose(index.description),
    "Each message below links its JSON Schema (draft 2020-12) in [schemas/](../../schemas), which the package publishes as `natslake/schemas/<name>.schema.json`; [subjects.json](../../schemas/subjects.json) is the subject index this page's first table shows. Objects the cluster sends have no other keys than those listed; a reader should still ignore keys it does not know, as a later version may add optional fields. Carriers: `jetstream` (a stream, acknowledged), `core` (plain NATS publish or request), `kv` (a JetStream KV bucket's value; the subject is the bucket's).",
    "## Subjects",
    table(["Subject", "Carrier", "Message", "Reply", "From", "Headers"], subjectRows),
    `A consume session's messages go to ${code(inbox.subject)}: their headers are ${link(inbox.headers)}; a chunk's body is an ${prose(inbox.chunkBody)}, an error's body ${link(inbox.errorBody)}.`,
    "## Messages",
    ...names.map((n) => messageSection(n, JSON.parse(files[`${n}.schema.json`]!) as JsonSchema, index)),
  );
}
