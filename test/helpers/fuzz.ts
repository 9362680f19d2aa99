/**
 * Shared pieces of the fuzz suites (test/fuzz/): how many cases a property runs, the one check every decoder is held
 * to, and arbitraries of hostile bytes and text.
 *
 * The check (`decodeOutcome`): a decoder given outside bytes returns a value or throws a TYPED error — a LakeError (or
 * a subclass such as PayloadError), or what the caller names as the module's own error type. Anything else fails the
 * property: a TypeError or RangeError from deep inside, a stack overflow, a case that takes longer than its time
 * budget (a near-hang), or one whose array-buffer or heap memory grows by more than its budget while it runs (a
 * declared length taken at its word: a memory bomb).
 *
 * Cases per property: FUZZ_RUNS (default 200, what `npm test` runs); `npm run fuzz` runs 10,000. FUZZ_SEED replays
 * a failing run (fast-check prints the seed and the path of the smallest failing case).
 */
import fc from "fast-check";
import { LakeError } from "../../src/errors.ts";

/** Cases per property: FUZZ_RUNS, or a short run (what CI's `npm test` does). */
export const FUZZ_RUNS = Number(process.env["FUZZ_RUNS"] ?? 200);

/** fast-check's parameters for a fuzz property: FUZZ_RUNS cases, FUZZ_SEED when set (to replay a failure). */
export function fuzzParams<T>(runs = FUZZ_RUNS): fc.Parameters<T> {
  const seed = process.env["FUZZ_SEED"];
  return { numRuns: runs, ...(seed !== undefined ? { seed: Number(seed) } : {}) };
}

/** A test's timeout that grows with FUZZ_RUNS (a 10,000-case run takes longer than the CI run's 200). */
export const fuzzTimeout = (msPerCase = 20): number => Math.max(60_000, FUZZ_RUNS * msPerCase);

export interface DecodeBudget {
  /** Wall time one case may take (default 2 s: a loaded 2-core machine; real decodes of these sizes take < 50 ms). */
  maxMs?: number;
  /** Growth of array buffers plus heap during one case (default 64 MiB; the inputs are a few KiB). */
  maxBytes?: number;
  /** Errors of the module's own type that count as typed, besides LakeError. */
  typed?: (e: unknown) => boolean;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: Error };

const memory = (): number => {
  const m = process.memoryUsage();
  return m.arrayBuffers + m.heapUsed;
};

/** A short, printable view of an input (fast-check prints it with a failing case too). */
export const preview = (input: unknown): string => {
  if (input instanceof Uint8Array) return `${input.length} bytes ${Buffer.from(input.subarray(0, 48)).toString("hex")}${input.length > 48 ? "…" : ""}`;
  const s = typeof input === "string" ? input : String(input);
  return JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);
};

/**
 * Runs one decode and classifies it; throws (failing the property) when the decoder broke its contract: an untyped
 * error, too much time or too much memory for one case.
 */
export function decodeOutcome<T>(decode: () => T, input: unknown, budget: DecodeBudget = {}): Outcome<T> {
  const before = memory();
  const started = performance.now();
  let out: Outcome<T>;
  try {
    out = { ok: true, value: decode() };
  } catch (e) {
    out = { ok: false, error: e as Error };
  }
  checkBudget(started, before, input, budget);
  if (!out.ok && !isTypedError(out.error, budget)) {
    const err = out.error;
    throw new Error(`untyped ${err?.constructor?.name ?? typeof err} on ${preview(input)}: ${err?.message ?? String(err)}`, { cause: err });
  }
  return out;
}

function isTypedError(e: unknown, budget: DecodeBudget): boolean {
  return e instanceof LakeError || (budget.typed?.(e) ?? false);
}

function checkBudget(started: number, before: number, input: unknown, budget: DecodeBudget): void {
  const ms = performance.now() - started;
  const grown = memory() - before;
  if (ms > (budget.maxMs ?? 2000)) throw new Error(`decode took ${ms.toFixed(0)} ms on ${preview(input)}`);
  if (grown > (budget.maxBytes ?? 64 * 1024 * 1024)) throw new Error(`decode grew memory by ${(grown / 1048576).toFixed(0)} MiB on ${preview(input)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Byte mutations of valid encodings

const concat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

/** Bytes that sit on boundaries of most encodings (length prefixes, sign bits, varint continuation). */
const BOUNDARY_BYTES = [0x00, 0x01, 0x7f, 0x80, 0xc1, 0xfe, 0xff];

/**
 * A valid encoding changed the ways that break decoders: cut short, bits flipped, bytes overwritten with boundary
 * values, garbage appended, bytes spliced in or removed, or left whole (so round trips are checked on the same path).
 */
export function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return valid.chain((v) => {
    const at = fc.nat({ max: Math.max(0, v.length - 1) });
    return fc.oneof(
      fc.constant(v),
      fc.nat({ max: v.length }).map((n) => v.subarray(0, n)),
      fc.array(fc.tuple(at, fc.integer({ min: 0, max: 7 })), { minLength: 1, maxLength: 4 }).map((flips) => {
        const out = new Uint8Array(v);
        for (const [i, bit] of flips) if (i < out.length) out[i]! ^= 1 << bit;
        return out;
      }),
      fc.tuple(at, fc.constantFrom(...BOUNDARY_BYTES), fc.integer({ min: 1, max: 8 })).map(([i, b, n]) => {
        const out = new Uint8Array(v);
        out.fill(b, i, Math.min(out.length, i + n));
        return out;
      }),
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((tail) => concat(v, tail)),
      fc.tuple(at, fc.uint8Array({ minLength: 1, maxLength: 16 })).map(([i, bytes]) => concat(v.subarray(0, i), bytes, v.subarray(i))),
      fc.tuple(at, fc.integer({ min: 1, max: 16 })).map(([i, n]) => concat(v.subarray(0, i), v.subarray(i + n))),
    );
  });
}

/** Random bytes, mostly short, sometimes a few KiB. */
export const randomBytes = (maxLength = 512): fc.Arbitrary<Uint8Array> => fc.uint8Array({ maxLength });

// ---------------------------------------------------------------------------------------------------------------
// msgpack hostile inputs (reliability.md §5: framing and encoding)

const u32 = (n: number): number[] => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];

/**
 * msgpack headers that declare far more than the bytes that follow (array, map, str, bin and ext of 2^32−1 or 2^16−1
 * elements or bytes), each alone or wrapped in a one-entry map or array as a row value would be.
 */
export const msgpackBombs: fc.Arbitrary<Uint8Array> = fc
  .tuple(
    fc.constantFrom(
      [0xdd, ...u32(0xffffffff)], // array32
      [0xdf, ...u32(0xffffffff)], // map32
      [0xdc, 0xff, 0xff], // array16
      [0xde, 0xff, 0xff], // map16
      [0xdb, ...u32(0xffffffff)], // str32
      [0xc6, ...u32(0xffffffff)], // bin32
      [0xc9, ...u32(0xffffffff), 0x01], // ext32
      [0xdd, ...u32(0x7fffffff), 0xc0], // array32 of nils, one present
    ),
    fc.constantFrom("alone", "in-map", "in-array"),
  )
  .map(([header, where]) => {
    const h = Uint8Array.from(header);
    if (where === "alone") return h;
    if (where === "in-map") return concat(Uint8Array.of(0x81, 0xa1, 0x61), h); // {"a": …}
    return concat(Uint8Array.of(0x91), h); // […]
  });

/** Arrays or maps nested `depth` deep (msgpack fixarray/fixmap headers), closed with a nil. */
export const msgpackDeep: fc.Arbitrary<Uint8Array> = fc.tuple(fc.integer({ min: 500, max: 200_000 }), fc.boolean()).map(([depth, maps]) => {
  const unit = maps ? [0x81, 0xa1, 0x61] : [0x91];
  const out = new Uint8Array(depth * unit.length + 1);
  for (let i = 0; i < depth; i++) out.set(unit, i * unit.length);
  out[out.length - 1] = 0xc0;
  return out;
});

/**
 * Odd but well-formed msgpack: ext types (msgpackr's own and unknown ones, timestamps), the unused byte 0xc1,
 * invalid UTF-8 in a str, duplicate map keys, NaN and ±Inf doubles, uint64 beyond int64, keys that are not strings.
 */
export const msgpackOddities: fc.Arbitrary<Uint8Array> = fc.constantFrom(
  Uint8Array.of(0xd4, 0x01, 0x00), // fixext1, unknown type 1
  Uint8Array.of(0xd6, 0xff, 0x00, 0x00, 0x00, 0x01), // timestamp32
  Uint8Array.of(0xd7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), // timestamp64 with out-of-range nanos
  Uint8Array.of(0xc7, 0x0c, 0xff, ...new Array<number>(12).fill(0xff)), // timestamp96
  Uint8Array.of(0xd4, 0x72, 0x00), // msgpackr's ext 0x72 (a reference)
  Uint8Array.of(0xd4, 0x70, 0x00), // msgpackr's ext 0x70 (a structure id)
  Uint8Array.of(0xd5, 0x65, 0x00, 0x00), // msgpackr's ext 0x65 (an error)
  Uint8Array.of(0xc1),
  Uint8Array.of(0x81, 0xa1, 0x61, 0xc1),
  Uint8Array.of(0x81, 0xa1, 0x61, 0xa2, 0xc3, 0x28), // {"a": invalid UTF-8}
  Uint8Array.of(0x81, 0xa2, 0xff, 0xfe, 0x01), // {invalid UTF-8 key: 1}
  Uint8Array.of(0x82, 0xa1, 0x61, 0x01, 0xa1, 0x61, 0x02), // {"a": 1, "a": 2}
  Uint8Array.of(0x81, 0xa1, 0x61, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0), // {"a": NaN}
  Uint8Array.of(0x81, 0xa1, 0x61, 0xcb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0), // {"a": Infinity}
  Uint8Array.of(0x81, 0xa1, 0x61, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), // {"a": 2^64-1}
  Uint8Array.of(0x81, 0x91, 0x01, 0x02), // {[1]: 2}
  Uint8Array.of(0x81, 0x81, 0xa1, 0x62, 0x01, 0x02), // {{"b":1}: 2}
  Uint8Array.of(0x81, 0xa9, ...Buffer.from("__proto__"), 0x81, 0xa1, 0x78, 0x01), // {"__proto__": {"x": 1}}
  Uint8Array.of(0x81, 0xa1, 0x61, 0xc4, 0x02, 0x00, 0x01), // {"a": bin}
);

// ---------------------------------------------------------------------------------------------------------------
// JSON hostile inputs

const enc = new TextEncoder();

/**
 * Hostile JSON text: deep nesting, duplicate keys, NaN/Infinity (not JSON), numbers beyond double and 2^53, lone
 * surrogates, a BOM, trailing garbage, empty and blank text.
 */
export const jsonOddities: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 1000, max: 200_000 }).map((d) => "[".repeat(d) + "]".repeat(d)),
  fc.integer({ min: 1000, max: 100_000 }).map((d) => '{"a":'.repeat(d) + "1" + "}".repeat(d)),
  fc.integer({ min: 1000, max: 200_000 }).map((d) => "[".repeat(d)),
  fc.constantFrom(
    '{"a":1,"a":2}',
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":-Infinity}',
    '{"a":1e400}',
    '{"a":-1e400}',
    '{"a":123456789012345678901234567890}',
    '{"a":9007199254740993}',
    '{"a":-9223372036854775809}',
    '{"a":0.1e-400}',
    '{"a":"\\ud800"}',
    '{"\\ud800":1}',
    '\ufeff{"a":1}',
    '{"a":1} trailing',
    '{"a":1}{"a":2}',
    "",
    "   ",
    "null",
    "[]",
    "[null]",
    '"text"',
    "123",
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{"x":1}}}',
  ),
);

/** Hostile JSON as UTF-8 bytes, plus bytes that are not UTF-8 at all. */
export const jsonOddityBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  jsonOddities.map((s) => enc.encode(s)),
  fc.constantFrom(
    Uint8Array.of(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d), // {"a":"<invalid UTF-8>"}
    Uint8Array.of(0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d), // {"<0xff>":1}
    Uint8Array.of(0x5b, 0xed, 0xa0, 0x80, 0x5d), // [<UTF-8 of a surrogate>]
  ),
);

/** Any JSON value (fast-check's), as text — valid JSON of every shape. */
export const anyJsonText: fc.Arbitrary<string> = fc.json({ depthSize: "small" });

// ---------------------------------------------------------------------------------------------------------------
// Well-formed documents with one field of the wrong type or range

/** Values a field should never hold: other types, NaN-ish and out-of-range numbers, deep or empty containers. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, "", "12", "x", 1.5, -1, 2 ** 53 + 2, -(2 ** 63), 1e300, [], {}, [[[[]]]], { a: { b: {} } }),
  fc.bigInt({ min: 2n ** 63n, max: 2n ** 70n }),
  fc.string({ maxLength: 8 }),
);

/**
 * `doc` with one field — at the top or one level down — replaced by a hostile value, or removed. Decoders must refuse
 * it with a typed error or read it as the value it says; never invent one (`Number("x")`, `String(undefined)`).
 */
export function withHostileField(doc: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<Record<string, unknown>> {
  return doc.chain((d) => {
    const paths: string[][] = [];
    for (const [k, v] of Object.entries(d)) {
      paths.push([k]);
      if (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)) for (const k2 of Object.keys(v)) paths.push([k, k2]);
    }
    if (paths.length === 0) return fc.constant(d);
    return fc.tuple(fc.constantFrom(...paths), fc.option(hostileValue, { nil: undefined, freq: 6 })).map(([path, value]) => setPath(d, path, value));
  });
}

function setPath(d: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const out = { ...d };
  const [head, ...rest] = path;
  if (rest.length === 0) {
    if (value === undefined) delete out[head!];
    else out[head!] = value;
  } else out[head!] = setPath(d[head!] as Record<string, unknown>, rest, value);
  return out;
}
