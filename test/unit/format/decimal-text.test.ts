/**
 * DECIMAL values as a library user reads them: `readRows` gives the canonical value, the unscaled bigint (9.99 in
 * DECIMAL(10, 2) is 999n), and the package's `formatDecimal(unscaled, scale)` prints it ("9.99") exactly at any
 * precision, reading back to the same value.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { BatchWriter, Catalog, formatDecimal, parseColumnList, parseIdentifier, readAllRows, toJsonValue } from "../../../src/index.ts";
import { decimalToUnscaled } from "../../../src/format/values.ts";
import { tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

test("formatDecimal - the decimal text of an unscaled value and its scale", () => {
  const cases: Array<[bigint, number, string]> = [
    [999n, 2, "9.99"],
    [-999n, 2, "-9.99"],
    [5n, 2, "0.05"],
    [-5n, 2, "-0.05"],
    [0n, 2, "0.00"],
    [1200n, 2, "12.00"],
    [123n, 0, "123"],
    [-1n, 3, "-0.001"],
    [10n ** 38n - 1n, 10, "9999999999999999999999999999.9999999999"],
  ];
  for (const [unscaled, scale, text] of cases) assert.equal(formatDecimal(unscaled, scale), text, `${unscaled} at scale ${scale}`);
});

test("formatDecimal - reads back to the same unscaled value at every precision and scale (property)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 38 }).chain((p) => fc.tuple(fc.constant(p), fc.integer({ min: 0, max: p }), fc.bigInt({ min: -(10n ** BigInt(p)) + 1n, max: 10n ** BigInt(p) - 1n }))), ([precision, scale, unscaled]) => {
      assert.equal(decimalToUnscaled(formatDecimal(unscaled, scale), precision, scale, "c"), unscaled);
    }),
    { numRuns: 2000 },
  );
});

test("formatDecimal - a DECIMAL read back with readRows is the unscaled bigint; formatDecimal and toJsonValue print it", async () => {
  const table = await new Catalog(wh.path).createTable(parseIdentifier("shop.orders"), { columns: parseColumnList("id BIGINT NOT NULL, amount DECIMAL(10, 2)"), options: { bucket: "1", "bucket-key": "id" } });
  const w = await BatchWriter.open(table);
  await w.write([{ id: 1, amount: "9.99" }, { id: 2, amount: "-0.05" }, { id: 3, amount: null }]);
  await w.commit();
  const rows = (await readAllRows(table)).sort((a, b) => Number(a["id"]) - Number(b["id"]));
  // The canonical value other code relies on is unchanged: the unscaled bigint.
  assert.deepEqual(rows.map((r) => r["amount"]), [999n, -5n, null]);
  const type = table.typeOf("amount");
  assert.ok(type.root === "DECIMAL");
  assert.deepEqual(rows.map((r) => (r["amount"] === null ? null : formatDecimal(r["amount"] as bigint, type.scale))), ["9.99", "-0.05", null]);
  assert.deepEqual(rows.map((r) => toJsonValue(type, r["amount"] ?? null)), ["9.99", "-0.05", null]);
});
