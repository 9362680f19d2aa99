#!/usr/bin/env bash
# The current nats-server natslake runs on (the version in scripts/nats-server-version), in the one place
# scripts/setup.sh and `natslake up` look for it:
#
#   ${NATSLAKE_TOOLS_DIR:-~/go/natslake-bin}/nats-server-<version>/nats-server
#
# Prints that path on stdout. When it is missing (or reports another version) it is built there first with
# `go install` — about 30–60 s the first time, less with a warm Go module cache — with a progress line on stderr,
# within NATSLAKE_GO_INSTALL_TIMEOUT seconds (default 600). When it cannot be built (no Go, a failed or timed-out
# build) it prints on stderr what went wrong and the commands that fix it, and exits 1. Debian's nats-server 2.9.10
# is never a substitute: it is below the supported 2.10 and can lose acknowledged rows (nats-io/nats-server#4771).
#
# usage: bash scripts/install-nats-server.sh        (idempotent; about 10 ms when the server is in place)
set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
VERSION="$(cat "$ROOT/scripts/nats-server-version")"
MODULE="github.com/nats-io/nats-server/v2"
# The Go that version's go.mod asks for (GOTOOLCHAIN=local below: no other toolchain is fetched behind the user's back).
MIN_GO="1.25"
DIR="${NATSLAKE_TOOLS_DIR:-$HOME/go/natslake-bin}/nats-server-$VERSION"
BIN="$DIR/nats-server"
TIMEOUT="${NATSLAKE_GO_INSTALL_TIMEOUT:-600}"

say() { printf 'nats-server: %s\n' "$*" >&2; }
works() { [[ -x "$BIN" ]] && "$BIN" --version 2>&1 | grep -qx "nats-server: $VERSION"; }

if works; then
  printf '%s\n' "$BIN"
  exit 0
fi

# The command that puts the release build of this version for this machine where the build would have put the
# binary (no Go needed); nothing for a system without one.
release_fix() {
  local os arch
  os="$(uname -s | tr '[:upper:]' '[:lower:]')"
  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) return 0 ;;
  esac
  [[ "$os" == linux || "$os" == darwin ]] || return 0
  local name="nats-server-$VERSION-$os-$arch"
  printf 'mkdir -p %q && curl -fsSL https://github.com/nats-io/nats-server/releases/download/%s/%s.tar.gz | tar -xz -C %q --strip-components=1 %s/nats-server' \
    "$DIR" "$VERSION" "$name" "$DIR" "$name"
}

# Says why there is no current server and how to get one (the release build's command first: it needs no Go), exit 1.
refuse() {
  local fetch
  fetch="$(release_fix)"
  say "$1"
  printf 'natslake needs nats-server %s at %s (Debian'"'"'s 2.9 is below the supported 2.10 and can lose acknowledged rows).\n' "$VERSION" "$BIN" >&2
  printf 'Fix it with one of these, then run the same command again:\n' >&2
  [[ -n "$fetch" ]] && printf '  the release build of %s, no Go needed:\n    %s\n' "$VERSION" "$fetch" >&2
  printf '  %s\n' "$2" >&2
  printf '  or point NATSLAKE_NATS_SERVER at a nats-server 2.10 or newer of yours.\n' >&2
  exit 1
}

if ! command -v go >/dev/null 2>&1; then
  refuse "cannot build nats-server $VERSION: go is not on PATH" \
    "or install Go $MIN_GO or newer (https://go.dev/dl/) and put its bin directory on PATH: it then builds $VERSION itself (about a minute)"
fi

# Built from scratch: a binary of another version (or a half-written one) must not remain if this build fails.
rm -rf "$DIR"
mkdir -p "$DIR"
log="$(mktemp "${TMPDIR:-/tmp}/natslake-go-install.XXXXXX")"
trap 'rm -f "$log"' EXIT
say "building $VERSION with go install into $DIR (once; about 30–60 s)"
# timeout runs go in a process group of its own, out of reach of a Ctrl-C at the terminal: pass the stop on.
# GOFLAGS: no VCS stamping outside a repository.
timeout --kill-after=10 "$TIMEOUT" env GOBIN="$DIR" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false go install "$MODULE@$VERSION" >"$log" 2>&1 &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; rm -rf "$DIR"; exit 130' INT TERM
started=$SECONDS
next_line=15
while kill -0 "$pid" 2>/dev/null; do
  elapsed=$((SECONDS - started))
  if [[ -t 2 ]]; then
    printf '\rnats-server: building %s… %d s ' "$VERSION" "$elapsed" >&2
  elif ((elapsed >= next_line)); then
    say "still building ($elapsed s)"
    next_line=$((next_line + 15))
  fi
  sleep 1
done
rc=0
wait "$pid" || rc=$?
trap 'rm -f "$log"' INT TERM
[[ -t 2 ]] && printf '\n' >&2
retry="GOBIN=$(printf '%q' "$DIR") GOTOOLCHAIN=local go install $MODULE@$VERSION"
if [[ $rc -ne 0 ]] || ! works; then
  rm -rf "$DIR"
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    why="go install did not finish within $TIMEOUT s (NATSLAKE_GO_INSTALL_TIMEOUT)"
  elif [[ $rc -ne 0 ]]; then
    why="go install $MODULE@$VERSION failed (exit $rc)"
  else
    why="go install produced no working $VERSION binary"
  fi
  say "$why; its last lines:"
  tail -n 15 "$log" | sed 's/^/  | /' >&2
  refuse "cannot build nats-server $VERSION with $(go version | cut -d' ' -f3)" \
    "or fix what go says above (Go $MIN_GO or newer is needed) and see it build: $retry"
fi
say "built $VERSION with $(go version | cut -d' ' -f3) in $((SECONDS - started)) s: $BIN"
printf '%s\n' "$BIN"
