/**
 * The one error type of the table library, classified by what the caller can do about it (ERROR_KIND_MEANING).
 */
export const ErrorKind = {
  DataInvalid: "DataInvalid",
  NotFound: "NotFound",
  AlreadyExists: "AlreadyExists",
  Conflict: "Conflict",
  CommitRace: "CommitRace",
  Fenced: "Fenced",
  Unsupported: "Unsupported",
  Io: "Io",
  Unexpected: "Unexpected",
} as const;
export type ErrorKind = (typeof ErrorKind)[keyof typeof ErrorKind];

/** What each kind means (also shown on docs/reference/exit-codes.md, beside the CLI's exit code for it). */
export const ERROR_KIND_MEANING: Readonly<Record<ErrorKind, string>> = {
  DataInvalid: "the input (a row, a file, an option) is wrong; retrying the same input fails again",
  NotFound: "a catalog object (warehouse, table, snapshot, tag, …) does not exist",
  AlreadyExists: "a catalog object already exists",
  Conflict: "a concurrent commit changed what this one depended on (an overwrite raced a write)",
  CommitRace: "another writer created the snapshot id first; re-read and retry on top of it",
  Fenced: "a newer leader (higher epoch) exists; stop committing",
  Unsupported: "a valid Paimon feature this library does not implement",
  Io: "the filesystem or object store failed; may be retryable",
  Unexpected: "a bug",
};

export interface LakeErrorOptions {
  context?: Record<string, unknown>;
  retryable?: boolean;
  cause?: unknown;
}

export class LakeError extends Error {
  override readonly name = "LakeError";
  readonly kind: ErrorKind;
  readonly context: Record<string, unknown>;
  readonly retryable: boolean;

  constructor(kind: ErrorKind, message: string, opts: LakeErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    this.context = opts.context ?? {};
    this.retryable = opts.retryable ?? (kind === ErrorKind.CommitRace || kind === ErrorKind.Io);
  }
}

export const dataInvalid = (message: string, context?: Record<string, unknown>): LakeError =>
  new LakeError(ErrorKind.DataInvalid, message, { context });

export const isLakeError = (e: unknown, kind?: ErrorKind): e is LakeError =>
  e instanceof LakeError && (kind === undefined || e.kind === kind);

/** Normalises anything thrown into an Error (actors call this at their boundaries). */
export function ensureError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new LakeError(ErrorKind.Unexpected, typeof e === "string" ? e : JSON.stringify(e));
}

/** `read`'s value, or `absent` when it fails because what it reads does not exist (NotFound); other errors pass. */
export async function ifPresent<T>(read: Promise<T>, absent: T): Promise<T> {
  try {
    return await read;
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return absent;
    throw e;
  }
}
