#!/usr/bin/env bash
# The whole system under faults (bench/chaos/README.md): the Firestore emulator, the
# provider stand-in and its ledger, N checkout-service instances behind a round-robin
# balancer, fault proxies, clients, kills, skewed clocks and the recovery job; then
# the oracle. The last line is one JSON object; exit 0 only when the oracle holds.
#
#   bash bench/chaos/run.sh [--seed N] [--checkouts N] [--instances N] [more: --help]
#
# Builds and runs the release binaries, unless CHAOS_PROFILE=debug (then the debug
# binaries `cargo test --all-features` built are used as they are, as .ci/run does).
# A plant in the service or the journal (`--plant NAME`, chaos/plants.py) needs the
# service built with the test-only feature `plants`: the release build then adds it.
set -euo pipefail
cd "$(dirname "$0")/../.."
unset FIRESTORE_EMULATOR_HOST
profile=${CHAOS_PROFILE:-release}
features=()
previous=""
for arg in "$@"; do
  case "$previous:$arg" in
    --plant:forget_early|--plant:post_key_window_60s) ;;
    --plant:*) features=(--features plants) ;;
  esac
  case "$arg" in --plant=*) echo "give the plant as --plant NAME" >&2; exit 2 ;; esac
  previous=$arg
done
case "$profile" in
  release)
    cargo build --release --quiet -p command-journal-cli --bin command-journal
    cargo build --release --quiet -p command-journal-examples --bin checkout-service "${features[@]}"
    ;;
  debug)
    for bin in target/debug/command-journal target/debug/checkout-service; do
      [ -x "$bin" ] || { echo "$bin is missing: run cargo test --all-features (or cargo build --all-features --bins) first" >&2; exit 1; }
    done
    ;;
  *) echo "CHAOS_PROFILE must be release or debug" >&2; exit 2 ;;
esac
PYTHONDONTWRITEBYTECODE=1 exec python3 -m bench.chaos.chaos "$@" --bin "target/$profile"
