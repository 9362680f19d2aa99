#!/usr/bin/env bash
# `npm test`: makes sure the test prerequisites are installed (scripts/setup.sh, a no-op when they are), then
# typecheck, lint, and every test under test/ with Node's test runner.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh >&2
# The typecheck and the lint at once (each ~20–30 s; the machine has two cores); both must pass.
npx tsc -p tsconfig.json --noEmit & tsc_pid=$!
lint_rc=0; npx eslint . || lint_rc=$?
tsc_rc=0; wait "$tsc_pid" || tsc_rc=$?
if [ "$tsc_rc" -ne 0 ] || [ "$lint_rc" -ne 0 ]; then
  echo "npm test: typecheck exit $tsc_rc, lint exit $lint_rc" >&2
  exit 1
fi
exec node scripts/run-tests.mjs "${@:-test}"
