import { after, test } from "node:test";
import assert from "node:assert/strict";
import { compareBytes, compareStrings } from "../../../src/codec/stats.ts";
import {
  applyStatsMode,
  columnStatsModes,
  parseStatsMode,
  truncateBytesMax,
  truncateBytesMin,
  truncateStringMax,
  truncateStringMin,
} from "../../../src/codec/stats-mode.ts";
import { T } from "../../../src/format/data-types.ts";
import { deserializeBinaryRow } from "../../../src/format/binary-row.ts";
import { TableOptions, validateCreateOptions } from "../../../src/options.ts";
import { DataFileWriter } from "../../../src/write/data-file-writer.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

test("stats modes - parsed as Paimon spells them; truncate(16) is the default; per-column modes win", () => {
  assert.deepEqual(parseStatsMode("TRUNCATE(8)"), { kind: "truncate", length: 8 });
  assert.deepEqual(parseStatsMode(" full "), { kind: "full" });
  assert.throws(() => parseStatsMode("truncate(0)"), /not a statistics mode/);
  assert.throws(() => parseStatsMode("exact"), /not a statistics mode/);
  const modes = columnStatsModes(new TableOptions({ "fields.b.stats-mode": "none", "fields.c.stats-mode": "counts" }), ["a", "b", "c"]);
  assert.deepEqual(modes, [{ kind: "truncate", length: 16 }, { kind: "none" }, { kind: "counts" }]);
  assert.throws(() => validateCreateOptions({ "fields.x.stats-mode": "truncate(x)" }), /fields\.x\.stats-mode/);
  assert.throws(() => validateCreateOptions({ "metadata.stats-mode": "half" }), /metadata\.stats-mode/);
  validateCreateOptions({ "metadata.stats-mode": "truncate(32)", "fields.x.stats-mode": "full" });
});

test("truncate - strings are cut by code points, not UTF-16 units or bytes; the max's last code point is incremented", () => {
  assert.equal(truncateStringMin("abcdef", 3), "abc");
  assert.equal(truncateStringMax("abcdef", 3), "abd");
  // Short enough: the value itself, both ways.
  assert.equal(truncateStringMin("abc", 3), "abc");
  assert.equal(truncateStringMax("abc", 3), "abc");
  // Surrogate pairs count as one character and are never split.
  const emoji = "😀😁😂🤣";
  assert.equal(truncateStringMin(emoji, 2), "😀😁");
  assert.equal(truncateStringMax(emoji, 2), "😀😂");
  assert.equal(truncateStringMax("😀😁", 2), "😀😁", "two code points in four UTF-16 units: not truncated");
  // Multi-byte characters: é (2 bytes), 中 (3 bytes).
  assert.equal(truncateStringMin("é中文字", 2), "é中");
  assert.equal(truncateStringMax("é中文字", 2), "é丮");
  // U+D7FF + 1 is a surrogate, not a character: the bound jumps to U+E000.
  assert.equal(truncateStringMax("a\ud7ffz", 2), "a\ue000");
  // U+FFFF + 1 is U+10000, a surrogate pair.
  assert.equal(truncateStringMax("a\uffffz", 2), "a\u{10000}");
});

test("truncate - a max whose last code points cannot be incremented drops them; none at all: no upper bound", () => {
  const top = String.fromCodePoint(0x10ffff);
  assert.equal(truncateStringMax(`a${top}${top}x`, 3), "b");
  assert.equal(truncateStringMax(`${top}${top}x`, 2), null);
  assert.equal(truncateBytesMax(Uint8Array.of(1, 0xff, 0xff, 7), 3)!.join(), "2");
  assert.equal(truncateBytesMax(Uint8Array.of(0xff, 0xff, 7), 2), null);
  assert.equal(truncateBytesMax(Uint8Array.of(1, 2, 3, 4), 2)!.join(), "1,3");
  assert.equal(truncateBytesMin(Uint8Array.of(1, 2, 3, 4), 2).join(), "1,2");
  assert.equal(truncateBytesMax(Uint8Array.of(1, 2), 2)!.join(), "1,2");
  // Unknown bound: min and max both null, the null count stays (as Paimon).
  const s = applyStatsMode(T.string(), { kind: "truncate", length: 2 }, "a", `${top}${top}x`, 3);
  assert.deepEqual(s, { min: null, max: null, nullCount: 3 });
});

test("truncate - only strings and binaries; numbers (NaN included) stay exact; counts keeps only the null count", () => {
  const t16 = { kind: "truncate", length: 16 } as const;
  assert.deepEqual(applyStatsMode(T.double(), t16, -1.5, Number.NaN, 0), { min: -1.5, max: Number.NaN, nullCount: 0 });
  assert.deepEqual(applyStatsMode(T.bigint(), { kind: "truncate", length: 1 }, -12345n, 99999n, 1), { min: -12345n, max: 99999n, nullCount: 1 });
  assert.deepEqual(applyStatsMode(T.string(), { kind: "counts" }, "a", "b", 2), { min: null, max: null, nullCount: 2 });
  assert.deepEqual(applyStatsMode(T.string(), { kind: "full" }, "a".repeat(40), "b".repeat(40), 0), { min: "a".repeat(40), max: "b".repeat(40), nullCount: 0 });
});

test("truncate - bounds stay sound: min <= every value <= max (random strings over the whole code point range)", () => {
  let seed = 7;
  const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
  const pick = (): number => {
    const r = rnd(10);
    const cp = r < 4 ? 0x61 + rnd(3) : r < 6 ? 0xd7fe + rnd(4) : r < 8 ? 0xfffe + rnd(3) : 0x10fffe + rnd(2);
    return cp >= 0xd800 && cp <= 0xdfff ? 0xe000 : cp;
  };
  for (let round = 0; round < 2000; round++) {
    const n = 1 + rnd(4);
    const values = Array.from({ length: 1 + rnd(5) }, () => String.fromCodePoint(...Array.from({ length: rnd(8) }, pick)));
    const sorted = [...values].sort(compareStrings);
    const lo = truncateStringMin(sorted[0]!, n);
    const hi = truncateStringMax(sorted[sorted.length - 1]!, n);
    assert.ok(Array.from(lo).length <= n);
    for (const v of values) {
      assert.ok(compareStrings(lo, v) <= 0, `min ${JSON.stringify(lo)} > ${JSON.stringify(v)}`);
      if (hi !== null) assert.ok(compareStrings(hi, v) >= 0, `max ${JSON.stringify(hi)} < ${JSON.stringify(v)}`);
    }
    if (hi !== null) assert.ok(Array.from(hi).length <= n);
    const bytes = values.map((v) => new TextEncoder().encode(v));
    const bsorted = [...bytes].sort((a, b) => compareBytes(a, 0, a.length, b, 0, b.length));
    const blo = truncateBytesMin(bsorted[0]!, n);
    const bhi = truncateBytesMax(bsorted[bsorted.length - 1]!, n);
    for (const b of bytes) {
      assert.ok(compareBytes(blo, 0, blo.length, b, 0, b.length) <= 0);
      if (bhi !== null) assert.ok(compareBytes(bhi, 0, bhi.length, b, 0, b.length) >= 0);
    }
  }
});

test("data files - truncate(16) by default; per-column none leaves the column out of _VALUE_STATS_COLS, full keeps it exact", async () => {
  const t = await createTable(wh.path, "w.modes", "id BIGINT, s STRING, full_s STRING, gone STRING, b BYTES", {
    options: { "fields.full_s.stats-mode": "full", "fields.gone.stats-mode": "none" },
  });
  const big = "x".repeat(1000);
  const rows = [
    { id: 1n, s: `a${big}`, full_s: `a${big}`, gone: "g", b: new Uint8Array(100).fill(7) },
    { id: 2n, s: `b${big}`, full_s: `b${big}`, gone: "h", b: null },
  ];
  const meta = await new DataFileWriter(t).write("", 0, rows, 1n, () => undefined);
  assert.deepEqual(meta.valueStatsCols, ["id", "s", "full_s", "b"]);
  const types = [T.bigint(), T.string(), T.string(), T.bytes()];
  const min = deserializeBinaryRow(types, meta.valueStats.minValues);
  const max = deserializeBinaryRow(types, meta.valueStats.maxValues);
  assert.deepEqual(min.slice(0, 3), [1n, `a${"x".repeat(15)}`, `a${big}`]);
  assert.deepEqual(max.slice(0, 3), [2n, `b${"x".repeat(14)}y`, `b${big}`]);
  assert.deepEqual([...(min[3] as Uint8Array)], new Array(16).fill(7));
  assert.deepEqual([...(max[3] as Uint8Array)], [...new Array(15).fill(7), 8]);
  assert.deepEqual(meta.valueStats.nullCounts, [0n, 0n, 0n, 1n]);
  // The same on the worker path (encodeSpec travels by structured clone).
  assert.deepEqual(structuredClone(new DataFileWriter(t).encodeSpec).statsModes, [{ kind: "truncate", length: 16 }, { kind: "truncate", length: 16 }, { kind: "full" }, { kind: "truncate", length: 16 }]);
});
