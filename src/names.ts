/**
 * What a name may hold: databases, tables, columns, tags and consumer ids — every name natslake turns into a
 * directory, an object-store key, a file name, a NATS subject token, a stream name or a KV key. Two levels:
 *
 * - `checkName` (names already on disk, wherever a path is built from one): nothing that can leave the directory it
 *   is put in or confuse Paimon's layout — not empty, not `.` or `..`, no `/`, `\` or control characters; databases
 *   and tables also no `..` anywhere, no leading `.` (hidden) and no `$` (Paimon's system tables and branches:
 *   `t$snapshots`, `t$branch_b`); tags and consumer ids no leading `.`. These are the rules natslake has always
 *   applied, so tables, tags and consumers made before (or by Paimon's engines) keep being read.
 * - `checkNewName` (creating one): a small documented set, so that a name means the same everywhere it goes and
 *   cannot alias another —
 *   - database and table: 1–100 characters from `a-z`, `0-9`, `_` and `-`, not starting with `-`; the database not
 *     `sys` (Paimon's system database). No `.` (it separates database and table, and NATS subject tokens), no NATS
 *     wildcard (`*`, `>`) or whitespace, no `%` (a percent escape in a URL or key), ASCII only (a look-alike letter —
 *     Cyrillic `а`, fullwidth `ａ` — cannot name a different table; nothing to normalise), lowercase (Hive, Spark
 *     and Trino fold names to lowercase, and a case-insensitive filesystem takes `Orders` and `orders` for one
 *     directory). At most 100 characters: JetStream stores a stream in a directory named after it, and the cluster's
 *     stream names join the prefix, the database and the table.
 *   - tag and consumer id: 1–200 characters from `A-Z`, `a-z`, `0-9`, `.`, `_` and `-`, starting with a letter, a
 *     digit or `_`; a tag not digits only (Paimon's `scan.version` and Spark's `VERSION AS OF 3` would take it for
 *     snapshot 3). They only become file names (`tag/tag-<name>`, `consumer/consumer-<id>`), so case and `.` are kept.
 *   - column: Paimon allows any text and so does natslake, but not empty, no control or invisible formatting
 *     characters (zero-width space, bidirectional overrides), no leading or trailing whitespace, written in Unicode
 *     NFC, and no two columns of a table that differ only in case or by compatibility characters (NFKC: `ｉｄ` and
 *     `id`): engines that resolve columns without case (Spark, Hive, Trino) could not tell them apart.
 *
 * Java Paimon checks almost none of this (its filesystem catalog creates a table named `..` one level up, or `db.*`
 * and `t x` as directories); where it is stricter — the `sys` database, `$` in table names, `_KEY_` and its system
 * column names (format/schema.ts) — natslake is at least as strict. Partition values are not names: they are escaped
 * into paths as Java does (format/partition.ts).
 */
import { dataInvalid } from "./errors.ts";

export type NameKind = "database" | "table" | "column" | "tag" | "consumer id";

/** Reserved by Paimon: its system database (`sys.all_table_options`, …). */
const SYSTEM_DATABASE = "sys";

interface NewNameRule {
  pattern: RegExp;
  max: number;
  /** The rule in words, for messages and docs. */
  text: string;
}

const DB_TABLE_RULE: NewNameRule = {
  pattern: /^[a-z0-9_][a-z0-9_-]*$/,
  max: 100,
  text: "1-100 characters from a-z, 0-9, '_' and '-', not starting with '-'",
};
const FILE_NAME_RULE: NewNameRule = {
  pattern: /^[A-Za-z0-9_][A-Za-z0-9._-]*$/,
  max: 200,
  text: "1-200 characters from A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter, a digit or '_'",
};

/** The rule a new name of `kind` follows, in words (columns: see the module comment). */
export const NEW_NAME_RULES: Readonly<Record<Exclude<NameKind, "column">, string>> = {
  database: DB_TABLE_RULE.text + ", not 'sys'",
  table: DB_TABLE_RULE.text,
  tag: FILE_NAME_RULE.text + ", not digits only",
  "consumer id": FILE_NAME_RULE.text,
};

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;
/** Invisible formatting characters (zero-width space and joiners, bidirectional controls, BOM, …). */
const FORMAT = /\p{Cf}/u;

/** A name as an error message shows it: control and invisible characters as `\uXXXX`. */
export function showName(name: string): string {
  return [...name].map((ch) => (CONTROL.test(ch) || FORMAT.test(ch) ? `\\u${codePoint(ch)}` : ch)).join("");
}

const codePoint = (ch: string): string => ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");

function invalid(kind: NameKind, name: string, why: string): never {
  throw dataInvalid(`invalid ${kind === "consumer id" ? kind : `${kind} name`} '${showName(name)}': ${why}`, { name, kind });
}

/** Why `name` cannot be used even for reading (see the module comment), or null. */
export function existingNameProblem(kind: NameKind, name: string): string | null {
  if (name.trim().length === 0) return "it is empty";
  if (kind === "column") return null;
  if (name === "." || name === "..") return "'.' and '..' are not names";
  if (/[/\\]/.test(name)) return "path separators are not allowed";
  if (CONTROL.test(name)) return "control characters are not allowed";
  if (name.startsWith(".")) return "it must not start with '.'";
  if (kind === "database" || kind === "table") {
    if (name.includes("..")) return "'..' is not allowed";
    if (name.includes("$")) return "'$' is reserved for system tables";
  }
  return null;
}

/** Why `name` cannot be given to something new of `kind`, or null. */
export function newNameProblem(kind: NameKind, name: string): string | null {
  const old = existingNameProblem(kind, name);
  if (old !== null) return old;
  if (kind === "column") return columnProblem(name);
  const rule = kind === "database" || kind === "table" ? DB_TABLE_RULE : FILE_NAME_RULE;
  const chars = [...name];
  const at = chars.findIndex((ch, i) => !rule.pattern.test(i === 0 ? ch : `_${ch}`));
  if (at >= 0) {
    const ch = chars[at]!;
    return `${characterProblem(kind, ch, at === 0 && rule.pattern.test(`_${ch}`))}; new ${kind} names are ${NEW_NAME_RULES[kind]}`;
  }
  if (name.length > rule.max) return `it is ${name.length} characters long; new ${kind} names are ${NEW_NAME_RULES[kind]}`;
  if (kind === "database" && name === SYSTEM_DATABASE) return "'sys' is Paimon's system database";
  if (kind === "tag" && /^\d+$/.test(name)) return "a name of digits only would read as a snapshot id (Paimon's scan.version, Spark's VERSION AS OF)";
  return null;
}

/** Why one character is refused; `onlyFirst`: it is allowed, but not as the first character. */
function characterProblem(kind: NameKind, ch: string, onlyFirst: boolean): string {
  if (onlyFirst) return `it must not start with '${ch}'${ch === "-" ? " (a command line would read it as an option)" : ""}`;
  if (ch === ".") return "'.' separates the database from the table (and the tokens of a NATS subject)";
  if (ch === "*" || ch === ">") return `'${ch}' is a NATS subject wildcard`;
  if (/\s/u.test(ch)) return "whitespace is not allowed";
  if (ch === "%") return "'%' is not allowed (it would read as a percent escape, '%2e' as '.', in a URL or an object-store key)";
  if (ch === "$") return "'$' is reserved for system tables";
  if (FORMAT.test(ch)) return `invisible character U+${codePoint(ch)} is not allowed`;
  if (/[A-Z]/.test(ch))
    return `uppercase '${ch}' is not allowed (Hive, Spark and Trino fold names to lowercase, and a case-insensitive filesystem takes 'Orders' and 'orders' for one directory)`;
  if (ch.codePointAt(0)! > 0x7f) return `'${ch}' (U+${codePoint(ch)}) is not ASCII (a look-alike letter could name a different ${kind})`;
  return `'${ch}' is not allowed`;
}

function columnProblem(name: string): string | null {
  if (CONTROL.test(name)) return "control characters are not allowed";
  const format = [...name].find((ch) => FORMAT.test(ch));
  if (format !== undefined) return `invisible character U+${codePoint(format)} is not allowed`;
  if (name !== name.trim()) return "leading or trailing whitespace is not allowed";
  if (name.normalize("NFC") !== name) return "it is not in Unicode normal form NFC (its accents are separate characters); write it composed";
  return null;
}

/** Refuses a name that cannot be used at all (see the module comment); call it before building a path from one. */
export function checkName(kind: NameKind, name: string): void {
  const why = existingNameProblem(kind, name);
  if (why !== null) invalid(kind, name, why);
}

/** Refuses a name that something new of `kind` cannot take (see the module comment). */
export function checkNewName(kind: NameKind, name: string): void {
  const why = newNameProblem(kind, name);
  if (why !== null) invalid(kind, name, why);
}

/** The form two column names share when engines that ignore case and compatibility characters take them for one. */
const columnKey = (name: string): string => name.normalize("NFKC").toLowerCase();

/**
 * Checks new columns: each name (`checkNewName`), and that none is another column of the table (`existing`, or one
 * before it in `added`) up to case and compatibility characters. An exact repeat is left to the schema's own check.
 */
export function checkNewColumns(added: readonly string[], existing: readonly string[] = []): void {
  const seen = new Map<string, string>(existing.map((n) => [columnKey(n), n]));
  for (const name of added) {
    checkNewName("column", name);
    const other = seen.get(columnKey(name));
    if (other !== undefined && other !== name)
      invalid("column", name, `it differs from column '${showName(other)}' only in case or by look-alike characters (Spark, Hive and Trino would take them for one column)`);
    seen.set(columnKey(name), name);
  }
}

/**
 * The other tables whose `<db>_<table>` reads the same as this one's (`a_b.c` for `a.b_c`): the cluster names a
 * table's streams `<P>_IN_<db>_<table>` and `<P>_COMMIT_<db>_<table>`, so two such tables would share streams (and
 * one's purges delete the other's messages). Creating a table refuses it when one of these exists.
 */
export function joinedNameTwins(id: { database: string; table: string }): Array<{ database: string; table: string }> {
  const joined = `${id.database}_${id.table}`;
  const out: Array<{ database: string; table: string }> = [];
  for (let i = joined.indexOf("_"); i >= 0; i = joined.indexOf("_", i + 1)) {
    const database = joined.slice(0, i);
    const table = joined.slice(i + 1);
    if (database !== id.database && database.length > 0 && table.length > 0) out.push({ database, table });
  }
  return out;
}
