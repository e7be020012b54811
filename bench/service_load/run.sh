#!/usr/bin/env bash
# The reference checkout service under load: wrk (Debian's `wrk`) posting new
# checkouts on distinct commands at 1, 16 and 64 concurrent connections, against the
# service's release build, the stub provider (answering at once) and the Firestore
# emulator, all on this machine. Prints wrk's latency and throughput per level and
# the CPU each process used per request (from /proc/<pid>/stat). Every answer must
# be 200 (a non-2xx count is printed).
#
#   bash bench/service_load/run.sh              # 10 s per level
#   SECONDS_PER_LEVEL=30 bash bench/service_load/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "install wrk (apt-get install wrk)" >&2; exit 1; }
seconds=${SECONDS_PER_LEVEL:-10}
cargo build --release --quiet --bin command-journal --bin checkout-service --bin stub-provider
bin=target/release
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fs=$(free_port); stub=$(free_port); svc=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
"$bin/command-journal" emulator --port "$fs" >/tmp/service_load.emulator.log 2>&1 & pids+=($!)
"$bin/stub-provider" --port "$stub" >/tmp/service_load.stub.log 2>&1 & pids+=($!)
for _ in $(seq 1 120); do
  (exec 3<>/dev/tcp/127.0.0.1/"$fs") 2>/dev/null && break; sleep 0.5
done
FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:9099 \
GOOGLE_CLOUD_PROJECT=demo-load JOURNAL_ENVIRONMENT=emulator \
PROVIDER_URL=http://127.0.0.1:$stub PROVIDER_NAME=stub PROVIDER_ACCOUNT=acct_load \
PROVIDER_MODE=test PROVIDER_API_VERSION=2026-01-01 PROVIDER_LOOKUP=durable PORT=$svc \
"$bin/checkout-service" >/tmp/service_load.service.log 2>&1 & service=$!; pids+=($service)
for _ in $(seq 1 120); do
  curl -sf "localhost:$svc/healthz" >/dev/null && break; sleep 0.5
done
export TOKEN=$("$bin/command-journal" dev-token --project demo-load --uid loadtest)
java=$(pgrep -f "cloud-firestore-emulator" | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
echo "| connections (wrk threads) | requests | req/s | p50 | p90 | p99 | non-2xx | socket errors | service CPU per request | emulator CPU per request | stub CPU per request |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
tag=1
for level in 1 16 64; do
  threads=$(( level < 2 ? 1 : 2 ))
  # Warm-up on commands of their own.
  RUN_TAG=$((tag++)) wrk -t1 -c1 -d2s -s bench/service_load/checkout.lua "http://127.0.0.1:$svc" >/dev/null
  s0=$(ticks "$service"); j0=$(ticks "$java"); p0=$(ticks "${pids[1]}")
  out=$(RUN_TAG=$((tag++)) wrk -t"$threads" -c"$level" -d"${seconds}s" --timeout 30s -s bench/service_load/checkout.lua "http://127.0.0.1:$svc")
  s1=$(ticks "$service"); j1=$(ticks "$java"); p1=$(ticks "${pids[1]}")
  line=$(grep RESULT <<<"$out")
  get() { sed -E "s/.*$1=([^ ]+).*/\1/" <<<"$line"; }
  n=$(get requests); secs=$(get seconds)
  per() { python3 -c "print(f'{($1)/$hz/max($n,1)*1e3:.2f} ms')"; }
  rate=$(python3 -c "print(f'{$n/$secs:.0f}')")
  echo "| $level ($threads) | $n | $rate | $(get p50_ms) ms | $(get p90_ms) ms | $(get p99_ms) ms | $(get non2xx) | $(get errors) | $(per "$s1-$s0") | $(per "$j1-$j0") | $(per "$p1-$p0") |"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc)"
