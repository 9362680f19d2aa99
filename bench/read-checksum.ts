/**
 * A checksum of a table's rows that natslake's benchmarks compute from Arrow batches and Java's oracle computes from
 * its own read (test/compat/java/PaimonPk.java `bench-read`, `checksumValue`): per column its nulls and the wrapping
 * 64-bit sum of one value per non-null row — BIGINT and INT as they are, TIMESTAMP its epoch milliseconds, DOUBLE its
 * IEEE-754 bits, STRING Java's String.hashCode() of it. Order does not matter, so two reads that merged the same rows
 * agree whatever order their buckets and splits came in; a lost, doubled or differently merged row changes it.
 */
import type * as arrow from "apache-arrow";
import type { DataField } from "../src/format/data-types.ts";
import type { ReadChecksum } from "../test/helpers/java-pk.ts";

const doubleView = new Float64Array(1);
const doubleBits = new BigInt64Array(doubleView.buffer);

/** Java's String.hashCode(): over UTF-16 code units, 32-bit wrapping. */
export function javaStringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** One non-null value's contribution, as PaimonPk's `checksumValue` computes it. */
function valueOf(field: DataField, v: unknown): bigint {
  switch (field.type.root) {
    case "BIGINT":
    case "INT":
      return BigInt(v as number | bigint);
    case "TIMESTAMP":
      return BigInt(v as number | bigint);
    case "DOUBLE":
      doubleView[0] = v as number;
      return doubleBits[0]!;
    case "VARCHAR":
    case "CHAR":
      return BigInt(javaStringHash(v as string));
    default:
      throw new Error(`the read checksum has no rule for column ${field.name} of type ${field.type.root}`);
  }
}

/** Accumulates the checksum of `fields` over batches (columns found by name). */
export class ReadChecksummer {
  private readonly sums: bigint[];
  private readonly nulls: number[];
  rows = 0;

  constructor(private readonly fields: readonly DataField[]) {
    this.sums = fields.map(() => 0n);
    this.nulls = fields.map(() => 0);
  }

  add(batch: arrow.RecordBatch): void {
    this.rows += batch.numRows;
    this.fields.forEach((field, f) => {
      const column = batch.getChild(field.name);
      if (column === null) throw new Error(`the read gave no column ${field.name}`);
      let sum = 0n;
      for (let i = 0; i < batch.numRows; i++) {
        const v: unknown = column.get(i);
        if (v === null || v === undefined) this.nulls[f]!++;
        else sum += valueOf(field, v);
      }
      this.sums[f] = BigInt.asIntN(64, this.sums[f]! + sum);
    });
  }

  get checksum(): ReadChecksum {
    return Object.fromEntries(this.fields.map((field, f) => [field.name, { nulls: this.nulls[f]!, sum: this.sums[f]!.toString() }]));
  }
}

/** The columns whose checksums differ (empty: equal), each as "name: a ≠ b". */
export function checksumDifferences(a: ReadChecksum, b: ReadChecksum): string[] {
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return names.filter((n) => a[n]?.nulls !== b[n]?.nulls || a[n]?.sum !== b[n]?.sum).map((n) => `${n}: ${JSON.stringify(a[n] ?? null)} ≠ ${JSON.stringify(b[n] ?? null)}`);
}
