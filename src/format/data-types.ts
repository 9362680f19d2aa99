/**
 * Paimon data types: the type grammar of schema files (`schema/schema-N`) and of the CLI's `--columns`.
 *
 * Atomic types serialise to Paimon's canonical SQL text (`"DECIMAL(10, 2) NOT NULL"`, `"STRING"`,
 * `"TIMESTAMP(3) WITH LOCAL TIME ZONE"`); ARRAY, MAP, MULTISET and ROW serialise to JSON objects exactly as Java
 * writes them (`{"type":"MAP","key":…,"value":…}`). Parsing accepts what Java and pypaimon write, including
 * pypaimon's extra `nullable` key and its `"MAP<…>"` type strings. No IO lives here.
 */
import { dataInvalid } from "../errors.ts";
import { describeValue, intField } from "./wire/fields.ts";

export const MAX_LENGTH = 2147483647;

export type AtomicRoot =
  | "BOOLEAN"
  | "TINYINT"
  | "SMALLINT"
  | "INT"
  | "BIGINT"
  | "FLOAT"
  | "DOUBLE"
  | "DATE"
  | "TIME"
  | "DECIMAL"
  | "CHAR"
  | "VARCHAR"
  | "BINARY"
  | "VARBINARY"
  | "TIMESTAMP"
  | "TIMESTAMP_LTZ";

export type DataType =
  | { root: "BOOLEAN" | "TINYINT" | "SMALLINT" | "INT" | "BIGINT" | "FLOAT" | "DOUBLE" | "DATE"; nullable: boolean }
  | { root: "TIME"; precision: number; nullable: boolean }
  | { root: "DECIMAL"; precision: number; scale: number; nullable: boolean }
  | { root: "CHAR" | "VARCHAR" | "BINARY" | "VARBINARY"; length: number; nullable: boolean }
  | { root: "TIMESTAMP" | "TIMESTAMP_LTZ"; precision: number; nullable: boolean }
  | { root: "ARRAY" | "MULTISET"; element: DataType; nullable: boolean }
  | { root: "MAP"; key: DataType; value: DataType; nullable: boolean }
  | { root: "ROW"; fields: DataField[]; nullable: boolean };

export interface DataField {
  id: number;
  name: string;
  type: DataType;
  description?: string;
}

export type RowType = { root: "ROW"; fields: DataField[]; nullable: boolean };

// ---------------------------------------------------------------------------------------------------------------
// Constructors (used by tests and by code that builds schemas programmatically)

export const T = {
  boolean: (nullable = true): DataType => ({ root: "BOOLEAN", nullable }),
  tinyint: (nullable = true): DataType => ({ root: "TINYINT", nullable }),
  smallint: (nullable = true): DataType => ({ root: "SMALLINT", nullable }),
  int: (nullable = true): DataType => ({ root: "INT", nullable }),
  bigint: (nullable = true): DataType => ({ root: "BIGINT", nullable }),
  float: (nullable = true): DataType => ({ root: "FLOAT", nullable }),
  double: (nullable = true): DataType => ({ root: "DOUBLE", nullable }),
  date: (nullable = true): DataType => ({ root: "DATE", nullable }),
  string: (nullable = true): DataType => ({ root: "VARCHAR", length: MAX_LENGTH, nullable }),
  bytes: (nullable = true): DataType => ({ root: "VARBINARY", length: MAX_LENGTH, nullable }),
  decimal: (precision: number, scale: number, nullable = true): DataType => ({ root: "DECIMAL", precision, scale, nullable }),
  timestamp: (precision = 6, nullable = true): DataType => ({ root: "TIMESTAMP", precision, nullable }),
  timestampLtz: (precision = 6, nullable = true): DataType => ({ root: "TIMESTAMP_LTZ", precision, nullable }),
  array: (element: DataType, nullable = true): DataType => ({ root: "ARRAY", element, nullable }),
  map: (key: DataType, value: DataType, nullable = true): DataType => ({ root: "MAP", key, value, nullable }),
};

export const withNullable = (t: DataType, nullable: boolean): DataType => ({ ...t, nullable }) as DataType;

export const isStringType = (t: DataType): boolean => t.root === "CHAR" || t.root === "VARCHAR";
export const isBinaryType = (t: DataType): boolean => t.root === "BINARY" || t.root === "VARBINARY";
export const isNestedType = (t: DataType): boolean =>
  t.root === "ARRAY" || t.root === "MAP" || t.root === "ROW" || t.root === "MULTISET";

// ---------------------------------------------------------------------------------------------------------------
// SQL text (schema files and CLI)

/** Paimon's canonical SQL text of a type, as Java's `asSQLString` writes it. */
export function typeToSql(t: DataType): string {
  const nn = t.nullable ? "" : " NOT NULL";
  switch (t.root) {
    case "BOOLEAN":
    case "TINYINT":
    case "SMALLINT":
    case "INT":
    case "BIGINT":
    case "FLOAT":
    case "DOUBLE":
    case "DATE":
      return t.root + nn;
    case "TIME":
      return `TIME(${t.precision})${nn}`;
    case "DECIMAL":
      return `DECIMAL(${t.precision}, ${t.scale})${nn}`;
    case "CHAR":
      return `CHAR(${t.length})${nn}`;
    case "VARCHAR":
      return (t.length === MAX_LENGTH ? "STRING" : `VARCHAR(${t.length})`) + nn;
    case "BINARY":
      return `BINARY(${t.length})${nn}`;
    case "VARBINARY":
      return (t.length === MAX_LENGTH ? "BYTES" : `VARBINARY(${t.length})`) + nn;
    case "TIMESTAMP":
      return `TIMESTAMP(${t.precision})${nn}`;
    case "TIMESTAMP_LTZ":
      return `TIMESTAMP(${t.precision}) WITH LOCAL TIME ZONE${nn}`;
    case "ARRAY":
    case "MULTISET":
      return `${t.root}<${typeToSql(t.element)}>${nn}`;
    case "MAP":
      return `MAP<${typeToSql(t.key)}, ${typeToSql(t.value)}>${nn}`;
    case "ROW":
      return `ROW<${t.fields.map((f) => `${quoteIdent(f.name)} ${typeToSql(f.type)}`).join(", ")}>${nn}`;
  }
}

const quoteIdent = (name: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : "`" + name.replace(/`/g, "``") + "`");

/** A tokenizer + recursive-descent parser for Paimon's type grammar. */
class TypeParser {
  private pos = 0;
  private readonly tokens: string[];
  constructor(private readonly text: string) {
    this.tokens = tokenize(text);
  }

  parseAll(): DataType {
    const t = this.parseType();
    if (this.pos < this.tokens.length) this.fail(`unexpected '${this.tokens[this.pos]}'`);
    return t;
  }

  /** For `--columns`: `name TYPE [NOT NULL], …` with nested types allowed. */
  parseFieldList(): Array<{ name: string; type: DataType; description?: string }> {
    const out: Array<{ name: string; type: DataType; description?: string }> = [];
    while (this.pos < this.tokens.length) {
      const name = this.ident();
      const type = this.parseType();
      let description: string | undefined;
      if (this.peekUpper() === "COMMENT") {
        this.pos++;
        description = this.stringLiteral();
      }
      out.push(description === undefined ? { name, type } : { name, type, description });
      if (this.peek() === ",") this.pos++;
      else if (this.pos < this.tokens.length) this.fail(`expected ',' but found '${this.peek()}'`);
    }
    return out;
  }

  private fail(msg: string): never {
    throw dataInvalid(`cannot parse type '${this.text}': ${msg}`);
  }
  private peek(): string | undefined {
    return this.tokens[this.pos];
  }
  private peekUpper(): string | undefined {
    return this.tokens[this.pos]?.toUpperCase();
  }
  private expect(tok: string): void {
    if (this.peek() !== tok) this.fail(`expected '${tok}' but found '${this.peek() ?? "end of text"}'`);
    this.pos++;
  }
  private ident(): string {
    const t = this.peek();
    if (t === undefined) this.fail("expected a name");
    this.pos++;
    if (t.startsWith("`")) return t.slice(1, -1).replace(/``/g, "`");
    if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(t)) this.fail(`'${t}' is not a valid column name`);
    return t;
  }
  private stringLiteral(): string {
    const t = this.peek();
    if (t === undefined || !t.startsWith("'")) this.fail("expected a string literal");
    this.pos++;
    return t.slice(1, -1).replace(/''/g, "'");
  }
  private int(): number {
    const t = this.peek();
    if (t === undefined || !/^\d+$/.test(t)) this.fail(`expected a number but found '${t ?? "end of text"}'`);
    this.pos++;
    return Number(t);
  }
  private optParams(): number[] | undefined {
    if (this.peek() !== "(") return undefined;
    this.pos++;
    const out = [this.int()];
    while (this.peek() === ",") {
      this.pos++;
      out.push(this.int());
    }
    this.expect(")");
    return out;
  }
  private nullability(): boolean {
    if (this.peekUpper() === "NOT" && this.tokens[this.pos + 1]?.toUpperCase() === "NULL") {
      this.pos += 2;
      return false;
    }
    if (this.peekUpper() === "NULL") this.pos++;
    return true;
  }

  parseType(): DataType {
    const word = this.peekUpper();
    if (word === undefined) this.fail("expected a type");
    this.pos++;
    let t: DataType;
    switch (word) {
      case "BOOLEAN":
      case "TINYINT":
      case "SMALLINT":
      case "BIGINT":
      case "FLOAT":
      case "DATE":
        t = { root: word, nullable: true };
        break;
      case "INT":
      case "INTEGER":
        t = { root: "INT", nullable: true };
        break;
      case "DOUBLE":
        if (this.peekUpper() === "PRECISION") this.pos++;
        t = { root: "DOUBLE", nullable: true };
        break;
      case "STRING":
        t = { root: "VARCHAR", length: MAX_LENGTH, nullable: true };
        break;
      case "BYTES":
        t = { root: "VARBINARY", length: MAX_LENGTH, nullable: true };
        break;
      case "CHAR":
      case "VARCHAR":
      case "BINARY":
      case "VARBINARY": {
        const p = this.optParams();
        const dflt = word === "VARCHAR" || word === "VARBINARY" ? MAX_LENGTH : 1;
        const length = p?.[0] ?? dflt;
        if (length < 1) this.fail(`${word} length must be at least 1`);
        t = { root: word, length, nullable: true };
        break;
      }
      case "DECIMAL":
      case "NUMERIC":
      case "DEC": {
        const p = this.optParams() ?? [];
        const precision = p[0] ?? 10;
        const scale = p[1] ?? 0;
        if (precision < 1 || precision > 38) this.fail(`DECIMAL precision must be between 1 and 38, got ${precision}`);
        if (scale < 0 || scale > precision) this.fail(`DECIMAL scale must be between 0 and the precision, got ${scale}`);
        t = { root: "DECIMAL", precision, scale, nullable: true };
        break;
      }
      case "TIME": {
        const precision = this.optParams()?.[0] ?? 0;
        if (precision > 9) this.fail("TIME precision must be between 0 and 9");
        if (this.peekUpper() === "WITHOUT") this.skipWords(["WITHOUT", "TIME", "ZONE"]);
        t = { root: "TIME", precision, nullable: true };
        break;
      }
      case "TIMESTAMP":
      case "TIMESTAMP_LTZ": {
        const precision = this.optParams()?.[0] ?? 6;
        if (precision > 9) this.fail("TIMESTAMP precision must be between 0 and 9");
        let ltz = word === "TIMESTAMP_LTZ";
        if (this.peekUpper() === "WITH") {
          this.skipWords(["WITH", "LOCAL", "TIME", "ZONE"]);
          ltz = true;
        } else if (this.peekUpper() === "WITHOUT") {
          this.skipWords(["WITHOUT", "TIME", "ZONE"]);
        }
        t = { root: ltz ? "TIMESTAMP_LTZ" : "TIMESTAMP", precision, nullable: true };
        break;
      }
      case "ARRAY":
      case "MULTISET": {
        this.expect("<");
        const element = this.parseType();
        this.expect(">");
        t = { root: word, element, nullable: true };
        break;
      }
      case "MAP": {
        this.expect("<");
        const key = this.parseType();
        this.expect(",");
        const value = this.parseType();
        this.expect(">");
        t = { root: "MAP", key, value, nullable: true };
        break;
      }
      case "ROW": {
        this.expect("<");
        const fields: DataField[] = [];
        while (this.peek() !== ">") {
          const name = this.ident();
          const type = this.parseType();
          const f: DataField = { id: -1, name, type };
          if (this.peekUpper() === "COMMENT") {
            this.pos++;
            f.description = this.stringLiteral();
          }
          fields.push(f);
          if (this.peek() === ",") this.pos++;
          else if (this.peek() !== ">") this.fail(`expected ',' or '>' in ROW but found '${this.peek() ?? "end of text"}'`);
        }
        this.expect(">");
        t = { root: "ROW", fields, nullable: true };
        break;
      }
      default:
        this.fail(`unknown type '${this.tokens[this.pos - 1]}'`);
    }
    return withNullable(t, this.nullability());
  }

  private skipWords(words: string[]): void {
    for (const w of words) {
      if (this.peekUpper() !== w) this.fail(`expected '${w}'`);
      this.pos++;
    }
  }
}

function tokenize(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if ("(),<>".includes(c)) {
      out.push(c);
      i++;
    } else if (c === "`" || c === "'") {
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw dataInvalid(`unterminated quote in '${text}'`);
        if (text[j] === c) {
          if (text[j + 1] === c) j += 2;
          else break;
        } else j++;
      }
      out.push(text.slice(i, j + 1));
      i = j + 1;
    } else {
      let j = i;
      while (j < text.length && !/[\s(),<>`']/.test(text[j]!)) j++;
      out.push(text.slice(i, j));
      i = j;
    }
  }
  return out;
}

/** Parses one type in SQL text, e.g. `DECIMAL(10, 2) NOT NULL` or `MAP<STRING, ARRAY<INT>>`. */
export function parseSqlType(text: string): DataType {
  return new TypeParser(text).parseAll();
}

/** Parses `--columns "id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>"` into named types. */
export function parseColumnList(text: string): Array<{ name: string; type: DataType; description?: string }> {
  return new TypeParser(text).parseFieldList();
}

// ---------------------------------------------------------------------------------------------------------------
// JSON form (schema files)

export type TypeJson = string | { type: string; [k: string]: unknown };

export function typeToJson(t: DataType): TypeJson {
  const nn = t.nullable ? "" : " NOT NULL";
  switch (t.root) {
    case "ARRAY":
    case "MULTISET":
      return { type: t.root + nn, element: typeToJson(t.element) };
    case "MAP":
      return { type: "MAP" + nn, key: typeToJson(t.key), value: typeToJson(t.value) };
    case "ROW":
      return { type: "ROW" + nn, fields: t.fields.map(fieldToJson) };
    default:
      return typeToSql(t);
  }
}

export interface FieldJson {
  id: number;
  name: string;
  type: TypeJson;
  description?: string;
}

export function fieldToJson(f: DataField): FieldJson {
  const out: FieldJson = { id: f.id, name: f.name, type: typeToJson(f.type) };
  if (f.description !== undefined) out.description = f.description;
  return out;
}

export function typeFromJson(json: unknown): DataType {
  if (typeof json === "string") return parseSqlType(json);
  if (json === null || typeof json !== "object") throw dataInvalid(`invalid type in schema: ${describeValue(json)}`);
  const o = json as Record<string, unknown>;
  const typeText = String(o["type"] ?? "");
  // pypaimon adds an explicit `nullable`; Java decides by the text (and pypaimon's MAP text is "MAP<K, V>").
  const nullable = typeof o["nullable"] === "boolean" ? o["nullable"] : !typeText.toUpperCase().includes("NOT NULL");
  const head = typeText.trim().toUpperCase().split(/[\s<]/)[0];
  switch (head) {
    case "ARRAY":
    case "MULTISET":
      return { root: head, element: typeFromJson(o["element"]), nullable };
    case "MAP":
      return { root: "MAP", key: typeFromJson(o["key"]), value: typeFromJson(o["value"]), nullable };
    case "ROW": {
      const fields = o["fields"];
      if (!Array.isArray(fields)) throw dataInvalid(`ROW type without fields (got ${describeValue(fields)})`);
      return { root: "ROW", fields: fields.map(fieldFromJson), nullable };
    }
    default:
      throw dataInvalid(`unsupported composite type '${typeText}'`);
  }
}

export function fieldFromJson(json: unknown): DataField {
  const o = json as Record<string, unknown>;
  // (The field is described, not quoted: JSON.stringify throws on a bigint and overflows the stack on deep nesting.)
  if (typeof o?.["name"] !== "string" || o["id"] === undefined) throw dataInvalid(`invalid field: ${describeValue(json)} without a name and an id`);
  const f: DataField = { id: intField(o["id"], `field '${o["name"]}' id`), name: o["name"], type: typeFromJson(o["type"]) };
  if (typeof o["description"] === "string") f.description = o["description"];
  return f;
}

/** Assigns field ids to a list of (possibly nested) fields, depth-first, starting at `next`; returns the highest id. */
export function assignFieldIds(fields: DataField[], next = 0): { fields: DataField[]; highestFieldId: number } {
  let id = next;
  const visitType = (t: DataType): DataType => {
    switch (t.root) {
      case "ROW":
        return { ...t, fields: t.fields.map(visitField) };
      case "ARRAY":
      case "MULTISET":
        return { ...t, element: visitType(t.element) };
      case "MAP":
        return { ...t, key: visitType(t.key), value: visitType(t.value) };
      default:
        return t;
    }
  };
  // Java assigns the top-level field its id first, then the nested ones from the same counter.
  const visitField = (f: DataField): DataField => {
    const own = id++;
    return { ...f, id: own, type: visitType(f.type) };
  };
  const out = fields.map(visitField);
  return { fields: out, highestFieldId: id - 1 };
}

export function highestFieldId(fields: DataField[]): number {
  let max = -1;
  const visitType = (t: DataType): void => {
    if (t.root === "ROW") t.fields.forEach(visitField);
    else if (t.root === "ARRAY" || t.root === "MULTISET") visitType(t.element);
    else if (t.root === "MAP") {
      visitType(t.key);
      visitType(t.value);
    }
  };
  const visitField = (f: DataField): void => {
    max = Math.max(max, f.id);
    visitType(f.type);
  };
  fields.forEach(visitField);
  return max;
}
