#!/usr/bin/env bash
# Installs what natslake's tests need on a Debian 12 machine (or re-uses what is already there). `npm test` and
# `.ci/run` call it first; it is idempotent and takes about a second when everything is in place.
#
#   1. system packages  nats-server, redis-server, prometheus (promtool), docker-compose (and python3 / python3-venv
#                       when a venv must be created),
#                       via apt-get when missing; `apt-get update` runs at most once
#   1b. nats-server current  required: a current nats-server (NATS_CURRENT_VERSION) built with `go install` into
#                       $NATSLAKE_TOOLS_DIR (default ~/go/natslake-bin), only when missing or at another version, within
#                       NATSLAKE_GO_INSTALL_TIMEOUT seconds, by scripts/install-nats-server.sh (which `natslake up`
#                       runs too); exported as NATSLAKE_NATS_SERVER_CURRENT. Every test runs
#                       against it: Debian's 2.9.10 is below the supported minimum (2.10) and panics (SIGSEGV in
#                       jsMsgGetRequest) when a message is read from a stream another client is still creating
#   1c. seaweedfs       SeaweedFS's `weed` (the S3-compatible store of the object-storage tests and `up --s3`) at the pinned
#                       pseudo-version in scripts/seaweedfs-version, built with `go install` into
#                       $NATSLAKE_TOOLS_DIR/seaweedfs-<version>/weed, only when missing (from cold Go caches about 5 min on 2
#                       shared cores, 2.1 GB of modules; NATSLAKE_WEED_INSTALL_TIMEOUT, default 3600 s); exported as NATSLAKE_WEED
#   2. python venv      .venv with the pinned oracles (pypaimon, pyarrow, duckdb; nats-py and msgpack for the Python consumer and publisher); pip only when they are not
#                       already installed at exactly these versions. A checkout without a .venv gets a symbolic link to a
#                       venv shared by every checkout of the same pins and Python ($NATSLAKE_VENV_CACHE, default
#                       ~/.cache/natslake/venvs/<hash>): a clean checkout (CI's) then skips the 30 s pip install. A real
#                       .venv directory (made by hand, or NATSLAKE_VENV_CACHE=off) is used as it is
#   2b. java oracle     Java Paimon (paimon-bundle 1.4.2 + the Hadoop classes its Parquet reader links against) copied
#                       by Maven from test/compat/java/pom.xml into $NATSLAKE_JAVA_ORACLE_DIR (default
#                       ~/.cache/natslake/java-oracle)/lib, and test/compat/java/*.java (PaimonRead, the table reader;
#                       LsmCompactionOracle, Java's compaction picker; PaimonPk with PaimonJson, primary-key reads,
#                       streams, writes, creates and a write benchmark) compiled into .../classes; each step only when
#                       its input (the pom, the sources) changed since (stamp files); then a class-data-sharing
#                       archive of the classes an oracle run loads (.../cds), which halves a JVM start's CPU
#   3. npm ci           skipped when node_modules was installed by this script from the same package-lock.json
#                       and Node version (stamp file node_modules/.natslake-ci-stamp)
#   4. native parquet   the Parquet addon (native/parquet/, Rust) as native/parquet/natslake-parquet.node: copied from
#                       $NATSLAKE_NATIVE_CACHE (default ~/.cache/natslake/native)/<hash of the crate's sources and
#                       Cargo.lock> when that build is there, else compiled with `cargo build --release` (niced, at most
#                       2 jobs, CARGO_TARGET_DIR ~/.cache/natslake/native-target; a cold compile takes minutes) and
#                       cached. No cargo, or a failed compile: none, and Parquet runs on parquet-wasm (src/codec/parquet-ops.mjs)
#
# Idempotent; a re-run on a prepared checkout only runs the tests. Any failure stops the run with a non-zero status:
# the oracles are never optional, so tests never skip for lack of them.
set -euo pipefail
export LC_NUMERIC=C  # EPOCHREALTIME uses the locale decimal separator

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
cd "$ROOT"

NATS_CURRENT_VERSION="$(cat "$ROOT/scripts/nats-server-version")"
# The oracles are the Python examples' packages (pinned once, in examples/python/requirements.txt).
mapfile -t PY_PINS < <(grep -E '^[A-Za-z]' "$ROOT/examples/python/requirements.txt")
VENV="$ROOT/.venv"
STAMP="node_modules/.natslake-ci-stamp"

log() { printf '[ci] %s\n' "$*"; }
die() { printf '[ci] ERROR: %s\n' "$*" >&2; exit 1; }

TIMINGS=()
WARNINGS=()
warn() {
  printf '[ci] WARNING: %s\n' "$*" >&2
  WARNINGS+=("$*")
}
PHASE=""
PHASE_START=""
phase_begin() {
  PHASE="$1"
  PHASE_START="$EPOCHREALTIME"
  log "== $PHASE"
}
phase_end() {
  local secs
  secs="$(awk -v a="$PHASE_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')"
  TIMINGS+=("$(printf '%-16s %7ss%s' "$PHASE" "$secs" "${1:+  ($1)}")")
  log "== $PHASE done in ${secs}s${1:+ ($1)}"
  PHASE=""
}
report() {
  local status=$?
  if [[ -n "$PHASE" ]]; then
    TIMINGS+=("$(printf '%-16s %7s' "$PHASE" "FAILED")")
  fi
  log "timings:"
  local t
  for t in "${TIMINGS[@]}"; do log "  $t"; done
  for t in "${WARNINGS[@]}"; do log "WARNING: $t"; done
  if [[ $status -eq 0 ]]; then log "OK"; else log "FAILED (exit $status)"; fi
}
trap report EXIT

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root (or sudo) to run: $*"
  fi
}

venv_ok() { [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; }

# Exit 0 when every pin is installed at exactly its version and the modules import.
pins_ok() {
  "$VENV/bin/python" - "${PY_PINS[@]}" <<'EOF' >/dev/null 2>&1
import importlib, importlib.metadata as md, sys
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if md.version(name) != want:
        sys.exit(1)
    importlib.import_module({"nats-py": "nats"}.get(name, name))  # the distribution's module name
EOF
}

# ---------------------------------------------------------------------------------------------------------------
phase_begin "system packages"
missing=()
command -v nats-server >/dev/null 2>&1 || missing+=(nats-server)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
for p in faketime strace gcc; do command -v "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v mvn >/dev/null 2>&1 || missing+=(maven)  # the Java Paimon oracle (phase "java oracle")
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)  # promtool checks and unit-tests compose/prometheus/alerts.yml; prometheus scrapes a live cluster in a test
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)  # `docker-compose config` validates compose/docker-compose.yml (Docker itself need not run)
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)  # chaos nemeses (chaos/nemesis/): libfaketime (clock skew), strace (slow fsync of Go processes), gcc (builds the slow-fsync LD_PRELOAD shim)
if ! venv_ok; then
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
fi
command -v node >/dev/null 2>&1 || die "node is not installed (Node >= 20.19 is required)"
command -v npm >/dev/null 2>&1 || die "npm is not installed"
if [[ ${#missing[@]} -gt 0 ]]; then
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and apt-get is not available to install them"
  log "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  command -v nats-server >/dev/null 2>&1 || die "nats-server still missing after apt-get install"
  command -v redis-server >/dev/null 2>&1 || die "redis-server still missing after apt-get install"
  phase_end "installed ${missing[*]}"
else
  phase_end "all present"
fi
log "node $(node --version), npm $(npm --version), $(nats-server --version 2>&1 | head -n1), $(redis-server --version | head -n1 | cut -d' ' -f1-3)"

# ---------------------------------------------------------------------------------------------------------------
phase_begin "nats-server current"
# Required: Debian's 2.9.10 registers a new stream before its store exists, so a message read racing a stream
# create kills the server (seen in CI: node-watchdog, stale-coordinator). The tests never fall back to it.
# scripts/install-nats-server.sh finds it, or builds it with `go install` (the same script `natslake up` runs).
NATS_CURRENT_BIN="$(bash "$ROOT/scripts/install-nats-server.sh")" \
  || die "no current nats-server ($NATS_CURRENT_VERSION; see above); the tests need it (Debian's $(nats-server --version 2>&1 | head -n1) is below the supported 2.10)"
export NATSLAKE_NATS_SERVER_CURRENT="$NATS_CURRENT_BIN"
phase_end "$NATS_CURRENT_BIN"

# ---------------------------------------------------------------------------------------------------------------
phase_begin "seaweedfs"
# SeaweedFS tags are not semantic versions, so the module proxy knows its commits as pseudo-versions; its go.mod has
# replace directives, which `go install module@version` refuses: the module is downloaded from the proxy and
# `go install ./weed` runs inside it (as its own main module, replaces honoured). Not optional: the object-storage
# tests need a real S3 server.
WEED_VERSION="$(cat "$ROOT/scripts/seaweedfs-version")"
WEED_MODULE="github.com/seaweedfs/seaweedfs"
WEED_DIR="${NATSLAKE_TOOLS_DIR:-$HOME/go/natslake-bin}/seaweedfs-$WEED_VERSION"
WEED_BIN="$WEED_DIR/weed"
weed_ok() { [[ -x "$WEED_BIN" && -f "$WEED_DIR/.built" && "$(cat "$WEED_DIR/.built")" == "$WEED_VERSION" ]]; }
weed_note=""
if weed_ok; then
  weed_note="present"
elif ! command -v go >/dev/null 2>&1; then
  weed_note="go is not installed"
else
  log "go install $WEED_MODULE/weed@$WEED_VERSION -> $WEED_DIR (at most ${NATSLAKE_WEED_INSTALL_TIMEOUT:-3600}s)"
  rm -rf "$WEED_DIR"
  mkdir -p "$WEED_DIR"
  weed_rc=0
  weed_src="$(env GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$WEED_MODULE@$WEED_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" || weed_rc=$?
  if [[ $weed_rc -ne 0 || -z "$weed_src" ]]; then
    weed_note="go mod download $WEED_MODULE@$WEED_VERSION failed"
  else
    (cd "$weed_src" && timeout --kill-after=10 "${NATSLAKE_WEED_INSTALL_TIMEOUT:-3600}" \
      env GOBIN="$WEED_DIR" GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -mod=mod" go install ./weed) || weed_rc=$?
    if [[ $weed_rc -eq 124 || $weed_rc -eq 137 ]]; then
      weed_note="go install timed out after ${NATSLAKE_WEED_INSTALL_TIMEOUT:-3600}s"
    elif [[ $weed_rc -ne 0 || ! -x "$WEED_BIN" ]]; then
      weed_note="go install failed (exit $weed_rc)"
    else
      printf '%s' "$WEED_VERSION" > "$WEED_DIR/.built"
      weed_note="built with $(go version | cut -d' ' -f3)"
    fi
  fi
fi
if weed_ok; then
  export NATSLAKE_WEED="$WEED_BIN"
  phase_end "$weed_note: $WEED_BIN"
else
  die "no SeaweedFS weed ($WEED_VERSION, $weed_note); the object-storage tests need it. Install Go >= 1.26.6 or set NATSLAKE_TOOLS_DIR to where seaweedfs-$WEED_VERSION/weed is"
fi

# ---------------------------------------------------------------------------------------------------------------
phase_begin "python venv"
venv_note="up to date"
VENV_CACHE="${NATSLAKE_VENV_CACHE:-$HOME/.cache/natslake/venvs}"
if [[ ! -e "$VENV" && ! -L "$VENV" && "$VENV_CACHE" != "off" ]] && command -v python3 >/dev/null 2>&1; then
  # One shared venv per (pins, Python version): a new pin or a new Python makes a new one, never changes one in use.
  venv_key="$( { printf '%s\n' "${PY_PINS[@]}"; python3 --version 2>&1; } | sha256sum | cut -c1-16)"
  mkdir -p "$VENV_CACHE"
  ln -s "$VENV_CACHE/$venv_key" "$VENV"
  # Two checkouts preparing the same shared venv at once: the second waits for the first (flock), then finds it ready.
  exec {venv_lock}>"$VENV_CACHE/$venv_key.lock"
  flock "$venv_lock"
  venv_where="shared: $VENV_CACHE/$venv_key; "
fi
if ! venv_ok; then
  rm -rf "$(readlink -f "$VENV")"
  python3 -m venv "$(readlink -f "$VENV")" || die "python3 -m venv failed (is python3-venv installed?)"
  venv_note="created"
fi
if ! pins_ok; then
  log "pip install ${PY_PINS[*]}"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off -q "${PY_PINS[@]}" \
    || die "pip install ${PY_PINS[*]} failed; the compat tests cannot run without these oracles"
  pins_ok || die "after pip install, ${PY_PINS[*]} still do not import at the pinned versions"
  venv_note="$venv_note, installed ${PY_PINS[*]}"
fi
if [[ -n "${venv_lock:-}" ]]; then exec {venv_lock}>&-; fi
export NATSLAKE_PYTHON="$VENV/bin/python"
phase_end "${venv_where:-}$venv_note; $("$NATSLAKE_PYTHON" --version 2>&1)"

# ---------------------------------------------------------------------------------------------------------------
phase_begin "java oracle"
# Not optional: the compat tests read natslake's tables with released Java Paimon. test/helpers/java.ts finds the
# result at the same default directory (or $NATSLAKE_JAVA_ORACLE_DIR).
JAVA_ORACLE_DIR="${NATSLAKE_JAVA_ORACLE_DIR:-$HOME/.cache/natslake/java-oracle}"
JAVA_POM="$ROOT/test/compat/java/pom.xml"
JAVA_SRCS=("$ROOT/test/compat/java/PaimonRead.java" "$ROOT/test/compat/java/LsmCompactionOracle.java" "$ROOT/test/compat/java/PaimonJson.java" "$ROOT/test/compat/java/PaimonPk.java")
lib_stamp="$(sha256sum "$JAVA_POM" | cut -d' ' -f1)"
classes_stamp="$(cat "${JAVA_SRCS[@]}" "$JAVA_POM" | sha256sum | cut -d' ' -f1) $(javac -version 2>&1)"
java_note=""
if [[ -f "$JAVA_ORACLE_DIR/lib/.stamp" && "$(cat "$JAVA_ORACLE_DIR/lib/.stamp")" == "$lib_stamp" ]]; then
  java_note="classpath present"
else
  log "mvn dependency:copy-dependencies ($JAVA_POM) -> $JAVA_ORACLE_DIR/lib"
  rm -rf "$JAVA_ORACLE_DIR/lib" "$JAVA_ORACLE_DIR/lib.tmp"
  mkdir -p "$JAVA_ORACLE_DIR"
  mvn_log="$JAVA_ORACLE_DIR/mvn.log"
  mvn -B -q -Dstyle.color=never -f "$JAVA_POM" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$JAVA_ORACLE_DIR/lib.tmp" >"$mvn_log" 2>&1 \
    || { cat "$mvn_log" >&2; die "Maven could not fetch the Java Paimon oracle (org.apache.paimon:paimon-bundle:1.4.2, hadoop-common and hadoop-mapreduce-client-core 3.3.6) from Maven Central; see its output above (network or proxy settings in ~/.m2/settings.xml). The compat tests cannot run without it"; }
  ls "$JAVA_ORACLE_DIR/lib.tmp"/paimon-bundle-*.jar >/dev/null 2>&1 || die "mvn finished but $JAVA_ORACLE_DIR/lib.tmp has no paimon-bundle jar"
  mv "$JAVA_ORACLE_DIR/lib.tmp" "$JAVA_ORACLE_DIR/lib"
  printf '%s' "$lib_stamp" > "$JAVA_ORACLE_DIR/lib/.stamp"
  java_note="fetched $(find "$JAVA_ORACLE_DIR/lib" -name '*.jar' | wc -l) jars ($(du -sh "$JAVA_ORACLE_DIR/lib" | cut -f1))"
fi
if [[ -f "$JAVA_ORACLE_DIR/classes/.stamp" && "$(cat "$JAVA_ORACLE_DIR/classes/.stamp")" == "$classes_stamp" ]]; then
  java_note="$java_note, oracles compiled"
else
  rm -rf "$JAVA_ORACLE_DIR/classes"
  mkdir -p "$JAVA_ORACLE_DIR/classes"
  javac -nowarn -encoding UTF-8 -d "$JAVA_ORACLE_DIR/classes" -cp "$JAVA_ORACLE_DIR/lib/*" "${JAVA_SRCS[@]}" \
    || die "javac could not compile ${JAVA_SRCS[*]} against $JAVA_ORACLE_DIR/lib"
  printf '%s' "$classes_stamp" > "$JAVA_ORACLE_DIR/classes/.stamp"
  java_note="$java_note, oracles compiled now"
fi
# A class-data-sharing archive of the classes an oracle run loads (the JDK's dynamic AppCDS): a JVM start then maps
# Paimon's and Hadoop's classes instead of loading and verifying them from the jars — measured 1.35 → 0.55 CPU s for
# a small PaimonRead, and the suite starts the oracle dozens of times. It is made by one training run of PaimonPk
# (create, write with a compaction, read and stream a primary-key table and an append table) and only speeds starts
# up: without it (or when the JVM cannot map it) every oracle runs as before, so a failure here is a warning.
# test/helpers/java.ts uses it when cds/.stamp matches the lib and classes stamps. CDS refuses a class directory on
# the class path, hence the jar of the compiled oracles.
cds_dir="$JAVA_ORACLE_DIR/cds"
cds_stamp="$lib_stamp $classes_stamp"
if [[ -f "$cds_dir/.stamp" && "$(cat "$cds_dir/.stamp")" == "$cds_stamp" ]]; then
  java_note="$java_note, class-sharing archive present"
else
  rm -rf "$cds_dir"
  mkdir -p "$cds_dir"
  cds_wh="$(mktemp -d)"
  cds_fields_pk='[{"name":"id","type":"INT NOT NULL"},{"name":"s","type":"STRING"},{"name":"n","type":"BIGINT"}]'
  cds_training='{"warehouse":"'"$cds_wh"'","requests":[
    {"op":"create","table":"cds.pk","fields":'"$cds_fields_pk"',"primaryKeys":["id"],"options":{"bucket":"2","changelog-producer":"input"}},
    {"op":"write","table":"cds.pk","batches":[[{"row":{"id":1,"s":"a","n":1}},{"row":{"id":2,"s":"b","n":2}}],[{"kind":"-D","row":{"id":1,"s":"a","n":1}}]],"compact":true},
    {"op":"read","table":"cds.pk"},
    {"op":"stream","table":"cds.pk"},
    {"op":"create","table":"cds.log","fields":[{"name":"id","type":"INT"},{"name":"s","type":"STRING"}]},
    {"op":"write","table":"cds.log","batches":[[{"row":{"id":1,"s":"a"}}]]},
    {"op":"read","table":"cds.log"}]}'
  if (cd "$JAVA_ORACLE_DIR/classes" && jar cf "$cds_dir/oracles.jar" ./*.class) \
    && java -Xlog:disable -Xlog:all=warning:stderr -XX:ArchiveClassesAtExit="$cds_dir/oracles.jsa" -XX:TieredStopAtLevel=1 \
      -cp "$JAVA_ORACLE_DIR/lib/*:$cds_dir/oracles.jar" PaimonPk <<<"$cds_training" >"$cds_dir/training.out" 2>"$cds_dir/training.log" \
    && [[ -s "$cds_dir/oracles.jsa" ]]; then
    printf '%s' "$cds_stamp" > "$cds_dir/.stamp"
    java_note="$java_note, class-sharing archive made ($(du -sh "$cds_dir/oracles.jsa" | cut -f1))"
  else
    warn "no class-sharing archive for the Java oracle (see $cds_dir/training.log): its runs start without it, slower"
  fi
  rm -rf "$cds_wh"
fi
export NATSLAKE_JAVA_ORACLE_DIR="$JAVA_ORACLE_DIR"
phase_end "$java_note; $(java -version 2>&1 | head -n1)"

# ---------------------------------------------------------------------------------------------------------------
phase_begin "npm ci"
want_stamp="$(sha256sum package-lock.json | cut -d' ' -f1) node-$(node --version)"
if [[ -d node_modules && -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" ]]; then
  phase_end "skipped: node_modules matches package-lock.json"
else
  # npm 11 does not run dependency install scripts it has not been told to allow; none is needed here
  # (esbuild and msgpackr ship prebuilt or pure-JS fallbacks), so its warning about them is expected.
  npm ci --no-audit --no-fund
  printf '%s' "$want_stamp" > "$STAMP"
  phase_end "installed"
fi

# ---------------------------------------------------------------------------------------------------------------
phase_begin "native parquet"
# The native Parquet codec (src/codec/parquet-ops.mjs uses it when native/parquet/natslake-parquet.node loads, else
# parquet-wasm, which writes the same bytes). A build is cached by the hash of everything that goes into it, so a run
# with an unchanged crate (every CI run but the first after a change) copies a file instead of compiling arrow-rs.
NATIVE_DIR="$ROOT/native/parquet"
NATIVE_NODE="$NATIVE_DIR/natslake-parquet.node"
NATIVE_CACHE="${NATSLAKE_NATIVE_CACHE:-$HOME/.cache/natslake/native}"
native_key="$( { cd "$NATIVE_DIR" && find Cargo.toml Cargo.lock build.rs src -type f | LC_ALL=C sort | xargs sha256sum; uname -m; } | sha256sum | cut -c1-16)"
native_built="$NATIVE_CACHE/$native_key/natslake-parquet.node"
mkdir -p "$NATIVE_CACHE"
# Two checkouts preparing the same build at once: the second waits for the first (flock), then finds it cached.
exec {native_lock}>"$NATIVE_CACHE/$native_key.lock"
flock "$native_lock"
native_note=""
if [[ -f "$native_built" ]]; then
  native_note="cached build $native_key"
elif command -v cargo >/dev/null 2>&1; then
  native_target="${CARGO_TARGET_DIR:-$HOME/.cache/natslake/native-target}"
  native_log="$NATIVE_CACHE/$native_key.build.log"
  log "cargo build --release (native/parquet, $native_key; a cold compile of arrow-rs takes minutes) -> $native_built"
  native_rc=0
  # The target directory is shared by every checkout (dependencies compile once), and cargo does not tell a path
  # package's build-script output from another checkout's apart: this crate is cleaned first, so its build script and
  # code always come from these sources (a checkout whose build.rs differs once linked with another's link flags).
  (cd "$NATIVE_DIR" && env CARGO_TARGET_DIR="$native_target" cargo clean --release -p natslake-parquet) >"$native_log" 2>&1 || true
  (cd "$NATIVE_DIR" && timeout --kill-after=10 "${NATSLAKE_NATIVE_BUILD_TIMEOUT:-3600}" env CARGO_TARGET_DIR="$native_target" \
    CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}" nice -n 10 cargo build --release --locked) >>"$native_log" 2>&1 || native_rc=$?
  if [[ $native_rc -eq 0 && -f "$native_target/release/libnatslake_parquet.so" ]]; then
    mkdir -p "$NATIVE_CACHE/$native_key"
    cp "$native_target/release/libnatslake_parquet.so" "$native_built.tmp"
    mv "$native_built.tmp" "$native_built"
    native_note="compiled $native_key with $(cargo --version | cut -d' ' -f1-2)"
  else
    warn "the native Parquet addon did not compile (exit $native_rc; see $native_log): Parquet runs on parquet-wasm"
  fi
fi
exec {native_lock}>&-
if [[ -f "$native_built" ]]; then
  cmp -s "$native_built" "$NATIVE_NODE" || cp "$native_built" "$NATIVE_NODE"
  if node -e 'require(process.argv[1])' "$NATIVE_NODE" 2>"$NATIVE_CACHE/$native_key.load.log"; then
    phase_end "$native_note: native/parquet/natslake-parquet.node"
  else
    rm -f "$NATIVE_NODE"
    warn "the native Parquet addon does not load ($(head -n1 "$NATIVE_CACHE/$native_key.load.log")): Parquet runs on parquet-wasm"
    phase_end "not loadable"
  fi
else
  # A stale addon from other sources must not stay in use.
  rm -f "$NATIVE_NODE"
  if command -v cargo >/dev/null 2>&1; then phase_end "none: the compile failed"; else phase_end "cargo is not installed: no native Parquet addon, Parquet runs on parquet-wasm"; fi
fi

# ---------------------------------------------------------------------------------------------------------------
phase_begin "build"
# dist/ (compiled JavaScript) is what bin/natslake.mjs runs while it matches the sources; rebuilt when they changed.
build_note="$(node scripts/build.mjs --if-stale)" || die "npm run build failed"
phase_end "${build_note#build: }"
