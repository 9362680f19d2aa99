#!/usr/bin/env bash
# Replaces the passwords of compose/.env — the development values committed to git — with random ones, in place:
# every other line (COMPOSE_PROJECT_NAME, comments, anything you added) is kept as it is, a password line that is
# missing is added, and the file is left readable by its owner only (mode 600). Run it again to rotate them all.
# No password is printed.
#
#   compose/new-secrets.sh             (then `docker compose up -d`: the services whose password changed restart)
#   compose/new-secrets.sh FILE        (another env file, e.g. one given to `docker compose --env-file FILE`)
#
# The names are those docker-compose.yml requires (test/integration/compose-config.test.ts checks they agree).
set -euo pipefail

NAMES=(
  NATSLAKE_NATS_PASSWORD_PRODUCER
  NATSLAKE_NATS_PASSWORD_CONSUMER
  NATSLAKE_NATS_PASSWORD_LOOKUP
  NATSLAKE_NATS_PASSWORD_OPERATOR
  NATSLAKE_NATS_PASSWORD_WRITER
  NATSLAKE_NATS_PASSWORD_COMMITTER
  NATSLAKE_NATS_PASSWORD_READER
  NATSLAKE_REDIS_PASSWORD_COMMITTER
)

env_file="${1:-$(dirname "$0")/.env}"
if [[ ! -f "$env_file" ]]; then
  echo "new-secrets.sh: no env file at $env_file (compose/.env is in git: restore it with \`git checkout compose/.env\`)" >&2
  exit 2
fi

# `pw` and 24 random bytes as 48 hex digits: nothing a shell or a Redis ACL rule reads specially. The letters first
# matter: nats-server parses an environment variable's value as a config value, so a bare `2e05…` would be refused
# as a malformed number.
random_secret() {
  if command -v openssl >/dev/null 2>&1; then
    printf 'pw%s\n' "$(openssl rand -hex 24)"
  elif command -v node >/dev/null 2>&1; then
    node -e 'process.stdout.write("pw" + require("node:crypto").randomBytes(24).toString("hex") + "\n")'
  else
    echo "new-secrets.sh: needs openssl or node to make random passwords" >&2
    return 1
  fi
}

declare -A fresh=()
for name in "${NAMES[@]}"; do
  fresh[$name]="$(random_secret)"
  if [[ ! "${fresh[$name]}" =~ ^pw[0-9a-f]{48}$ ]]; then
    echo "new-secrets.sh: could not make a random password" >&2
    exit 1
  fi
done

# Written beside the file, owner-only from the start, then moved over it: the file is never half written and the
# passwords are never readable by others, not even for a moment.
umask 077
tmp="$(mktemp "${env_file}.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
declare -A written=()
while IFS= read -r line || [[ -n "$line" ]]; do
  # Only a plain NAME= is looked up (a subscript with `$(…)` in it would be expanded by bash's -v).
  name=""
  [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)= ]] && name="${BASH_REMATCH[1]}"
  if [[ -n "$name" && -v "fresh[$name]" ]]; then
    # A name given twice keeps one line: docker compose would take the last, so there is no second value to keep.
    [[ -v "written[$name]" ]] && continue
    printf '%s=%s\n' "$name" "${fresh[$name]}"
    written[$name]=1
  else
    printf '%s\n' "$line"
  fi
done <"$env_file" >"$tmp"
for name in "${NAMES[@]}"; do
  [[ -v "written[$name]" ]] || printf '%s=%s\n' "$name" "${fresh[$name]}" >>"$tmp"
done
chmod 600 "$tmp"
mv -f "$tmp" "$env_file"
trap - EXIT
echo "new-secrets.sh: ${#NAMES[@]} new passwords in $env_file (mode 600); \`docker compose up -d\` restarts the services that use them"
