import { test } from "node:test";
import assert from "node:assert/strict";
import { parseJson, stringifyJson } from "../../../src/format/wire/json.ts";
import { BATCH_COMMIT_IDENTIFIER, natslakeProperties, natslakeState, snapshotFromJson, snapshotToJson } from "../../../src/format/snapshot.ts";

const JAVA_SNAPSHOT = `{
  "version" : 3,
  "id" : 7,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-a-0",
  "baseManifestListSize" : 1084,
  "deltaManifestList" : "manifest-list-a-1",
  "deltaManifestListSize" : 1201,
  "commitUser" : "u1",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "APPEND",
  "timeMillis" : 1720496663041,
  "totalRecordCount" : 3,
  "deltaRecordCount" : 3,
  "watermark" : -9223372036854775808,
  "logOffsets" : { },
  "nextRowId" : 0,
  "somethingNew" : "ignored"
}`;

test("snapshot - Long.MAX_VALUE commit identifier and Long.MIN_VALUE watermark survive a round trip", () => {
  const s = snapshotFromJson(parseJson(JAVA_SNAPSHOT));
  assert.equal(s.commitIdentifier, BATCH_COMMIT_IDENTIFIER);
  assert.equal(s.watermark, -(2n ** 63n));
  const text = stringifyJson(snapshotToJson(s));
  assert.match(text, /"commitIdentifier": 9223372036854775807,/);
  assert.match(text, /"watermark": -9223372036854775808,/);
  assert.doesNotMatch(text, /logOffsets/, "2.x dropped logOffsets; never written");
  assert.deepEqual(snapshotFromJson(parseJson(text)), s);
});

test("snapshot - a snapshot missing a required key is rejected", () => {
  const o = parseJson(JAVA_SNAPSHOT) as Record<string, unknown>;
  delete o["commitUser"];
  assert.throws(() => snapshotFromJson(o), /lacks 'commitUser'/);
});

test("snapshot - natslake properties carry epoch, offsets and owner epochs; foreign properties are kept", () => {
  const props = natslakeProperties(
    { epoch: 5, buckets: new Map([[1, { offset: 2n ** 60n, ownerEpoch: 3 }], [0, { offset: 10n, ownerEpoch: 1 }]]) },
    { "other.key": "x", "natslake.offset.9": "stale" },
  );
  assert.deepEqual(props, {
    "other.key": "x",
    "natslake.epoch": "5",
    "natslake.offset.0": "10",
    "natslake.owner-epoch.0": "1",
    "natslake.offset.1": String(2n ** 60n),
    "natslake.owner-epoch.1": "3",
  });
  const s = snapshotFromJson({ ...(parseJson(JAVA_SNAPSHOT) as object), properties: props });
  const st = natslakeState(s);
  assert.equal(st?.epoch, 5);
  assert.deepEqual(st?.buckets.get(1), { offset: 2n ** 60n, ownerEpoch: 3 });
  assert.equal(natslakeState(snapshotFromJson(parseJson(JAVA_SNAPSHOT))), null, "a foreign snapshot carries no natslake state");
});
