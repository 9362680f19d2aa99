/**
 * The Roaring reader against bitmaps CRoaring serialized (test/fixtures/deletion-vectors/roaring-cases.json, made
 * by make_roaring_cases.py with pyroaring): each container kind and cookie, the offset header present and absent,
 * 64-bit keys; and malformed input refused by name.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { readRoaring32, readRoaring64 } from "../../../src/codec/roaring.ts";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";

interface Case {
  name: string;
  bits: 32 | 64;
  ranges: Array<[number, number, number]>;
  run_optimize: boolean;
  hex: string;
}

const CASES = JSON.parse(readFileSync(new URL("../../fixtures/deletion-vectors/roaring-cases.json", import.meta.url), "utf8")) as Case[];

const expand = (ranges: ReadonlyArray<[number, number, number]>): number[] => ranges.flatMap(([start, stop, step]) => Array.from({ length: Math.ceil((stop - start) / step) }, (_, i) => start + i * step));

const bytesOf = (hex: string): Uint8Array => new Uint8Array(Buffer.from(hex, "hex"));

/** The container kinds a 32-bit serialization holds, read off its header (to show the cases cover each). */
function containerKinds(bytes: Uint8Array): string[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const cookie = view.getUint32(0, true);
  const runs = (cookie & 0xffff) === 12347;
  const count = runs ? (cookie >>> 16) + 1 : view.getUint32(4, true);
  const header = runs ? 4 + Math.ceil(count / 8) : 8;
  return Array.from({ length: count }, (_, i) => {
    if (runs && (bytes[4 + (i >> 3)]! & (1 << (i & 7))) !== 0) return "run";
    return view.getUint16(header + 4 * i + 2, true) + 1 > 4096 ? "bitmap" : "array";
  });
}

test("every case CRoaring serialized reads back as its values, and ends where the bytes end", () => {
  for (const c of CASES) {
    const bytes = bytesOf(c.hex);
    const read = c.bits === 32 ? readRoaring32(bytes) : readRoaring64(bytes);
    assert.deepEqual([...read.values], expand(c.ranges), c.name);
    assert.equal(read.end, bytes.length, c.name);
  }
});

test("the cases hold array, bitmap and run containers, with and without the run cookie and the offset header", () => {
  const kinds = new Set(CASES.filter((c) => c.bits === 32 && c.hex.length > 16).flatMap((c) => containerKinds(bytesOf(c.hex))));
  assert.deepEqual([...kinds].sort(), ["array", "bitmap", "run"]);
  const mixed = CASES.find((c) => c.name.startsWith("run, array and bitmap"))!;
  assert.deepEqual(containerKinds(bytesOf(mixed.hex)), ["run", "array", "bitmap", "run"]);
});

test("a bitmap read at an offset, with what follows it, ends at its last byte", () => {
  const c = CASES.find((x) => x.name === "one run container (runs, fewer than 4 containers: no offset header)")!;
  const bitmap = bytesOf(c.hex);
  const framed = new Uint8Array([9, 9, 9, ...bitmap, 7, 7]);
  const read = readRoaring32(framed, { offset: 3 });
  assert.deepEqual([...read.values], expand(c.ranges));
  assert.equal(read.end, 3 + bitmap.length);
});

test("malformed bitmaps are refused by name: cookie, truncation, key order, out-of-range values, a lying bitmap header", () => {
  const refused = (bytes: Uint8Array, pattern: RegExp, bits: 32 | 64 = 32, bound?: number): void => {
    assert.throws(
      () => (bits === 32 ? readRoaring32 : readRoaring64)(bytes, { where: "dv of f", ...(bound !== undefined ? { bound } : {}) }),
      (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /^dv of f: /.test(e.message) && pattern.test(e.message),
    );
  };
  const array = bytesOf(CASES.find((c) => c.name.startsWith("array container"))!.hex);
  refused(new Uint8Array([1, 2, 3, 4, 0, 0, 0, 0]), /not a portable roaring bitmap \(cookie 67305985\)/);
  refused(array.subarray(0, array.length - 1), /ends early/);
  // Two containers with the same key.
  const twoKeys = new Uint8Array([0x3a, 0x30, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 24, 0, 0, 0, 26, 0, 0, 0, 1, 0, 2, 0]);
  refused(twoKeys, /container keys are not ascending \(5 after 5\)/);
  // Array values out of order: [5, 3].
  const unordered = new Uint8Array([0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 5, 0, 3, 0]);
  refused(unordered, /values are not ascending \(3 after 5\)/);
  // A data file of 1000 rows: position 65535 cannot be deleted in it.
  refused(array, /value 1000 is out of range \(below 1000 expected\)/, 32, 1000);
  // A bitmap container whose header claims one value more than its bits hold.
  const bitmap = bytesOf(CASES.find((c) => c.name === "bitmap container")!.hex);
  const lying = new Uint8Array(bitmap);
  new DataView(lying.buffer).setUint16(10, new DataView(lying.buffer).getUint16(10, true) + 1, true);
  refused(lying, /bitmap container 0 holds 10000 values, its header says 10001/);
  // 64-bit: keys out of order, and a count that cannot be.
  const keyed = bytesOf(CASES.find((c) => c.name === "64-bit: keys 0 and 2")!.hex);
  const swapped = new Uint8Array(keyed);
  new DataView(swapped.buffer).setUint32(8, 3, true);
  refused(swapped, /bitmap keys are not ascending|values are not ascending/, 64);
  refused(new Uint8Array([0, 0, 0, 0x80, 0, 0, 0, 0]), /invalid bitmap count 2147483648/, 64);
});
