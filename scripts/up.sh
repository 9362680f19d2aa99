#!/usr/bin/env bash
# Runs the product: a local natslake cluster (nats-server with JetStream, redis-server, 3 nodes) with a demo table
# that receives rows through the producer client. Installs what is missing first (Debian packages need root).
# Usage: npm run up [-- --nodes N --duration SECONDS --warehouse DIR]   (Ctrl-C drains the nodes, then stops the servers;
# with --warehouse the JetStream store is kept in DIR/.natslake-up for the next run)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
missing=()
# natslake up runs NATSLAKE_NATS_SERVER, else the current nats-server scripts/setup.sh built, else the one on PATH
# (Debian's 2.9.10: it warns about it); only the last case needs the package.
current="${NATSLAKE_NATS_SERVER_CURRENT:-${NATSLAKE_TOOLS_DIR:-$HOME/go/natslake-bin}/nats-server-$(cat scripts/nats-server-version)/nats-server}"
if [[ -z "${NATSLAKE_NATS_SERVER:-}" && ! -x "$current" ]]; then
  command -v nats-server >/dev/null 2>&1 || missing+=(nats-server)
fi
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if ((${#missing[@]} > 0)); then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "natslake up needs ${missing[*]}: install them (apt-get install ${missing[*]}) or run as root" >&2
    exit 1
  fi
  echo "installing ${missing[*]}…" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[[ -d node_modules ]] || npm ci --no-audit --no-fund
# Nodes run compiled JavaScript (less memory, faster start); bin/natslake.mjs falls back to the sources if this fails.
node scripts/build.mjs >/dev/null || echo "natslake up: the build failed; running the TypeScript sources" >&2
exec node bin/natslake.mjs up --demo "$@"
