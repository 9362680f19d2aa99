#!/usr/bin/env bash
# `npm test`: makes sure the test prerequisites are installed (scripts/setup.sh, a no-op when they are), then
# typecheck, lint, and every test under test/ with Node's test runner.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh >&2
npx tsc -p tsconfig.json --noEmit
npx eslint .
exec node scripts/run-tests.mjs "${@:-test}"
