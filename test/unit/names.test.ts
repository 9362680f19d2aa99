/**
 * What names may hold (src/names.ts), as properties over random text: a name the rules accept never leaves the
 * directory it is put in, never becomes more or fewer NATS subject tokens than its place in a subject, never a
 * wildcard, and is an object-store key segment as it is (nothing a URL would decode). Partition values are not names
 * but are written into paths: escaped as Java does, any value stays one `key=value` directory under the table and
 * reads back as it was.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import fc from "fast-check";
import { checkName, checkNewColumns, checkNewName, existingNameProblem, joinedNameTwins, newNameProblem, type NameKind } from "../../src/names.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { isLakeError } from "../../src/errors.ts";
import { escapePathName, isNullOrWhitespaceOnly, partitionPath, unescapePathName } from "../../src/format/partition.ts";
import { T } from "../../src/format/data-types.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { LocalFileIO } from "../../src/io/local.ts";
import { PathFactory } from "../../src/io/paths.ts";

const ROOT = "/wh";
const catalog = new Catalog(ROOT, new LocalFileIO());
const subjects = new Subjects("lake");

/** Text with the characters that break paths, subjects and keys, look-alikes, and any code point at all. */
const TRICKY = ["a", "z", "0", "9", "_", "-", ".", "..", "/", "\\", "\u0000", "\n", "\t", " ", "%", "2e", "2E", "*", ">", "$", "A", "Z", "=", ":", "~", "\u0430", "\uff0e", "\u2215", "\u200b", "\u202e", "é", "e\u0301", "\u0085", "\u00a0"];
const anyText = fc.oneof(
  fc.string({ unit: fc.constantFrom(...TRICKY), maxLength: 12 }),
  // Mostly what a new name may hold, now and then a character it may not: the accepted side gets exercised too.
  {
    arbitrary: fc.string({ unit: fc.oneof({ arbitrary: fc.constantFrom("a", "q", "7", "_", "-"), weight: 30 }, { arbitrary: fc.constantFrom(...TRICKY), weight: 1 }), maxLength: 12 }),
    weight: 3,
  },
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
);
const RUNS = { numRuns: 2000 };

/** `path` is below `parent` (as the filesystem resolves it: no `..` segment climbs out). */
const inside = (parent: string, path: string): boolean => {
  const r = relative(parent, resolve(path));
  return r !== "" && !isAbsolute(r) && r.split(sep)[0] !== "..";
};

/** The JetStream rules for a stream or KV bucket name: printable, no whitespace, '.', '*', '>' or path separators. */
// eslint-disable-next-line no-control-regex
const STREAM_NAME = /^[^\s.*>/\\\u0000-\u001f\u007f]+$/;
/** NATS KV keys. */
const KV_KEY = /^[-/_=.a-zA-Z0-9]+$/;

test("names - a new database and table name from any text: its path stays in the warehouse, its subjects keep their tokens, its key needs no escaping", () => {
  let accepted = 0;
  fc.assert(
    fc.property(anyText, anyText, (db, table) => {
      if (newNameProblem("database", db) !== null || newNameProblem("table", table) !== null) return;
      accepted++;
      const id = { database: db, table };
      const path = catalog.tablePath(id);
      assert.equal(relative(ROOT, path), `${db}.db/${table}`, "the path is the names, unchanged by normalisation");
      assert.equal(dirname(path), catalog.databasePath(db));
      const bucketSubject = subjects.ingestBucket(id, 3).split(".");
      assert.deepEqual(bucketSubject, ["lake", "in", db, table, "3"]);
      for (const [s, tokens] of [
        [subjects.ingestRaw(id), 4],
        [subjects.commit(id), 4],
        [subjects.dlq(id), 4],
        [subjects.maintenance(id), 5],
        [subjects.reject(id, "n1"), 6],
      ] as const) {
        assert.equal(s.split(".").length, tokens, s);
        assert.ok(!/[*>\s]/.test(s), `no wildcard or whitespace: ${s}`);
      }
      for (const stream of [subjects.ingestStream(id), subjects.commitStream(id)]) assert.match(stream, STREAM_NAME);
      assert.match(subjects.tableKey(id), KV_KEY);
      assert.equal(subjects.tableKey(id).split(".").length, 2);
      // An object-store key segment a URL carries as it is: nothing for a server to decode into '.', '/' or another name.
      for (const segment of [`${db}.db`, table]) assert.equal(encodeURIComponent(segment), segment);
      assert.equal(parseIdentifier(`${db}.${table}`).table, table, "the name reads back as one identifier");
    }),
    RUNS,
  );
  assert.ok(accepted > 100, `enough accepted names were tried: ${accepted}`);
});

test("names - a name already on disk that the rules read (of any kind) is one directory entry inside its parent", () => {
  const parents: Record<Exclude<NameKind, "column">, (name: string) => { path: string; parent: string }> = {
    database: (n) => ({ path: catalog.databasePath(n), parent: ROOT }),
    table: (n) => ({ path: catalog.tablePath({ database: "db", table: n }), parent: join(ROOT, "db.db") }),
    tag: (n) => ({ path: join(ROOT, "db.db/t/tag", `tag-${n}`), parent: join(ROOT, "db.db/t/tag") }),
    "consumer id": (n) => ({ path: join(ROOT, "db.db/t/consumer", `consumer-${n}`), parent: join(ROOT, "db.db/t/consumer") }),
  };
  fc.assert(
    fc.property(fc.constantFrom(...(Object.keys(parents) as Array<keyof typeof parents>)), anyText, (kind, name) => {
      if (existingNameProblem(kind, name) !== null) {
        assert.throws(() => checkName(kind, name), (e: unknown) => isLakeError(e, "DataInvalid"));
        assert.ok(newNameProblem(kind, name) !== null, "what cannot be read cannot be created");
        return;
      }
      const { path, parent } = parents[kind](name);
      assert.equal(dirname(path), parent, JSON.stringify(name));
      assert.ok(inside(parent, path), JSON.stringify(name));
    }),
    RUNS,
  );
});

test("names - tags and consumer ids: a new one is a plain ASCII file name; tags never digits only", () => {
  fc.assert(
    fc.property(fc.constantFrom<NameKind>("tag", "consumer id"), anyText, (kind, name) => {
      if (newNameProblem(kind, name) !== null) return;
      assert.equal(encodeURIComponent(name), name.replaceAll("'", "%27"));
      assert.ok(!name.startsWith(".") && !name.startsWith("-"));
      assert.equal(basename(join("/d", `tag-${name}`)), `tag-${name}`);
      if (kind === "tag") assert.ok(!/^\d+$/.test(name));
    }),
    RUNS,
  );
});

test("names - partition values of any text: one escaped key=value directory per key, under the table, read back unchanged", () => {
  const root = "/wh/db.db/t";
  const key = fc.string({ unit: fc.constantFrom(...TRICKY), minLength: 1, maxLength: 8 }).filter((k) => newNameProblem("column", k) === null);
  fc.assert(
    fc.property(fc.array(fc.tuple(key, anyText), { minLength: 1, maxLength: 3 }), (parts) => {
      const keys = parts.map(([k]) => k);
      const values = parts.map(([, v]) => v);
      const ppath = partitionPath(keys, keys.map(() => T.string()), values, { defaultName: "__DEFAULT_PARTITION__", legacyName: true });
      const dir = join(root, ppath, "bucket-0");
      assert.ok(inside(root, dir), dir);
      const segments = ppath.split("/");
      assert.equal(segments.length, keys.length, ppath);
      segments.forEach((seg, i) => {
        const eq = seg.indexOf("=");
        assert.ok(seg !== "." && seg !== "..");
        assert.equal(unescapePathName(seg.slice(0, eq)), keys[i]);
        // Java's rule: empty or whitespace-only text is the default partition.
        assert.equal(unescapePathName(seg.slice(eq + 1)), isNullOrWhitespaceOnly(values[i]!) ? "__DEFAULT_PARTITION__" : values[i]);
      });
    }),
    RUNS,
  );
  assert.equal(escapePathName("../../x"), "..%2F..%2Fx");
  assert.equal(partitionPath(["dt"], [T.string()], [".."], { defaultName: "__DEFAULT_PARTITION__", legacyName: true }), "dt=..");
});

test("names - new database and table names: each refusal names its rule", () => {
  const refused: Array<[string, RegExp]> = [
    ["db.>", /invalid table name '>': '>' is a NATS subject wildcard; new table names are 1-100 characters from a-z, 0-9, '_' and '-'/],
    ["db.*", /invalid table name '\*': '\*' is a NATS subject wildcard/],
    ["db.t x", /invalid table name 't x': whitespace is not allowed/],
    ["db.a.b", /invalid table name 'a\.b': '\.' separates the database from the table/],
    ["db.%2e%2e", /invalid table name '%2e%2e': '%' is not allowed \(it would read as a percent escape/],
    ["db.Orders", /invalid table name 'Orders': uppercase 'O' is not allowed \(Hive, Spark and Trino fold names to lowercase/],
    ["db.t\u0430ble", /invalid table name 't\u0430ble': '\u0430' \(U\+0430\) is not ASCII \(a look-alike letter could name a different table\)/],
    ["db.-t", /invalid table name '-t': it must not start with '-'/],
    ["db.t\u200b", /invalid table name 't\\u200B': invisible character U\+200B is not allowed/],
    ["sys.t", /invalid database name 'sys': 'sys' is Paimon's system database/],
    [`db.${"t".repeat(101)}`, /it is 101 characters long/],
  ];
  for (const [text, re] of refused) {
    const id = parseIdentifier(text);
    assert.throws(
      () => {
        checkNewName("database", id.database);
        checkNewName("table", id.table);
      },
      (e: unknown) => isLakeError(e, "DataInvalid") && re.test((e as Error).message),
      text,
    );
  }
  for (const [text, re] of [
    ["db./x", /path separators/],
    ["db.t\u0000", /invalid table name 't\\u0000': control characters are not allowed/],
    ["db...", /'\.\.' is not allowed|'\.' and '\.\.' are not names/],
  ] as const)
    assert.throws(() => parseIdentifier(text), re, text);
  for (const ok of ["shop.orders", "s_1.order-items", "_tmp.2026_q1"]) {
    const id = parseIdentifier(ok);
    checkNewName("database", id.database);
    checkNewName("table", id.table);
  }
  // Names made before these rules (or by Paimon's engines) are still read.
  for (const old of ["Shop.Orders", "db.t x", "db.ünï", "db.a.b"]) parseIdentifier(old);
});

test("names - tags and consumer ids: new ones from the documented set, old ones still read", () => {
  for (const [name, re] of [
    ["42", /digits only/],
    [".hidden", /it must not start with '\.'/],
    ["-x", /it must not start with '-'/],
    ["a b", /whitespace is not allowed; new tag names are 1-200 characters from A-Z, a-z, 0-9, '\.', '_' and '-'/],
    ["v\u0131", /is not ASCII/],
    [" ", /it is empty/],
  ] as const)
    assert.throws(() => checkNewName("tag", name), re, name);
  for (const ok of ["v1.2.0", "before-backfill", "Release_2026"]) checkNewName("tag", ok);
  assert.throws(() => checkNewName("consumer id", "billing team"), /invalid consumer id 'billing team': whitespace/);
  for (const old of ["a b", "42", "tågen"]) checkName("tag", old);
  checkName("consumer id", "billing team");
});

test("names - columns: any text Paimon allows, but not invisible, not decomposed, not two that differ only in case or by look-alikes", () => {
  checkNewColumns(["id", "Name", "prix_€", "größe", "a.b", "with space"]);
  for (const [cols, re] of [
    [["id", "ID"], /invalid column name 'ID': it differs from column 'id' only in case/],
    [["id", "ｉｄ"], /invalid column name 'ｉｄ': it differs from column 'id' only in case or by look-alike characters/],
    [["e\u0301te"], /not in Unicode normal form NFC/],
    [["id\u200b"], /invisible character U\+200B/],
    [[" id"], /leading or trailing whitespace/],
    [["a\u0000"], /control characters/],
    [[""], /it is empty/],
  ] as const)
    assert.throws(() => checkNewColumns(cols), re, JSON.stringify(cols));
  assert.throws(() => checkNewColumns(["Id"], ["id", "v"]), /differs from column 'id'/);
  checkNewColumns(["w"], ["ID", "id"]);
});

test("names - the tables whose <db>_<table> reads the same (they would share the cluster's streams)", () => {
  assert.deepEqual(joinedNameTwins({ database: "a", table: "b_c" }), [{ database: "a_b", table: "c" }]);
  assert.deepEqual(joinedNameTwins({ database: "a_b", table: "c" }), [{ database: "a", table: "b_c" }]);
  assert.deepEqual(joinedNameTwins({ database: "shop", table: "orders" }), []);
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom("a", "_", "b"), minLength: 1, maxLength: 6 }), fc.string({ unit: fc.constantFrom("a", "_", "b"), minLength: 1, maxLength: 6 }), (database, table) => {
      for (const twin of joinedNameTwins({ database, table })) {
        assert.equal(subjects.ingestStream(twin), subjects.ingestStream({ database, table }));
        assert.notEqual(twin.database, database);
      }
    }),
  );
});

test("names - a file name a table's metadata gives is one path component: '../../other.db/t/…' is refused, not read or deleted", () => {
  const paths = new PathFactory("/wh/db.db/t");
  assert.equal(paths.dataFilePath("p=a%2Fb", 0, "data-1.parquet"), "/wh/db.db/t/p=a%2Fb/bucket-0/data-1.parquet");
  assert.equal(paths.manifestPath("manifest-list-1"), "/wh/db.db/t/manifest/manifest-list-1");
  for (const bad of ["../../other.db/t/bucket-0/data-1.parquet", "..", "a\\b", ""]) {
    assert.throws(() => paths.dataFilePath("", 0, bad), /the table's metadata names data file .*: not a file name/, bad);
    assert.throws(() => paths.manifestPath(bad), /names manifest .*: not a file name/, bad);
  }
});
