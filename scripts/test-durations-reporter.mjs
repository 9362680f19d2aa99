// A test reporter that records how long each test file's tests took (the sum of its top-level tests' durations, in
// seconds) into the JSON file TEST_DURATIONS_OUT names, merged with what that file held. scripts/run-tests.mjs starts
// the longest files first with it (test/durations.json): a long file started last would run on alone at the end.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));

export default async function* durations(source) {
  const out = process.env.TEST_DURATIONS_OUT;
  const seconds = new Map();
  for await (const ev of source) {
    if ((ev.type === "test:pass" || ev.type === "test:fail") && ev.data.nesting === 0 && ev.data.file) {
      const file = relative(REPO, ev.data.file);
      seconds.set(file, (seconds.get(file) ?? 0) + (ev.data.details?.duration_ms ?? 0) / 1000);
    }
  }
  if (!out || seconds.size === 0) return;
  const recorded = existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : {};
  for (const [file, s] of seconds) recorded[file] = Math.round(s * 10) / 10;
  const sorted = Object.fromEntries(Object.entries(recorded).sort(([a], [b]) => (a < b ? -1 : 1)));
  writeFileSync(out, `${JSON.stringify(sorted, null, 1)}\n`);
  yield `test durations of ${seconds.size} files recorded in ${relative(REPO, out)}\n`;
}
