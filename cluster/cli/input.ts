/**
 * Input records of a JSONL or CSV file with the line they came from, for `natslake write` and `natslake publish`,
 * so both name a bad row `<file>:<line>:` — the 1-based physical line (blank lines count as lines; a CSV record
 * spanning lines is named by the line it starts on). A malformed line is `<file>:<line>: not valid JSON (…)`, a line
 * that is not an object `<file>:<line>: each line must be a JSON object`.
 *
 * JSON is parsed without rounding (`parseRowJson`, as the raw subject parses it): a BIGINT beyond 2^53 keeps the
 * file's digits.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { CsvError, parse as parseCsv } from "csv-parse";
import { parseRowJson } from "../../src/format/wire/json.ts";
import { UsageError } from "./common.ts";

export interface InputRecord {
  record: Record<string, unknown>;
  /** 1-based physical line of the file (for CSV: the line the record starts on). */
  line: number;
}

/** Yields the file's records one by one; `onBytes` is called with each chunk's size (a progress bar). */
export async function* readRecords(file: string, format: "jsonl" | "csv", onBytes: (n: number) => void = () => undefined): AsyncGenerator<InputRecord> {
  const stream = createReadStream(file);
  stream.on("data", (chunk) => onBytes(chunk.length));
  try {
    if (format === "jsonl") yield* jsonlRecords(file, stream);
    else yield* csvRecords(file, stream);
  } finally {
    stream.destroy();
  }
}

/** `.csv` is CSV; `.jsonl`, `.json`, `.ndjson` and anything else is JSON lines (what `publish` always assumed). */
export function publishFormat(file: string): "jsonl" | "csv" {
  return file.endsWith(".csv") ? "csv" : "jsonl";
}

async function* jsonlRecords(file: string, stream: NodeJS.ReadableStream): AsyncGenerator<InputRecord> {
  let line = 0;
  for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
    line++;
    if (text.trim() === "") continue;
    let rec: unknown;
    try {
      rec = parseRowJson(text);
    } catch (e) {
      throw new UsageError(`${file}:${line}: not valid JSON (${(e as Error).message})`);
    }
    if (rec === null || typeof rec !== "object" || Array.isArray(rec)) throw new UsageError(`${file}:${line}: each line must be a JSON object`);
    yield { record: rec as Record<string, unknown>, line };
  }
}

/** What csv-parse reports with each record: `bytes` is where the record (and its line break) ends in the input. */
interface CsvInfo {
  bytes: number;
}

/**
 * CSV: a header row names the columns; empty fields are nulls. Lines are counted here from the bytes, not taken from
 * csv-parse's `info.lines`, which gives the line a record ends on and counts a blank CRLF line twice.
 */
async function* csvRecords(file: string, stream: NodeJS.ReadableStream): AsyncGenerator<InputRecord> {
  const lines = new LineCounter();
  // Registered before the parser is piped in, so every chunk is counted before a record parsed from it is taken.
  stream.on("data", (chunk: Buffer) => lines.feed(chunk));
  // The header is parsed as a record too (not `columns: true`), so that where it ends is known.
  const parser = stream.pipe(parseCsv({ skip_empty_lines: true, relax_column_count: true, info: true, cast: (v) => (v === "" ? null : v) }));
  let header: string[] | undefined;
  let end = 0;
  try {
    for await (const r of parser as AsyncIterable<{ record: Array<string | null>; info: CsvInfo }>) {
      const line = lines.recordStart(end, r.info.bytes);
      end = r.info.bytes;
      if (header === undefined) {
        header = r.record.map((name) => name ?? "");
        continue;
      }
      if (r.record.length !== header.length) throw new UsageError(`${file}:${line}: the record has ${r.record.length} fields, the header names ${header.length} columns`);
      const record: Record<string, unknown> = {};
      for (let k = 0; k < header.length; k++) record[header[k]!] = r.record[k];
      yield { record, line };
    }
  } catch (e) {
    if (!(e instanceof CsvError)) throw e;
    // A malformed record (an unclosed quote, …): named by the line it starts on, after the last record read whole
    // (csv-parse's own "at line N" is dropped: it counts lines differently).
    throw new UsageError(`${file}:${lines.recordStart(end, Infinity)}: ${e.message.replace(/ (?:at|on) line \d+/, "")}`);
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Physical line numbers of byte offsets in a stream read front to back: fed every chunk as it is read, asked about
 * ranges in increasing order; holds only the chunks not passed yet.
 */
class LineCounter {
  private readonly chunks: Buffer[] = [];
  /** The offset of chunks[0][0]. */
  private chunkStart = 0;
  /** The position counted up to, and the line it is on. */
  private pos = 0;
  private line = 1;

  feed(chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  /**
   * The line of the record in bytes [from, to): the line of its first byte that is not a line break (blank lines
   * before it were skipped by the parser). Counts on to `to`, where the next record begins.
   */
  recordStart(from: number, to: number): number {
    this.countTo(from);
    while (this.pos < to && this.currentByte() !== undefined && (this.currentByte() === LF || this.currentByte() === CR)) {
      if (this.currentByte() === LF) this.line++;
      this.pos++;
    }
    const start = this.line;
    this.countTo(to);
    return start;
  }

  /** The byte at `pos`, dropping the chunks before it; undefined when it was not read yet. */
  private currentByte(): number | undefined {
    while (this.chunks.length > 0 && this.pos - this.chunkStart >= this.chunks[0]!.length) this.chunkStart += this.chunks.shift()!.length;
    return this.chunks[0]?.[this.pos - this.chunkStart];
  }

  /** Counts the line feeds up to `to` (or to the end of what was read). */
  private countTo(to: number): void {
    while (this.pos < to && this.currentByte() !== undefined) {
      const chunk = this.chunks[0]!;
      const at = this.pos - this.chunkStart;
      const stop = Math.min(chunk.length, at + (to - this.pos));
      for (let i = chunk.indexOf(LF, at); i !== -1 && i < stop; i = chunk.indexOf(LF, i + 1)) this.line++;
      this.pos += stop - at;
    }
  }
}
