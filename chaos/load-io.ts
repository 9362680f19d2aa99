/**
 * What the load generators (chaos/load-child.ts, chaos/pk-load-child.ts) read and write: their spec, a JSON file
 * named by their only argument, and their history file — JSON lines (chaos/types.ts `LoadLine`), buffered and written
 * every 200 ms and at `close()`, so a load of thousands of outcomes a second does not write once per outcome.
 */
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import type { LoadLine } from "./types.ts";

export interface HistoryFile {
  line(l: LoadLine): void;
  /** Writes what is buffered and closes the file. */
  close(): void;
}

export function openHistory(path: string): HistoryFile {
  const fd = openSync(path, "a");
  let buffered: string[] = [];
  const flush = (): void => {
    if (buffered.length === 0) return;
    writeSync(fd, buffered.join(""));
    buffered = [];
  };
  const timer = setInterval(flush, 200);
  return {
    line(l) {
      buffered.push(JSON.stringify(l) + "\n");
    },
    close() {
      clearInterval(timer);
      flush();
      closeSync(fd);
    },
  };
}

/** How a load stopped: it reached its count, its duration, or a SIGTERM came first. */
export function stoppedBy(published: number, max: number, startedAt: number, durationMs: number): "count" | "duration" | "signal" {
  return published >= max ? "count" : Date.now() - startedAt >= durationMs ? "duration" : "signal";
}

/** The spec file named by the process's only argument (`<script> <spec.json>`); exits 2 with the usage without one. */
export function readSpecArg<T>(script: string): T {
  const path = process.argv[2];
  if (!path) {
    process.stderr.write(`usage: ${script} <spec.json>\n`);
    process.exit(2);
  }
  return JSON.parse(readFileSync(path, "utf8")) as T;
}
