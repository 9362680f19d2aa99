/**
 * Committables sent by reference (issue 9). A committable whose encoding would not fit in one NATS message (a flush
 * of many files, or statistics of large values under `metadata.stats-mode=full`) is written by its writer as a file
 * under the table's directory — `<table>/natslake-committables/<uuid>`, temp name, fsync, rename, directory fsync —
 * and the commit stream carries a small `CommittableRef` instead.
 *
 * Why by reference rather than split into several messages: the ref is still one message, so the commit
 * protocol's reasoning is unchanged — it is appended once (de-duplicated by the same message id), decided once, in
 * stream order, accepted or rejected as a whole. A split committable would have to be reassembled and accepted
 * only when every part arrived, across leader changes and purges.
 *
 * The body is durable before the ref is appended, so a ref in the stream always had its body. Bodies are removed
 * once their committable is decided as accepted or duplicate and purged from the commit stream (nothing reads them
 * again); bodies of rejected committables, and of a writer that crashed between writing the body and appending the
 * ref, stay as orphans (their cleanup is for later). A body found missing is handled by the committer: a
 * duplicate is dropped, anything else is refused (`body-missing`) so its writer re-sends — never applied empty.
 */
import { randomUUID } from "node:crypto";
import { ErrorKind, ifPresent, LakeError } from "../src/errors.ts";
import type { Table } from "../src/table/table.ts";
import { decodeCommittable, encodeMsg } from "./wire/codec.ts";
import type { CommitEntry, Committable, CommittableRef } from "./wire/messages.ts";

export const COMMITTABLES_DIR = "natslake-committables";

export class CommittableStore {
  constructor(private readonly table: Table) {}

  private pathOf(rel: string): string {
    return `${this.table.root}/${rel}`;
  }

  /** Writes the committable's encoding durably and returns the reference to append in its place. */
  async put(c: Committable, body: Uint8Array = encodeMsg(c)): Promise<CommittableRef> {
    const rel = `${COMMITTABLES_DIR}/${randomUUID()}`;
    // No mkdirs: writeFile makes missing parents (locally), and object stores have none to make.
    await this.table.io.writeFile(this.pathOf(rel), body);
    const ref: CommittableRef = {
      type: "committable-ref",
      v: 1,
      table: c.table,
      bucket: c.bucket,
      ownerEpoch: c.ownerEpoch,
      writerId: c.writerId,
      prevOffset: c.prevOffset,
      lastOffset: c.lastOffset,
      flushId: c.flushId,
      path: rel,
      size: body.length,
    };
    if (c.stream !== undefined) ref.stream = c.stream;
    if (c.traceparent !== undefined) ref.traceparent = c.traceparent;
    if (c.beatMillis !== undefined) ref.beatMillis = c.beatMillis;
    return ref;
  }

  /**
   * The committable a reference names, or null when its body is gone. Throws when the body is not the committable
   * the reference describes (another table's, a corrupted file): applying it would apply other rows.
   */
  async load(ref: CommittableRef): Promise<Committable | null> {
    if (ref.path.includes("..") || !ref.path.startsWith(`${COMMITTABLES_DIR}/`)) throw new LakeError(ErrorKind.DataInvalid, `committable reference outside ${COMMITTABLES_DIR}: ${ref.path}`);
    const path = this.pathOf(ref.path);
    // Read, not checked first: one request, and no directory semantics (a LIST on an object store) for a file.
    const body = await ifPresent(this.table.io.readFile(path), null);
    if (body === null) return null;
    const c = decodeCommittable(body);
    const same =
      c.table === ref.table && c.bucket === ref.bucket && c.ownerEpoch === ref.ownerEpoch && c.writerId === ref.writerId && c.prevOffset === ref.prevOffset && c.lastOffset === ref.lastOffset && c.flushId === ref.flushId && c.stream === ref.stream;
    if (!same) throw new LakeError(ErrorKind.DataInvalid, `committable body ${ref.path} does not match its reference (bucket ${ref.bucket}, offsets ${ref.prevOffset}..${ref.lastOffset})`);
    return c;
  }

  /** Removes a body nothing will read again; false when it was gone already. */
  async remove(ref: CommittableRef): Promise<boolean> {
    return this.table.io.delete(this.pathOf(ref.path));
  }
}

/**
 * What to append for `c`: the committable itself when its encoding fits in `limit` bytes, else a reference to its
 * body written to `store`.
 */
export async function toCommitEntry(c: Committable, limit: number, store: CommittableStore): Promise<CommitEntry> {
  const body = encodeMsg(c);
  return body.length <= limit ? c : store.put(c, body);
}
