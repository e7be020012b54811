#!/usr/bin/env bash
# The plant suite (bench/chaos/README.md, "Planted defects"): first the same form
# without a plant, which must hold (so that a failure below is the plant's); then every
# planted defect of chaos/plants.py, one run each, which must fail the oracle with the
# plant's own reason; then the table "planted defects caught of planted" on stdout
# (RELIABILITY.md keeps it), its last line the count. Exit 0 only when the control
# held and every plant was caught, and no run hit a harness error.
#
#   bash bench/chaos/plants.sh [--short | --quick] [more run.sh options]   # default --quick
#
# The service's and the journal's plants need the binaries of `cargo test
# --all-features` (CHAOS_PROFILE=debug, as .ci/run runs it), built with the test-only
# feature `plants`.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONDONTWRITEBYTECODE=1
form=(--quick)
case "${1:-}" in --short|--quick) form=("$1"); shift ;; esac
plants=$(python3 -c 'from bench.chaos.chaos.plants import PLANTS; print(" ".join(PLANTS))')
started=$(date +%s)
if ! control=$(bash bench/chaos/run.sh "${form[@]}" "$@" | tail -n 1); then
  echo "the ${form[*]} form without a plant did not hold: $control" >&2
  exit 1
fi
echo "no plant: the oracle holds ($(( $(date +%s) - started )) s)" >&2
caught=0
total=0
rows=()
for plant in $plants; do
  total=$((total + 1))
  started=$(date +%s)
  code=0
  line=$(bash bench/chaos/run.sh "${form[@]}" --plant "$plant" "$@" | tail -n 1) || code=$?
  seconds=$(( $(date +%s) - started ))
  row=$(PLANT="$plant" CODE="$code" SECONDS_TAKEN="$seconds" python3 -c '
import json, os, sys
from bench.chaos.chaos.plants import PLANTS
plant, code = os.environ["PLANT"], int(os.environ["CODE"])
try:
    r = json.loads(sys.stdin.read())
except ValueError:
    r = {}
where, reason, defect = PLANTS[plant]
ok = code == 1 and r.get("plantCaught") is True and r.get("harnessErrors") == 0
print(("caught" if ok else "MISSED") + f"|{plant}|{where}|{defect}|{reason} {r.get(reason)}|"
      + ", ".join(r.get("failures", [])) + "|%d|%s s" % (code, os.environ["SECONDS_TAKEN"]))
' <<<"$line")
  rows+=("$row")
  [[ $row == caught* ]] && caught=$((caught + 1))
  echo "plant $plant: ${row%%|*} (exit $code, ${seconds} s)" >&2
done
echo "| planted defect | where | the defect | caught by | every failure | exit | time |"
echo "|---|---|---|---|---|---:|---:|"
for row in "${rows[@]}"; do
  IFS='|' read -r verdict plant where defect reason failures code seconds <<<"$row"
  echo "| \`$plant\` ($verdict) | $where | $defect | \`$reason\` | $failures | $code | $seconds |"
done
echo "planted defects caught: $caught of $total (goal: all)"
[ "$caught" -eq "$total" ]
