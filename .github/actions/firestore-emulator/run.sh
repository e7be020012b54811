#!/usr/bin/env bash
# The shell steps of the firestore-emulator composite action (action.yml), runnable on
# their own; `.ci/run` runs start, check and stop on every CI run.
#
#   run.sh install   Java (default-jre-headless) when no java is found, and the official
#                    emulator (google-cloud-cli-firestore-emulator, Google's apt
#                    repository) unless its jar is already installed.
#   run.sh start     Starts the emulator's JVM in the background on HOST:PORT, waits
#                    until it answers Ok, prints HOST:PORT, and exports
#                    FIRESTORE_EMULATOR_HOST to later steps (through GITHUB_ENV, and
#                    GITHUB_OUTPUT `host`, when those are set).
#   run.sh check     `command-journal rules check RULES` against that emulator, saving
#                    the rules coverage report as $STATE/rules-coverage.html (its
#                    report in rules-report.json, its table in rules-check.log).
#   run.sh stop      Stops the JVM `start` started and waits until it is gone.
#
# Settings (environment): EMULATOR_HOST (default 127.0.0.1), EMULATOR_PORT (default: a
# free port), EMULATOR_RULES (a ruleset file: loaded at start, checked by `check`),
# COMMAND_JOURNAL (the CLI `check` runs; default `command-journal` on PATH),
# EMULATOR_STATE (where the pid, host, log and coverage report live; default
# $RUNNER_TEMP/firestore-emulator, else $TMPDIR/firestore-emulator),
# COMMAND_JOURNAL_EMULATOR_JAR (another emulator jar).
set -euo pipefail

STATE="${EMULATOR_STATE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/firestore-emulator}"
DEBIAN_JAR=/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar
MAIN_CLASS=com.google.cloud.datastore.emulator.firestore.CloudFirestore

say() { echo "firestore-emulator: $*" >&2; }
die() { say "$*"; exit 1; }

# True while process $1 runs (a zombie does not count).
alive() {
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $stat != Z* ]]
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The emulator jar: COMMAND_JOURNAL_EMULATOR_JAR, the Debian package's, or the Cloud SDK's.
find_jar() {
  if [ -n "${COMMAND_JOURNAL_EMULATOR_JAR:-}" ]; then
    [ -f "$COMMAND_JOURNAL_EMULATOR_JAR" ] || die "COMMAND_JOURNAL_EMULATOR_JAR names no file: $COMMAND_JOURNAL_EMULATOR_JAR"
    echo "$COMMAND_JOURNAL_EMULATOR_JAR"
    return 0
  fi
  if [ -f "$DEBIAN_JAR" ]; then
    echo "$DEBIAN_JAR"
    return 0
  fi
  if command -v gcloud >/dev/null 2>&1; then
    local root
    root=$(gcloud info --format='value(installation.sdk_root)' 2>/dev/null || true)
    local jar="$root/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
    if [ -n "$root" ] && [ -f "$jar" ]; then
      echo "$jar"
      return 0
    fi
  fi
  return 1
}

install() {
  if ! command -v java >/dev/null 2>&1; then
    as_root apt-get update -q
    as_root apt-get install -y -q default-jre-headless
  fi
  if find_jar >/dev/null; then
    say "emulator jar found: $(find_jar)"
    return 0
  fi
  if [ ! -f /etc/apt/sources.list.d/google-cloud-sdk.list ]; then
    curl -fsSL https://packages.cloud.google.com/apt/doc/apt-key.gpg \
      | as_root gpg --dearmor -o /usr/share/keyrings/cloud.google.gpg
    echo "deb [signed-by=/usr/share/keyrings/cloud.google.gpg] https://packages.cloud.google.com/apt cloud-sdk main" \
      | as_root tee /etc/apt/sources.list.d/google-cloud-sdk.list >/dev/null
  fi
  as_root apt-get update -q
  as_root apt-get install -y -q google-cloud-cli-firestore-emulator
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local host="${EMULATOR_HOST:-127.0.0.1}" port="${EMULATOR_PORT:-}" jar
  jar=$(find_jar) || die "no emulator jar: run \`run.sh install\` (or set COMMAND_JOURNAL_EMULATOR_JAR)"
  [ -n "$port" ] || port=$(free_port)
  case "$port" in
    '' | *[!0-9]*) die "EMULATOR_PORT must be a port number, not '$port'" ;;
  esac
  mkdir -p "$STATE"
  if [ -f "$STATE/pid" ] && alive "$(cat "$STATE/pid")"; then
    die "an emulator started here is still running (pid $(cat "$STATE/pid")): run \`run.sh stop\` first"
  fi
  local rules=()
  if [ -n "${EMULATOR_RULES:-}" ]; then
    [ -f "$EMULATOR_RULES" ] || die "EMULATOR_RULES names no file: $EMULATOR_RULES"
    rules=("--rules=$(cd "$(dirname "$EMULATOR_RULES")" && pwd)/$(basename "$EMULATOR_RULES")")
  fi
  # The JVM itself, not the gcloud wrapper (which forks, so stopping it leaves the JVM).
  nohup java -cp "$jar" "$MAIN_CLASS" start "--host=$host" "--port=$port" "${rules[@]}" \
    >"$STATE/emulator.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$STATE/pid"
  local address="$host:$port"
  case "$host" in *:*) address="[$host]:$port" ;; esac
  local deadline=$((SECONDS + 90))
  until [ "$(curl -fsS --max-time 2 "http://$address/" 2>/dev/null || true)" = "Ok" ]; do
    if ! alive "$pid"; then
      cat "$STATE/emulator.log" >&2
      rm -f "$STATE/pid"
      die "the emulator exited during start-up (is port $port in use?)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      cat "$STATE/emulator.log" >&2
      stop
      die "the emulator did not answer Ok within 90 s"
    fi
    sleep 0.2
  done
  echo "$address" >"$STATE/host"
  if [ -n "${GITHUB_ENV:-}" ]; then echo "FIRESTORE_EMULATOR_HOST=$address" >>"$GITHUB_ENV"; fi
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "host=$address" >>"$GITHUB_OUTPUT"; fi
  say "ready at $address (pid $pid); log $STATE/emulator.log"
  echo "$address"
}

check() {
  [ -f "$STATE/host" ] || die "no emulator started here: run \`run.sh start\` first"
  [ -n "${EMULATOR_RULES:-}" ] || die "EMULATOR_RULES names no ruleset to check"
  local cli="${COMMAND_JOURNAL:-command-journal}"
  command -v "$cli" >/dev/null 2>&1 || [ -x "$cli" ] \
    || die "no command-journal CLI at '$cli': set COMMAND_JOURNAL (cargo install --locked --path <command-journal>/cli)"
  # The table of every operation goes to a log, shown in full when the check fails.
  if ! "$cli" rules check "$EMULATOR_RULES" --emulator-host "$(cat "$STATE/host")" \
    --coverage-html "$STATE/rules-coverage.html" \
    >"$STATE/rules-report.json" 2>"$STATE/rules-check.log"; then
    cat "$STATE/rules-check.log" >&2
    die "rules check failed for $EMULATOR_RULES (report: $STATE/rules-report.json)"
  fi
  tail -n 1 "$STATE/rules-check.log" >&2
  say "rules check passed; coverage report $STATE/rules-coverage.html"
}

stop() {
  [ -f "$STATE/pid" ] || { say "nothing to stop"; return 0; }
  local pid
  pid=$(cat "$STATE/pid")
  kill "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 30))
  while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
  if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
  while alive "$pid"; do sleep 0.1; done
  rm -f "$STATE/pid" "$STATE/host"
  say "stopped (pid $pid)"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  check) check ;;
  stop) stop ;;
  *) die "usage: run.sh install|start|check|stop" ;;
esac
