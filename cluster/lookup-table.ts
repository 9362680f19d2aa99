/**
 * What a reader node keeps to answer lookups of one primary-key table (cluster/lookup-service.ts): the newest
 * snapshot it knows of — from the table's snapshot notifications, and from the warehouse while a request waits for
 * a newer one (a notification core NATS dropped) — a few `KeyLookup`s of recent snapshots (planned once each, the
 * newest as soon as it is notified), and one bounded cache of decoded data files that they all share, so a file that
 * a new snapshot still holds stays decoded: a hot table is answered from memory.
 *
 * A notified snapshot becomes the one lookups answer from once the files it adds are decoded (at most WARM_MAX_MS):
 * until then lookups answer from the one before, with its id in the reply, and a request that needs the new one
 * (read-your-writes, a minimum snapshot) waits for the decodes. Without that, the first lookups into each bucket
 * after every commit waited for a decode — four commits a second made those the slowest 1% of single-key lookups.
 *
 * Knows no NATS: the service hands it the notifications.
 */
import { ErrorKind, LakeError } from "../src/errors.ts";
import type { Row } from "../src/format/values.ts";
import { KeyLookup, LruDecodedFileCache, type DecodedFile, type DecodedFileCache, type LookupKey } from "../src/scan/lookup.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { natslakeStateAsOf } from "../src/commit/stream-commit.ts";
import type { LookupErrorCode } from "../actors/wire/lookup.ts";

/** A lookup refused for a reason the reply names (`code`). */
export class LookupRefusal extends LakeError {
  constructor(
    readonly code: LookupErrorCode,
    kind: ErrorKind,
    message: string,
    readonly details: { earliest?: number; field?: string } = {},
  ) {
    super(kind, message);
  }
}

/** The snapshot a lookup wants (actors/wire/lookup.ts says what each means). */
export interface SnapshotWanted {
  snapshot?: number;
  minSnapshot?: number;
  /** Committed stream offsets (bucket → sequence) the answering snapshot must reach. */
  visibleAfter?: Readonly<Record<string, number>>;
  /** How long to wait for it. */
  waitMs: number;
}

export interface LookupAnswer {
  /** The snapshot that answered (null: the table has none). */
  snapshotId: number | null;
  lookup: KeyLookup;
  rows: Array<Row | null>;
}

/** KeyLookups kept per table: the newest snapshot's (by columns asked for) and a few older ones asked for by id. */
const KEPT_LOOKUPS = 16;
/** While a request waits for a snapshot, the warehouse is looked at this often (a notification may have been lost). */
const WAIT_POLL_MS = 250;
/**
 * How long a notified snapshot's new files may decode before it answers lookups anyway (a slow store, a large
 * compacted file): the bound on what warming adds to a read-your-writes lookup.
 */
const WARM_MAX_MS = 1000;

/** The decoded-file cache of a table with hit and miss counts (what the lookup metrics report). */
export class CountingFileCache implements DecodedFileCache {
  hits = 0;
  misses = 0;
  private readonly lru: LruDecodedFileCache;

  constructor(maxBytes: number) {
    this.lru = new LruDecodedFileCache(maxBytes);
  }

  get bytes(): number {
    return this.lru.bytes;
  }

  get(key: string): DecodedFile | undefined {
    const f = this.lru.get(key);
    if (f === undefined) this.misses++;
    else this.hits++;
    return f;
  }

  set(key: string, file: DecodedFile): void {
    this.lru.set(key, file);
  }
}

interface Newest {
  id: number;
  /** Committed offset per bucket (null: not known — a snapshot without natslake's state). */
  offsets: Readonly<Record<string, number>> | null;
}

export class TableLookups {
  readonly cache: CountingFileCache;
  private readonly store: ManifestStore;
  private newest: Newest | null = null;
  /** A notified snapshot whose new files are decoding; `ready` settles when it is the newest (`promote`). */
  private warming: { newest: Newest; ready: Promise<void> } | null = null;
  /** The data files of the newest snapshot's lookups (null: not planned yet): what a newer one adds is warmed. */
  private newestFiles: Set<string> | null = null;
  /** KeyLookups by `<snapshot>|<columns>`, least recently used first. */
  private readonly lookups = new Map<string, Promise<KeyLookup>>();
  /** The key `lookups` last used (its most recent entry). */
  private lastKey: string | undefined;
  /** Requests waiting for a newer snapshot: woken by every newer one. */
  private readonly waiting = new Set<() => void>();
  private polling: NodeJS.Timeout | undefined;

  constructor(readonly table: Table) {
    this.store = new ManifestStore(table);
    this.cache = new CountingFileCache(table.options.memory("lookup.cache-max-memory-size"));
  }

  /** The newest snapshot id known (null: none yet). */
  get newestId(): number | null {
    return this.newest?.id ?? null;
  }

  /** Reads the table's latest snapshot from the warehouse (at start, and while a request waits). */
  async refresh(): Promise<void> {
    const latest = await this.table.snapshots.latest();
    if (latest === null || (this.newest !== null && latest.id <= this.newest.id)) return;
    const st = await natslakeStateAsOf(this.table, latest);
    const offsets = st === null ? null : Object.fromEntries([...st.buckets].map(([b, p]) => [String(b), Number(p.offset)]));
    void this.noteSnapshot(latest.id, offsets);
  }

  /**
   * A newer snapshot landed (a notification, or the warehouse): its lookup is planned now (so the first request after
   * a commit does not read the manifests) and the files it adds are decoded; then requests answer from it. The first
   * snapshot a reader learns of answers at once (nothing decoded yet to compare with: its files decode as lookups
   * need them). Returns when requests answer from it (or from a newer one).
   */
  noteSnapshot(id: number, offsets: Readonly<Record<string, number>> | null): Promise<void> {
    const known = this.warming?.newest.id ?? this.newest?.id ?? null;
    if (known !== null && id <= known) return this.warming?.ready ?? Promise.resolve();
    const next: Newest = { id, offsets };
    const planned = this.lookupAt(id, undefined);
    const before = this.newestFiles;
    if (this.newest === null || before === null) {
      this.promote(next, planned);
      return Promise.resolve();
    }
    const warm = planned.then((lookup) => lookup.prefetch((f) => !before.has(f.fileName)));
    const ready = Promise.race([warm, new Promise<void>((resolve) => setTimeout(resolve, WARM_MAX_MS).unref())])
      .catch(() => undefined)
      .then(() => {
        // A newer snapshot noted meanwhile takes over: this one is never the newest.
        if (this.warming?.newest === next) this.promote(next, planned);
      });
    this.warming = { newest: next, ready };
    return ready;
  }

  /** Requests answer from `next` from now on; waiting ones look again. */
  private promote(next: Newest, planned: Promise<KeyLookup>): void {
    if (this.newest !== null && next.id <= this.newest.id) return;
    this.newest = next;
    this.warming = null;
    this.newestFiles = null;
    planned.then(
      (lookup) => {
        if (this.newest === next) this.newestFiles = lookup.dataFileNames();
      },
      () => undefined,
    );
    for (const wake of [...this.waiting]) wake();
  }

  /** The rows of `keys` at the snapshot `wanted` names; LookupRefusal for what the reply names. */
  async get(keys: readonly LookupKey[], columns: readonly string[] | undefined, wanted: SnapshotWanted): Promise<LookupAnswer> {
    const id = wanted.snapshot !== undefined ? await this.existing(wanted.snapshot) : await this.newestFor(wanted);
    const lookup = await this.lookupAt(id, columns);
    return { snapshotId: lookup.snapshotId, lookup, rows: await lookup.get(keys) };
  }

  stop(): void {
    clearTimeout(this.polling);
    for (const wake of [...this.waiting]) wake();
  }

  /** `id` when the snapshot exists; else why not: expired (before the earliest), or not there yet. */
  private async existing(id: number): Promise<number> {
    // The file itself, not the handle's cache of snapshots read (an expired one stays in it).
    if (await this.table.io.isFile(this.table.paths.snapshotPath(id))) return id;
    const earliest = await this.table.snapshots.earliestId();
    if (earliest !== null && id < earliest) throw new LookupRefusal("snapshot-expired", ErrorKind.NotFound, `snapshot ${id} of ${this.table.name} has expired (the earliest is ${earliest})`, { earliest });
    throw new LookupRefusal("snapshot-not-found", ErrorKind.NotFound, `snapshot ${id} of ${this.table.name} does not exist${this.newest === null ? " (the table has no snapshot)" : ` (the latest is ${this.newest.id})`}`);
  }

  /** Whether snapshot `n` (default: the newest that answers) satisfies `wanted`. */
  private satisfies(wanted: SnapshotWanted, n: Newest | null = this.newest): boolean {
    if (wanted.minSnapshot === undefined && wanted.visibleAfter === undefined) return true;
    if (n === null) return false;
    if (wanted.minSnapshot !== undefined && n.id < wanted.minSnapshot) return false;
    if (wanted.visibleAfter !== undefined) {
      if (n.offsets === null) return false;
      for (const [bucket, seq] of Object.entries(wanted.visibleAfter)) if ((n.offsets[bucket] ?? 0) < seq) return false;
    }
    return true;
  }

  /**
   * The newest snapshot known once it satisfies `wanted`, waiting up to `waitMs` (woken by notifications; the
   * warehouse looked at every WAIT_POLL_MS meanwhile); null when the table has no snapshot and none was asked for.
   */
  private async newestFor(wanted: SnapshotWanted): Promise<number | null> {
    const deadline = Date.now() + wanted.waitMs;
    while (!this.satisfies(wanted)) {
      // The snapshot that satisfies it is warming: answered once it answers (at most WARM_MAX_MS, whatever `waitMs`:
      // the snapshot is there, only its files are decoding).
      if (this.warming !== null && this.satisfies(wanted, this.warming.newest)) {
        await this.warming.ready;
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const asked = [wanted.minSnapshot !== undefined ? `snapshot ${wanted.minSnapshot} or newer` : null, wanted.visibleAfter !== undefined ? `offsets ${JSON.stringify(wanted.visibleAfter)} committed` : null].filter((x) => x !== null).join(" and ");
        throw new LookupRefusal("not-visible", ErrorKind.Io, `${this.table.name}: no snapshot with ${asked} within ${wanted.waitMs} ms (the newest is ${this.newest?.id ?? "none"})`);
      }
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, WAIT_POLL_MS));
        this.waiting.add(wake);
      });
      if (!this.satisfies(wanted)) await this.refresh();
    }
    return this.newest?.id ?? null;
  }

  /** The KeyLookup of snapshot `id` with `columns` (planned once, then kept among KEPT_LOOKUPS). */
  private lookupAt(id: number | null, columns: readonly string[] | undefined): Promise<KeyLookup> {
    const spec = (): { cache: CountingFileCache; store: ManifestStore; columns?: string[] } => ({ cache: this.cache, store: this.store, ...(columns !== undefined ? { columns: [...columns] } : {}) });
    // No snapshot yet: every key is absent; not kept (the next commit makes one).
    if (id === null) return KeyLookup.open(this.table, spec());
    const key = columns === undefined ? `${id}|*` : `${id}|${columns.join(",")}`;
    let kept = this.lookups.get(key);
    if (kept !== undefined) {
      // Already the most recently used (the common case: every request asks the newest snapshot): left in place.
      if (this.lastKey === key) return kept;
      this.lookups.delete(key);
    } else {
      kept = KeyLookup.open(this.table, { ...spec(), snapshotId: id });
      // A failed plan (an unknown column, a snapshot expired meanwhile) is not kept.
      kept.catch(() => {
        if (this.lookups.get(key) === kept) this.lookups.delete(key);
      });
    }
    this.lookups.set(key, kept);
    this.lastKey = key;
    for (const k of this.lookups.keys()) {
      if (this.lookups.size <= KEPT_LOOKUPS) break;
      this.lookups.delete(k);
    }
    return kept;
  }
}
