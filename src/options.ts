/**
 * Every table option natslake knows, declared once: Paimon's names (so tables stay readable by Paimon's engines)
 * and natslake's own under the `natslake.` prefix. `validateCreateOptions` rejects a misspelled or unknown option
 * at create time with the nearest known name; `readOptions` is tolerant, because tables written by other engines
 * carry options natslake has never heard of.
 */
import { dataInvalid, ErrorKind, LakeError } from "./errors.ts";
import { parseStatsMode } from "./codec/stats-mode.ts";
import { compileFormatter } from "./maintenance/partition-time.ts";

type OptionKind = "int" | "long" | "double" | "string" | "bool" | "duration" | "memory" | "enum";

/** The sections of the reference page (docs/reference/table-options.md), in its order. */
export const OPTION_GROUPS = [
  "Buckets",
  "Data files",
  "Writing",
  "Commits",
  "Snapshot retention",
  "Partitions",
  "Compaction",
  "Primary-key tables",
  "Manifests",
  "Scans and consumers",
  "natslake",
] as const;
export type OptionGroup = (typeof OPTION_GROUPS)[number];

export interface OptionDef {
  key: string;
  kind: OptionKind;
  default?: string;
  values?: readonly string[];
  description: string;
  group: OptionGroup;
}

type Def = Omit<OptionDef, "group">;

const def = (key: string, kind: OptionKind, description: string, dflt?: string, values?: readonly string[]): Def => {
  const d: Def = { key, kind, description };
  if (dflt !== undefined) d.default = dflt;
  if (values !== undefined) d.values = values;
  return d;
};

const group = (name: OptionGroup, defs: readonly Def[]): OptionDef[] => defs.map((d) => ({ ...d, group: name }));

export const OPTIONS: readonly OptionDef[] = [
  ...group("Buckets", [
    def("bucket", "int", "Bucket count: N > 0 fixed buckets, -1 unaware (append) / dynamic (primary key), -2 postpone (natslake writes primary-key tables with fixed buckets only)", "-1"),
    def("bucket-key", "string", "Comma-separated bucket key columns (no spaces)"),
    def("bucket-function.type", "enum", "Bucket function: default (Paimon's hash of the bucket key), mod (a single INT or BIGINT key modulo the bucket count); natslake refuses hive", "default", ["default", "mod", "hive"]),
    def("dynamic-bucket.target-row-num", "long", "Rows per dynamic bucket", "2000000"),
  ]),
  ...group("Data files", [
    def("file.format", "enum", "Data file format (natslake writes and reads Parquet only; orc and avro tables are other engines')", "parquet", ["parquet", "orc", "avro"]),
    def("file.compression", "enum", "Data file compression", "zstd", ["zstd", "snappy", "gzip", "lz4", "none", "uncompressed"]),
    def("file.compression.zstd-level", "int", "ZSTD level for data files", "1"),
    def("target-file-size", "memory", "Target data file size (primary-key tables: 128 mb when unset)", "256 mb"),
    def("metadata.stats-mode", "string", "Value statistics: none, counts, full, truncate(N) (strings and binaries cut to N characters/bytes)", "truncate(16)"),
    def("data-file.prefix", "string", "Data file name prefix", "data-"),
    def("changelog-file.prefix", "string", "Changelog file name prefix", "changelog-"),
    def("data-file.thin-mode", "bool", "Omit _KEY_ columns in primary-key files (natslake does not write it)", "false"),
  ]),
  ...group("Writing", [
    def("write-buffer-size", "memory", "In-memory buffer before a flush", "256 mb"),
    def("write-buffer-spillable", "bool", "Spill the write buffer to disk"),
    def("write-only", "bool", "Skip writer-side compaction and expiration", "false"),
  ]),
  ...group("Commits", [
    def("commit.max-retries", "int", "Commit retries on a lost race", "10"),
    def("commit.min-retry-wait", "duration", "Minimum wait between commit retries", "10 ms"),
    def("commit.max-retry-wait", "duration", "Maximum wait between commit retries", "10 s"),
    def("commit.timeout", "duration", "Commit timeout"),
  ]),
  ...group("Snapshot retention", [
    def("snapshot.num-retained.min", "int", "Minimum snapshots retained", "10"),
    def("snapshot.num-retained.max", "int", "Maximum snapshots retained", "2147483647"),
    def("snapshot.time-retained", "duration", "Snapshots younger than this are retained", "1 h"),
    def("snapshot.expire.limit", "int", "Snapshots expired per run at most", "50"),
    // Paimon's decoupled changelog retention: accepted only when it retains no more than the snapshots (the coupled
    // default, see `changelogDecoupling`).
    def("changelog.num-retained.min", "int", "Minimum changelogs retained (no more than snapshot.num-retained.min: natslake expires changelog with its snapshot)"),
    def("changelog.num-retained.max", "int", "Maximum changelogs retained (no more than snapshot.num-retained.max)"),
    def("changelog.time-retained", "duration", "Changelogs younger than this are retained (no more than snapshot.time-retained)"),
  ]),
  ...group("Partitions", [
    def("partition.default-name", "string", "Directory name of null/empty partition values", "__DEFAULT_PARTITION__"),
    def("partition.legacy-name", "bool", "Render partition values from their internal form", "true"),
    def("partition.expiration-time", "duration", "Expire partitions older than this"),
    def("partition.expiration-check-interval", "duration", "Interval of partition expiration", "1 h"),
    def("partition.expiration-strategy", "enum", "How a partition's time is found: from its values, or its newest file", "values-time", ["values-time", "update-time"]),
    def("partition.expiration-max-num", "int", "Partitions expired per run at most", "100"),
    def("partition.expiration-batch-size", "int", "Expired partitions per drop commit (default: all in one)"),
    def("partition.timestamp-formatter", "string", "Java DateTimeFormatter pattern of partition times, e.g. yyyy-MM-dd, yyyyMMddHH"),
    def("partition.timestamp-pattern", "string", "Pattern building a partition time from partition values, e.g. $dt or $dt $hour:00:00"),
  ]),
  ...group("Compaction", [
    def("compaction.min.file-num", "int", "Small files that trigger append compaction", "5"),
    def("compaction.max.file-num", "int", "Files compacted together at most (Paimon ≤ 1.0's option; natslake's cap per compaction task)", "50"),
    def("compaction.small-file-ratio", "double", "Files below target-file-size × this ratio are small (compaction inputs)", "0.7"),
    def("num-sorted-run.compaction-trigger", "int", "Sorted runs (level-0 files plus non-empty higher levels) that trigger compaction of a primary-key bucket", "5"),
    def("num-sorted-run.stop-trigger", "int", "Sorted runs that stall writes (default: compaction-trigger + 3; at least compaction-trigger)"),
    def("num-levels", "int", "LSM levels of a primary-key bucket, 0 … num-levels − 1 (default: compaction-trigger + 1)"),
    def("compaction.max-size-amplification-percent", "int", "Size amplification that triggers full compaction", "200"),
    def("compaction.size-ratio", "int", "Size ratio of universal compaction", "1"),
    def("compaction.force-up-level-0", "bool", "Every compaction of a primary-key bucket takes all level-0 files", "false"),
    def("compaction.offpeak.start.hour", "int", "Start of off-peak hours, 0–23 inclusive (-1: off)", "-1"),
    def("compaction.offpeak.end.hour", "int", "End of off-peak hours, 0–23 exclusive (-1: off)", "-1"),
    def("compaction.offpeak-ratio", "int", "Extra size-ratio percentage during off-peak hours", "0"),
    def("compaction.optimization-interval", "duration", "Full compaction of a primary-key bucket when the last one is older than this"),
    def("compaction.total-size-threshold", "memory", "Full compaction of a primary-key bucket while its total size is below this"),
    def("compaction.incremental-size-threshold", "memory", "Full compaction of a primary-key bucket once its files below the max level exceed this"),
    def("compaction.force-rewrite-all-files", "bool", "Compaction rewrites every picked file (no upgrades)", "false"),
    def("force-lookup", "bool", "Lookup compaction (level 0 always compacted up) without a lookup changelog", "false"),
    def("lookup-compact", "enum", "Lookup compaction mode: radical (level 0 up at every compaction) or gentle (every lookup-compact.max-interval)", "radical", ["radical", "gentle"]),
    def("lookup-compact.max-interval", "int", "Gentle lookup compaction: force level 0 up every this many compaction triggers (default: 2 × compaction-trigger)"),
    def("full-compaction.delta-commits", "int", "Force full compaction every N commits"),
  ]),
  ...group("Primary-key tables", [
    def("merge-engine", "enum", "Merge engine of primary-key tables (natslake writes and reads all four)", "deduplicate", ["deduplicate", "partial-update", "aggregation", "first-row"]),
    def("changelog-producer", "enum", "Changelog producer: none, input (every change as written) or lookup (changes made by compacting level 0 against the levels above: +I, -U/+U, -D); natslake refuses full-compaction", "none", ["none", "input", "lookup", "full-compaction"]),
    def("changelog-producer.row-deduplicate", "bool", "lookup changelog: leave out an update whose values did not change (-U/+U of equal rows)", "false"),
    def("changelog-producer.row-deduplicate-ignore-fields", "string", "Fields row-deduplicate does not compare (comma-separated)"),
    def("sequence.field", "string", "User field(s) ordering the versions of one key (instead of their arrival)"),
    def("sequence.field.sort-order", "enum", "Order of the sequence field", "ascending", ["ascending", "descending"]),
    def("ignore-delete", "bool", "Ignore delete rows", "false"),
    def("rowkind.field", "string", "A string column whose value (+I, -U, +U or -D) is each written row's kind; stored as given"),
    def("deduplicate.ignore-delete", "bool", "Older name of ignore-delete (Paimon's fallback key; ignore-delete wins when both are set)"),
    def("partial-update.ignore-delete", "bool", "Older name of ignore-delete (Paimon's fallback key; ignore-delete wins when both are set)"),
    def("first-row.ignore-delete", "bool", "Older name of ignore-delete (Paimon's fallback key; ignore-delete wins when both are set)"),
    def("partial-update.remove-record-on-delete", "bool", "partial-update: a delete removes the row", "false"),
    def("partial-update.remove-record-on-sequence-group", "string", "partial-update: the sequence fields whose group's delete removes the row"),
    def("aggregation.remove-record-on-delete", "bool", "aggregation: a delete removes the row", "false"),
    def("fields.default-aggregate-function", "string", "Default aggregate function"),
    def("deletion-vectors.enabled", "bool", "Deletion vectors: natslake reads tables Java Paimon wrote with them (batch reads skip level 0 of primary-key tables, as Java's do) and refuses to create or write such tables", "false"),
    def("deletion-vectors.bitmap64", "bool", "Deletion vectors in the 64-bit (Iceberg-compatible) bitmap format (natslake reads both formats)", "false"),
    def("index-file-in-data-file-dir", "bool", "Index files (deletion vectors) beside the data files of their bucket instead of under index/", "false"),
    def("primary-key.nullable", "bool", "Allow nullable primary key columns", "false"),
  ]),
  ...group("Manifests", [
    def("manifest.compression", "string", "Manifest compression", "zstd"),
    def("manifest.format", "string", "Manifest file format", "avro"),
    def("manifest.target-file-size", "memory", "Target manifest size", "8 mb"),
    def("manifest.merge-min-count", "int", "Merge manifests when at least this many small ones exist", "30"),
    def("manifest.full-compaction-threshold-size", "memory", "Full manifest compaction threshold", "16 mb"),
  ]),
  ...group("Scans and consumers", [
    def("scan.mode", "enum", "Where a scan starts", "default", [
      "default", "latest-full", "full", "latest", "latest-delta", "compacted-full", "from-timestamp",
      "from-creation-timestamp", "from-file-creation-time", "from-snapshot", "from-snapshot-full", "incremental",
    ]),
    def("scan.snapshot-id", "long", "Snapshot id a scan starts at"),
    def("scan.timestamp-millis", "long", "Time a scan starts at"),
    def("scan.tag-name", "string", "Tag a scan reads"),
    def("scan.plan-sort-partition", "bool", "Sort planned partitions by value"),
    def("consumer-id", "string", "Consumer id that records read progress"),
    def("consumer.expiration-time", "duration", "Idle consumers expire after this"),
    def("consumer.ignore-progress", "bool", "A streaming read starts by scan.mode even when its consumer has progress", "false"),
    def("continuous.discovery-interval", "duration", "Streaming discovery interval", "10 s"),
    def("lookup.cache-max-memory-size", "memory", "Lookups over NATS: decoded data files of the table each reader node keeps in memory between lookups, least recently used dropped first", "256 mb"),
  ]),
  ...group("natslake", [
    def("natslake.commit-interval", "duration", "How often the cluster commits a snapshot (default: the node's commitInterval)", "250 ms"),
    def("natslake.stream.max-bytes", "memory", "Ingest stream size bound (discard new when full)", "1 gb"),
    def("natslake.stream.duplicate-window", "duration", "Ingest stream de-duplication window", "2 min"),
    def("natslake.stream.replicas", "int", "Ingest stream replicas (1 on a single server, 3 in a cluster)"),
    def(
      "natslake.ingest.max-message-rows",
      "int",
      "Rows one message on a bucket subject may hold; a message with more is dead-lettered whole before its rows are decoded (a few bytes per row on the wire can be many columns of nulls in memory)",
      "100000",
    ),
    def(
      "natslake.writer.max-attempts",
      "int",
      "Reads of a bucket that fail, or kill its writer, from one committed offset before the writer tries its messages one at a time; a message that fails alone min(2, this) times is dead-lettered whole",
      "3",
    ),
    def(
      "natslake.ingest.format",
      "enum",
      "What publishers send to the table's bare subject <prefix>.in.<db>.<table>: rows (JSON or msgpack rows; a primary-key table's may carry _row_kind) or debezium-json (one Debezium change event per message, with or without the schema wrapper; primary-key tables only)",
      "rows",
      ["rows", "debezium-json"],
    ),
    def(
      "natslake.compaction.copy-row-group-rows",
      "int",
      "Compaction copies row groups of at least this many rows byte for byte instead of decoding and encoding them again, and the smaller ones at an output's end until they add up to that many (0: never copies)",
      "32768",
    ),
    def(
      "natslake.orphan-older-than",
      "duration",
      "Orphan-file cleanup deletes only unreferenced files older than this; it must exceed the longest time from a data file's write to its commit",
      "1 d",
    ),
    def("natslake.orphan-check-interval", "duration", "How often the leader of a table served by the cluster looks for orphan files", "1 h"),
  ]),
];

/** Options of one field (`fields.<field>.…`): families of keys, not single keys. */
export interface OptionFamily {
  /** The key with `<field>` for the field's name. */
  key: string;
  group: OptionGroup;
  description: string;
}

export const OPTION_FAMILIES: readonly OptionFamily[] = [
  { key: "fields.<field>.aggregate-function", group: "Primary-key tables", description: "aggregation merge engine: the field's aggregate function" },
  { key: "fields.<field>.ignore-retract", group: "Primary-key tables", description: "aggregation merge engine: the field ignores retractions" },
  { key: "fields.<field>.sequence-group", group: "Primary-key tables", description: "partial-update merge engine: the fields this sequence field orders" },
  { key: "fields.<field>.nested-key", group: "Primary-key tables", description: "aggregation merge engine (nested_update): the keys of the field's nested rows" },
  { key: "fields.<field>.distinct", group: "Primary-key tables", description: "aggregation merge engine (listagg, collect): the field's elements are distinct" },
  { key: "fields.<field>.list-agg-delimiter", group: "Primary-key tables", description: "aggregation merge engine (listagg): the delimiter between the field's values (default ,)" },
  { key: "fields.<field>.default-value", group: "Primary-key tables", description: "the field's default value" },
  { key: "fields.<field>.stats-mode", group: "Data files", description: "the field's value statistics, as metadata.stats-mode takes them (overrides it for the field)" },
];

const BY_KEY = new Map(OPTIONS.map((o) => [o.key, o]));
const FAMILIES = OPTION_FAMILIES.map((f) => new RegExp(`^${f.key.replace(/\./g, "\\.").replace("<field>", "[^.]+")}$`));

/** Levenshtein distance, for "did you mean …". */
function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}

export function nearestOption(key: string): string | undefined {
  return nearestName(key, OPTIONS.map((o) => o.key));
}

/** The name among `names` nearest to `key` (for "did you mean …"), or undefined when none is near. */
export function nearestName(key: string, names: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const name of names) {
    const d = Math.min(distance(key, name), distance(key.toLowerCase(), name.toLowerCase()) + 0.5);
    if (d < bestD) {
      bestD = d;
      best = name;
    }
  }
  return bestD <= Math.max(3, Math.floor(key.length / 3)) ? best : undefined;
}

/** Parses `"250 ms"`, `"10s"`, `"1 h"`, `"2 min"`, `"1d"` or a bare number of milliseconds. */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|milli|millis|s|sec|secs|second|seconds|min|mins|minute|minutes|m|h|hour|hours|d|day|days)?\s*$/i.exec(text);
  if (!m) throw dataInvalid(`'${text}' is not a duration (examples: 250 ms, 10 s, 2 min, 1 h, 1 d)`);
  const n = Number(m[1]);
  const unit = (m[2] ?? "ms").toLowerCase();
  const factor = unit.startsWith("ms") || unit.startsWith("milli") ? 1 : unit.startsWith("s") ? 1000 : unit === "m" || unit.startsWith("min") ? 60_000 : unit.startsWith("h") ? 3_600_000 : 86_400_000;
  return Math.round(n * factor);
}

/** Parses `"256 mb"`, `"8mb"`, `"64 kb"`, `"1 gb"` or a bare number of bytes. */
export function parseMemory(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|bytes|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?\s*$/i.exec(text);
  if (!m) throw dataInvalid(`'${text}' is not a memory size (examples: 64 kb, 8 mb, 1 gb)`);
  const unit = (m[2] ?? "b").toLowerCase()[0]!;
  const factor = unit === "k" ? 1024 : unit === "m" ? 1024 ** 2 : unit === "g" ? 1024 ** 3 : unit === "t" ? 1024 ** 4 : 1;
  return Math.round(Number(m[1]) * factor);
}

function checkValue(o: OptionDef, value: string): void {
  const fail = (what: string): never => {
    throw dataInvalid(`option '${o.key}' = '${value}': ${what}`, { option: o.key });
  };
  switch (o.kind) {
    case "int":
    case "long":
      if (!/^-?\d+$/.test(value.trim())) fail("expected an integer");
      break;
    case "double":
      if (value.trim() === "" || !Number.isFinite(Number(value))) fail("expected a number");
      break;
    case "bool":
      if (!/^(true|false)$/i.test(value)) fail("expected true or false");
      break;
    case "duration":
      try {
        parseDuration(value);
      } catch {
        fail("not a duration (examples: 250 ms, 10 s, 2 min, 1 h, 1 d)");
      }
      break;
    case "memory":
      try {
        parseMemory(value);
      } catch {
        fail("not a memory size (examples: 64 kb, 8 mb, 1 gb)");
      }
      break;
    case "enum":
      if (!o.values!.includes(value)) fail(`expected one of ${o.values!.join(", ")}`);
      break;
    case "string":
      break;
  }
}

/**
 * Validates options at create time: every key must be known, every value well-formed.
 * Invalid combinations (which depend on the schema) are checked by `validateTableSchema` in format/schema.ts.
 */
export function validateCreateOptions(options: Record<string, string>): void {
  for (const [key, value] of Object.entries(options)) {
    if (key === "metadata.stats-mode" || /^fields\.[^.]+\.stats-mode$/.test(key)) {
      // A misspelled mode would otherwise fail every flush of the table, long after it was created.
      try {
        parseStatsMode(value);
      } catch {
        throw dataInvalid(`option '${key}' = '${value}': expected none, counts, full or truncate(N) with N > 0`, { option: key });
      }
    }
    // A formatter that cannot parse anything would only show up when partitions are expired, days later.
    if (key === "partition.timestamp-formatter") compileFormatter(value);
    if ((key === "partition.expiration-max-num" || key === "partition.expiration-batch-size" || key === "natslake.writer.max-attempts" || key === "natslake.ingest.max-message-rows") && /^-?\d+$/.test(value.trim()) && Number(value) < 1) {
      throw dataInvalid(`option '${key}' = '${value}': must be at least 1`, { option: key });
    }
    const o = BY_KEY.get(key);
    if (o === undefined) {
      if (FAMILIES.some((re) => re.test(key))) continue;
      const near = nearestOption(key);
      throw dataInvalid(`unknown table option '${key}'${near ? ` (did you mean '${near}'?)` : ""}`, { option: key });
    }
    checkValue(o, value);
  }
  const o = new TableOptions(options);
  const decoupled = changelogDecoupling(o, { retainMin: o.int("snapshot.num-retained.min"), retainMax: o.int("snapshot.num-retained.max"), timeRetainedMs: o.duration("snapshot.time-retained") });
  if (decoupled.length > 0) {
    throw new LakeError(ErrorKind.Unsupported, `changelog kept longer than snapshots (${decoupled.join("; ")}) is not supported by natslake: it expires a snapshot's changelog with the snapshot`);
  }
}

/** Snapshot retention as expiration applies it (the table's options, or a run's overrides). */
export interface SnapshotRetention {
  retainMin: number;
  retainMax: number;
  timeRetainedMs: number;
}

/**
 * Why changelog would outlive the snapshots under these retentions — Paimon's ExpireConfig.isChangelogDecoupled:
 * `changelog.num-retained.max` / `.min` or `changelog.time-retained` set above their snapshot counterparts — or an
 * empty list (coupled: changelog expires with its snapshot). Paimon then keeps expired snapshots as
 * `changelog/changelog-N` files with their changelog, which natslake does not write.
 */
export function changelogDecoupling(options: TableOptions, snapshots: SnapshotRetention): string[] {
  const set = (key: string): string | undefined => {
    const v = options.raw[key];
    return v === undefined || v.trim() === "" ? undefined : v.trim();
  };
  const reasons: string[] = [];
  const max = set("changelog.num-retained.max");
  const min = set("changelog.num-retained.min");
  const time = set("changelog.time-retained");
  if (max !== undefined && Number(max) > snapshots.retainMax) reasons.push(`changelog.num-retained.max = ${max} > snapshot.num-retained.max = ${snapshots.retainMax}`);
  if (min !== undefined && Number(min) > snapshots.retainMin) reasons.push(`changelog.num-retained.min = ${min} > snapshot.num-retained.min = ${snapshots.retainMin}`);
  if (time !== undefined && parseDuration(time) > snapshots.timeRetainedMs) reasons.push(`changelog.time-retained = ${time} > snapshot.time-retained (${snapshots.timeRetainedMs} ms)`);
  return reasons;
}

/** Typed, tolerant view of a table's options (unknown keys are kept and ignored). */
export class TableOptions {
  constructor(readonly raw: Readonly<Record<string, string>>) {}

  get(key: string): string | undefined {
    return this.raw[key] ?? BY_KEY.get(key)?.default;
  }
  int(key: string): number {
    const v = this.get(key);
    if (v === undefined) throw dataInvalid(`option '${key}' is not set`);
    return Number.parseInt(v, 10);
  }
  double(key: string): number {
    const v = this.get(key);
    if (v === undefined) throw dataInvalid(`option '${key}' is not set`);
    return Number(v);
  }
  bool(key: string): boolean {
    return (this.get(key) ?? "false").toLowerCase() === "true";
  }
  duration(key: string): number {
    return parseDuration(this.get(key) ?? "0");
  }
  memory(key: string): number {
    return parseMemory(this.get(key) ?? "0");
  }
  get bucket(): number {
    return this.int("bucket");
  }
  get bucketKey(): string[] {
    const v = this.raw["bucket-key"];
    return v === undefined || v === "" ? [] : v.split(",");
  }
  get fileFormat(): string {
    return this.get("file.format")!;
  }
  get fileCompression(): string {
    return this.get("file.compression")!;
  }
  get targetFileSize(): number {
    return this.memory("target-file-size");
  }
  get writeBufferSize(): number {
    return this.memory("write-buffer-size");
  }
  get partitionDefaultName(): string {
    return this.get("partition.default-name")!;
  }
  get partitionLegacyName(): boolean {
    return this.bool("partition.legacy-name");
  }
  get manifestMergeMinCount(): number {
    return this.int("manifest.merge-min-count");
  }
  get commitMaxRetries(): number {
    return this.int("commit.max-retries");
  }
}
