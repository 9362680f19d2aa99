/**
 * Errors for a table's files that are damaged (they exist but do not parse) or missing (a snapshot, manifest or
 * list names them but they are not there): every reader names the file, what is wrong with it and what to do, and a
 * caller can tell such an error from an IO failure by `damagedFileOf` — the committer refuses to build on one and
 * says which kind of file in its metric, `natslake doctor` lists them.
 */
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";

/** The kinds of a table's files, as the errors, doctor's findings and the committer's metric label name them. */
export const TABLE_FILE_KINDS = ["snapshot", "schema", "manifest-list", "manifest", "data-file", "index-manifest", "index-file", "consumer", "hint"] as const;
export type TableFileKind = (typeof TABLE_FILE_KINDS)[number];

/** A kind as a sentence says it ("manifest list", "data file"). */
export const fileKindText = (kind: TableFileKind): string => kind.replace("-", " ");

/** What is wrong with a file: it does not parse (damaged) or it is not there (missing). */
export type FileProblem = "damaged" | "missing";

export interface DamagedFile {
  kind: TableFileKind;
  path: string;
  problem: FileProblem;
}

/** The text of an error or value thrown by a decoder, on one line. */
export function reasonOf(e: unknown): string {
  const text = e instanceof Error ? e.message || e.name : String(e);
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/**
 * `path` exists but is not a readable `kind`: a DataInvalid error `<uri> is damaged: not a readable <kind> (<why>);
 * <remedy>`, with `context` {damaged, file, path} (see `damagedFileOf`). `uri`: the file as a user names it
 * (FileIO.uriOf: `s3://bucket/…` on an object store), default `path`.
 */
export function damagedFile(kind: TableFileKind, path: string, why: string, remedy: string, opts: { cause?: unknown; context?: Record<string, unknown>; uri?: string } = {}): LakeError {
  return new LakeError(ErrorKind.DataInvalid, `${opts.uri ?? path} is damaged: not a readable ${fileKindText(kind)} (${why.replace(/\n/g, "\\n")}); ${remedy}`, {
    context: { ...opts.context, damaged: true, file: kind, path, problem: "damaged" satisfies FileProblem },
    ...(opts.cause !== undefined ? { cause: opts.cause } : {}),
  });
}

/**
 * `path`, which the table's metadata names, is not there: a NotFound error (a reader racing snapshot expiration
 * meets one too, and callers that tolerate that keep doing so) `<kind> <path> is missing; <remedy>`.
 */
export function missingFile(kind: TableFileKind, path: string, remedy: string, cause?: unknown, uri = path): LakeError {
  return new LakeError(ErrorKind.NotFound, `${fileKindText(kind)} ${uri} is missing; ${remedy}`, {
    context: { damaged: true, file: kind, path, problem: "missing" satisfies FileProblem },
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** The damaged or missing file an error is about (this error or one in its cause chain), else null. */
export function damagedFileOf(e: unknown): DamagedFile | null {
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 8; x = x.cause, depth++) {
    if (!isLakeError(x) || x.context["damaged"] !== true) continue;
    const kind = x.context["file"];
    const path = x.context["path"];
    if (typeof kind !== "string" || !(TABLE_FILE_KINDS as readonly string[]).includes(kind) || typeof path !== "string") continue;
    return { kind: kind as TableFileKind, path, problem: x.context["problem"] === "missing" ? "missing" : "damaged" };
  }
  return null;
}

/**
 * Reads and decodes one file of the table: a read that finds nothing is `missingFile`, a decode that throws is
 * `damagedFile` (whatever the decoder threw, its own LakeError included, is the reason).
 */
export async function readTableFile<T>(
  kind: TableFileKind,
  path: string,
  read: () => Promise<Uint8Array | string>,
  decode: (bytes: Uint8Array | string) => T,
  remedy: string,
  uri = path,
): Promise<T> {
  let bytes: Uint8Array | string;
  try {
    bytes = await read();
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) throw missingFile(kind, path, remedy, e, uri);
    throw e;
  }
  return decodeTableFile(kind, path, () => decode(bytes), remedy, uri);
}

/** Runs a decode of a file's bytes: whatever it throws becomes a `damagedFile` error naming `path`. */
export function decodeTableFile<T>(kind: TableFileKind, path: string, decode: () => T, remedy: string, uri = path): T {
  try {
    return decode();
  } catch (e) {
    if (damagedFileOf(e) !== null) throw e;
    throw damagedFile(kind, path, reasonOf(e), remedy, { cause: e, uri });
  }
}
