#!/usr/bin/env bash
# Reproduces BENCHMARKS.md on a fresh clone: installs the Node.js peer's locked
# dependencies, runs the side-by-side comparison (one emulator, both sides
# alternating; release build of this crate), then the criterion benches of the
# pure core. Needs Node.js >= 20, npm, Java and the Firestore emulator (the Debian
# package google-cloud-cli-firestore-emulator), like the emulator tests.
#
#   bash bench/run.sh            # the whole table
#   bash bench/run.sh --quick    # a smoke run of the side-by-side (few rounds), no criterion
set -euo pipefail
cd "$(dirname "$0")/.."

(cd bench/node-peer && npm ci --no-audit --no-fund --ignore-scripts)

# Never reuse an emulator from the environment: the runner starts its own.
unset FIRESTORE_EMULATOR_HOST

cargo bench --bench side_by_side -- "$@"

if [[ " $* " != *" --quick "* ]]; then
  cargo bench --bench core
fi
