/**
 * Deletion vector index files Java Paimon 1.4.2 wrote (test/fixtures/deletion-vectors/, made by
 * make-java-fixtures.mts): the 32-bit and the 64-bit format decode to the rows that Java's commits deleted, through
 * bitmap, run and array containers; a damaged frame is refused, naming what is wrong.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";
import type { DeletionVectorRange } from "../../../src/format/index-manifest.ts";
import { checkIndexFileVersion, readDeletionVector } from "../../../src/format/wire/deletion-vectors.ts";

const dir = new URL("../../fixtures/deletion-vectors/", import.meta.url);
const fixture = (name: string): { bytes: Uint8Array; range: DeletionVectorRange } => ({
  bytes: new Uint8Array(readFileSync(new URL(`${name}.index`, dir))),
  range: (JSON.parse(readFileSync(new URL(`${name}.json`, dir), "utf8")) as { ranges: DeletionVectorRange[] }).ranges[0]!,
});

/** The rows make-java-fixtures.mts had Java delete from the first file (id i is row i). */
const DELETED = [...Array.from({ length: 5_000 }, (_, i) => 2 * i), ...Array.from({ length: 500 }, (_, i) => 70_000 + i), 131_073, 135_000, 139_999, 199_990];
const ROWS = 200_000;

test("Java's 32-bit and 64-bit deletion vectors decode to the rows its commits deleted", () => {
  for (const name of ["dv32", "dv64"]) {
    const { bytes, range } = fixture(name);
    checkIndexFileVersion(bytes, name);
    assert.deepEqual([...readDeletionVector(bytes, range, ROWS, name)], DELETED, name);
    assert.equal(range.cardinality, DELETED.length);
  }
  // The two frames differ as Java writes them: the 64-bit range's length counts the length field and the CRC.
  assert.equal(fixture("dv32").range.length, new DataView(fixture("dv32").bytes.buffer).getInt32(1, false));
  assert.equal(fixture("dv64").range.length, new DataView(fixture("dv64").bytes.buffer).getInt32(1, false) + 8);
});

test("a damaged index file or a range that does not fit it is refused, naming the file and the data file", () => {
  const { bytes, range } = fixture("dv32");
  const refused = (b: Uint8Array, r: DeletionVectorRange, pattern: RegExp, rows = ROWS): void => {
    assert.throws(
      () => readDeletionVector(b, r, rows, "index file x"),
      (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.message.startsWith(`index file x: the deletion vector of ${range.dataFileName}`) && pattern.test(e.message),
    );
  };
  const flipped = new Uint8Array(bytes);
  flipped[200]! ^= 1;
  refused(flipped, range, /CRC32 mismatch/);
  refused(bytes, { ...range, length: range.length + 1 }, /its frame says 8247 bytes, the index manifest 8248/);
  refused(bytes, { ...range, offset: 2 }, /unknown magic number/);
  refused(bytes, { ...range, offset: bytes.length - 4 }, /lies past the end of the file/);
  refused(bytes.subarray(0, bytes.length - 2), range, /lie past the end of the file/);
  refused(bytes, { ...range, cardinality: 5503 }, /5504 deleted positions, the index manifest says 5503/);
  refused(bytes, range, /value 199990 is out of range \(below 199990 expected\)/, 199_990);
  const v64 = fixture("dv64");
  assert.throws(() => readDeletionVector(v64.bytes, { ...v64.range, length: v64.range.length - 8 }, ROWS, "f"), /its frame says 8267 bytes with length and CRC, the index manifest 8259/);
  assert.throws(() => checkIndexFileVersion(new Uint8Array([2, 0]), "index file y"), /index file y: deletion vector index version 2/);
  assert.throws(() => checkIndexFileVersion(new Uint8Array(0), "index file y"), /index file y is empty/);
});
