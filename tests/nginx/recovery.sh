#!/usr/bin/env bash
# The origin gate's recovery against nginx (issue 27): the demo sends GETs at a steady rate
# (open loop, `--rate`) through each client, nginx answers `503 Retry-After: 3` for a window,
# and nginx's access log shows what reached it per 100 ms: during the outage, and in the
# first 3 s from the first 200 after it (the recovery the clients see: a gate obeys the last
# `Retry-After`, which may reach past the outage's end), against the steady rate.
#
# Usage: tests/nginx/recovery.sh [clients...]   (default: ureq tokio reqwest smol)
# Env:   RATE (requests/s, default 200), OUTAGE_AT (s, default 4), OUTAGE (s, default 6),
#        SECONDS_TOTAL (default 16), PORT (default 8089)
# Needs nginx (`apt-get install nginx-light`); CI does not run this. Prints a markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rate="${RATE:-200}"; outage_at="${OUTAGE_AT:-4}"; outage="${OUTAGE:-6}"
total="${SECONDS_TOTAL:-16}"; port="${PORT:-8089}"
clients=("${@:-ureq tokio reqwest smol}"); read -r -a clients <<<"${clients[*]}"
command -v nginx >/dev/null || { echo "nginx is missing: apt-get install nginx-light" >&2; exit 2; }

cargo build -q --release -p backstop-tests --example demo --manifest-path "$root/Cargo.toml"
demo="$root/target/release/examples/demo"
dir="$(mktemp -d)"
# nginx's workers drop root: they must see the flag file.
chmod 755 "$dir"
trap 'kill "$(cat "$dir/nginx.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$dir"' EXIT
sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$port|g" -e "s|@RATE@|$rate|g" \
    "$root/tests/nginx/nginx.conf.template" >"$dir/nginx.conf"
nginx -c "$dir/nginx.conf" -p "$dir" &
sleep 1

echo "| client | gate | requests in the outage | 503s | first 200 after the outage (s) | steady per 100 ms | peak per 100 ms, 3 s from that 200 | requests in its 1st s | operations: statuses and reasons |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
for client in "${clients[@]}"; do
    for gate in on off; do
        : >"$dir/access.log"
        kill -USR1 "$(cat "$dir/nginx.pid")" # reopen the log
        sleep 0.2
        flags=(--url "http://127.0.0.1:$port/outage" --client "$client" --repeat $((rate * total))
               --concurrency 1024 --rate "$rate" --max-elapsed 15)
        [ "$gate" = on ] && flags+=(--origin-gate)
        "$demo" "${flags[@]}" >"$dir/summary.json" 2>&1 &
        demo_pid=$!
        sleep "$outage_at"; start=$(date +%s.%N); touch "$dir/outage"
        sleep "$outage"; end=$(date +%s.%N); rm -f "$dir/outage"
        wait "$demo_pid" || true
        python3 - "$dir/access.log" "$start" "$end" "$rate" "$client" "$gate" "$dir/summary.json" <<'PY'
import json, sys
log, start, end, rate, client, gate, summary = sys.argv[1:]
start, end, rate = float(start), float(end), float(rate)
times = [(float(l.split()[0]), l.split()[1]) for l in open(log) if l.strip()]
during = sum(1 for t, _ in times if start <= t < end)
s503 = sum(1 for t, s in times if s == '503')
# The recovery as the clients see it: the first 200 at or after the outage's end (a gate
# obeys the last Retry-After, which may reach past the end by up to its 3 s).
back = min((t for t, s in times if t >= end and s == '200'), default=end)
bins = {}
for t, _ in times:
    if back <= t < back + 3:
        bins[int((t - back) * 10)] = bins.get(int((t - back) * 10), 0) + 1
peak = max(bins.values() or [0])
first = sum(1 for t, _ in times if back <= t < back + 1)
try:
    line = [l for l in open(summary) if l.startswith('{"')][-1]
    s = json.loads(line)
    ops = f"{s.get('statuses')} {s.get('reasons')}"
except Exception as e:
    ops = f"(no summary: {e})"
print(f"| {client} | {gate} | {during} | {s503} | {back - end:.2f} | {rate / 10:.0f} | {peak} ({peak / (rate / 10):.2f}x) | {first} | {ops} |")
PY
    done
done
