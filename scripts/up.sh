#!/usr/bin/env bash
# Runs the product: a local natslake cluster (nats-server with JetStream, redis-server, 3 nodes) with a demo table
# that receives rows through the producer client. Installs what is missing first (Debian packages need root).
# Usage: npm run up [-- --nodes N --duration SECONDS --warehouse DIR --s3]   (Ctrl-C drains the nodes, then stops the
# servers)
#
# - The warehouse is .natslake/warehouse in this folder unless --warehouse (or --s3) is given: kept between runs,
#   with the JetStream store in .natslake/warehouse/.natslake-up, so the next `npm run up` resumes from it and the
#   examples (examples/) find it by default. `rm -rf .natslake` starts afresh.
# - nats-server: the current one (scripts/nats-server-version). `natslake up` finds it where scripts/setup.sh puts
#   it or builds it there with `go install` (scripts/install-nats-server.sh, about 30–60 s once); without Go it stops
#   with the command that fixes it. NATSLAKE_NATS_SERVER=/path/to/nats-server runs that one instead.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if ! command -v redis-server >/dev/null 2>&1; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "natslake up needs redis-server: install it (sudo apt-get install redis-server) or run as root" >&2
    exit 1
  fi
  echo "installing redis-server…" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
[[ -d node_modules ]] || npm ci --no-audit --no-fund
# Nodes run compiled JavaScript (less memory, faster start), rebuilt only when the sources changed; bin/natslake.mjs
# falls back to the sources if this fails.
node scripts/build.mjs --if-stale >/dev/null || echo "natslake up: the build failed; running the TypeScript sources" >&2
warehouse=(--warehouse "$ROOT/.natslake/warehouse")
for arg in "$@"; do
  case "$arg" in --warehouse | --warehouse=* | --s3) warehouse=() ;; esac
done
exec node bin/natslake.mjs up --demo "${warehouse[@]}" "$@"
