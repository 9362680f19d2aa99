/**
 * Typed, named access to the records of an Avro file Paimon wrote (manifests, manifest lists, index manifests):
 * fields by name from the file's writer schema, each getter checking presence and type.
 */
import { LakeError, ErrorKind } from "../../errors.ts";

/**
 * Typed, named access to one decoded Avro record. Each getter checks presence and type and names the field in its
 * error, so a foreign writer's surprise reads as "manifest entry 3: _FILE._ROW_COUNT must be a long", not a crash.
 * Integral getters accept both Avro int and long on the wire (a writer may widen `int` to `long`).
 */
export class Fields {
  private readonly rec: Record<string, unknown>;

  /** @param where the record, for messages ("manifest entry 3"); @param prefix the path of nested fields. */
  constructor(
    raw: unknown,
    readonly where: string,
    private readonly prefix = "",
  ) {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new LakeError(ErrorKind.DataInvalid, `${where}: ${prefix.slice(0, -1) || "value"} must be a record`);
    }
    this.rec = raw as Record<string, unknown>;
  }

  invalid(key: string, message: string): never {
    const field = this.prefix + key;
    throw new LakeError(ErrorKind.DataInvalid, `${this.where}: ${field} ${message}`, { context: { field } });
  }

  private required(key: string): unknown {
    const v = this.rec[key];
    if (v === undefined || v === null) this.invalid(key, "is missing");
    return v;
  }

  /** null when the field is absent from the writer schema or null; else the getter's value. */
  optional<T>(key: string, get: (key: string) => T): T | null {
    const v = this.rec[key];
    return v === undefined || v === null ? null : get(key);
  }

  record(key: string): Fields {
    return new Fields(this.required(key), this.where, `${this.prefix}${key}.`);
  }

  string(key: string): string {
    const v = this.required(key);
    if (typeof v !== "string") this.invalid(key, "must be a string");
    return v;
  }

  /** A copy, so the result does not pin the decompressed block's memory. */
  bytes(key: string): Uint8Array {
    const v = this.required(key);
    if (!(v instanceof Uint8Array)) this.invalid(key, "must be bytes");
    return new Uint8Array(v);
  }

  array(key: string): unknown[] {
    const v = this.required(key);
    if (!Array.isArray(v)) this.invalid(key, "must be an array");
    return v;
  }

  strings(key: string): string[] {
    const v = this.array(key);
    if (!v.every((s) => typeof s === "string")) this.invalid(key, "must be an array of strings");
    return v as string[];
  }

  bigint(key: string): bigint {
    return this.toBigint(this.required(key), key);
  }

  toBigint(v: unknown, key: string): bigint {
    if (typeof v === "bigint") return v;
    if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
    return this.invalid(key, "must be an integer");
  }

  /** A long the domain keeps as number (sizes, counts, ids): must fit a double exactly. */
  number(key: string): number {
    const v = this.bigint(key);
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      this.invalid(key, `value ${v} exceeds 2^53`);
    }
    return Number(v);
  }

  int(key: string): number {
    const v = this.bigint(key);
    if (v > 2147483647n || v < -2147483648n) this.invalid(key, `value ${v} is not a 32-bit int`);
    return Number(v);
  }
}
