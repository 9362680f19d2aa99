/**
 * Input records of a JSONL or CSV file with the line they came from, for `natslake write` and `natslake publish`: a
 * malformed line is `<file>:<line>: not valid JSON (…)`, a line that is not an object `<file>:<line>: each line must
 * be a JSON object`.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { parse as parseCsv } from "csv-parse";
import { UsageError } from "./common.ts";

export interface InputRecord {
  record: Record<string, unknown>;
  /** 1-based line of the file (for CSV: the line the record starts on). */
  line: number;
}

/** Yields the file's records one by one; `onBytes` is called with each chunk's size (a progress bar). */
export async function* readRecords(file: string, format: "jsonl" | "csv", onBytes: (n: number) => void = () => undefined): AsyncGenerator<InputRecord> {
  const stream = createReadStream(file);
  stream.on("data", (chunk) => onBytes(chunk.length));
  try {
    if (format === "jsonl") {
      let line = 0;
      for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
        line++;
        if (text.trim() === "") continue;
        let rec: unknown;
        try {
          rec = JSON.parse(text);
        } catch (e) {
          throw new UsageError(`${file}:${line}: not valid JSON (${(e as Error).message})`);
        }
        if (rec === null || typeof rec !== "object" || Array.isArray(rec)) throw new UsageError(`${file}:${line}: each line must be a JSON object`);
        yield { record: rec as Record<string, unknown>, line };
      }
    } else {
      // CSV: a header row names the columns; empty fields are nulls.
      const parser = stream.pipe(parseCsv({ columns: true, skip_empty_lines: true, info: true, cast: (v) => (v === "" ? null : v) }));
      for await (const r of parser as AsyncIterable<{ record: Record<string, unknown>; info: { lines: number } }>) yield { record: r.record, line: r.info.lines };
    }
  } finally {
    stream.destroy();
  }
}

/** `.csv` is CSV; `.jsonl`, `.json`, `.ndjson` and anything else is JSON lines (what `publish` always assumed). */
export function publishFormat(file: string): "jsonl" | "csv" {
  return file.endsWith(".csv") ? "csv" : "jsonl";
}
