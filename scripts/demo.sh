#!/usr/bin/env bash
# The table-core demo: creates a partitioned, bucketed Paimon table, writes rows from JSONL and CSV through the
# CLI, reads them back, time-travels to the first snapshot and overwrites one partition.
# Usage: npm run demo  [-- <warehouse dir>]   (default: a fresh temporary directory)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[[ -d node_modules ]] || npm ci --no-audit --no-fund
WH="${1:-$(mktemp -d /tmp/natslake-demo.XXXXXX)}"
export NATSLAKE_WAREHOUSE="$WH"
nl() { echo; echo "\$ natslake $*"; node bin/natslake.mjs "$@"; }

DATA="$(mktemp -d /tmp/natslake-demo-data.XXXXXX)"
cat > "$DATA/events.jsonl" <<'JSONL'
{"id": 1, "dt": "2026-11-28", "user": "ada", "amount": "12.50", "ts": "2026-11-28T09:00:00.123"}
{"id": 2, "dt": "2026-11-28", "user": "grace", "amount": "3.25", "ts": "2026-11-28T09:01:00.000"}
{"id": 3, "dt": "2026-11-29", "user": "linus", "amount": "99.99", "ts": "2026-11-29T10:30:00.500"}
{"id": 4, "dt": "2026-11-29", "user": "barbara", "amount": null, "ts": "2026-11-29T11:00:00.000"}
JSONL
printf 'id,dt,user,amount,ts\n5,2026-11-29,edsger,7.00,2026-11-29T12:00:00\n6,2026-11-30,alan,1.50,2026-11-30T08:00:00\n' > "$DATA/more.csv"
printf '{"id": 10, "dt": "2026-11-28", "user": "replaced", "amount": "1.00", "ts": "2026-11-28T00:00:00"}\n' > "$DATA/fix.jsonl"

nl table create demo.events --columns "id BIGINT NOT NULL, dt STRING NOT NULL, user STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)" \
  --partition-keys dt --option bucket=2 --option bucket-key=id
nl table describe demo.events
nl write demo.events "$DATA/events.jsonl"
nl write demo.events "$DATA/more.csv"
nl read demo.events
nl read demo.events --snapshot 1 --format jsonl
nl write demo.events "$DATA/fix.jsonl" --overwrite --partition dt=2026-11-28 --dry-run
nl write demo.events "$DATA/fix.jsonl" --overwrite --partition dt=2026-11-28
nl read demo.events --partition dt=2026-11-28 --format jsonl
nl snapshots demo.events
echo
echo "warehouse: $WH  (a Paimon table: pypaimon, Spark, Flink and Trino can read $WH/demo.db/events)"
rm -rf "$DATA"
