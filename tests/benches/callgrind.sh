#!/usr/bin/env bash
# Instructions per GET for bare ureq and backstop::ureq (see tests/examples/callgrind_probe.rs).
# Usage: tests/benches/callgrind.sh [modes...]   (default: bare same adapter abort)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cargo build -q --release -p backstop-tests --example callgrind_probe
bin="${CARGO_TARGET_DIR:-target}/release/examples/callgrind_probe"
out=$(mktemp -d)
"$bin" "${SERVE:-serve}" > "$out/addr" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 50); do [ -s "$out/addr" ] && break; sleep 0.1; done
addr=$(head -1 "$out/addr")
for mode in "${@:-bare same adapter abort}"; do
  for m in $mode; do
    for n in 200 1200; do
      valgrind --tool=callgrind --callgrind-out-file="$out/$m.$n.out" "$bin" "$m" "$n" "$addr" \
        >/dev/null 2>"$out/$m.$n.log"
    done
    a=$(grep -o 'Collected : [0-9]*' "$out/$m.200.log" | awk '{print $3}')
    b=$(grep -o 'Collected : [0-9]*' "$out/$m.1200.log" | awk '{print $3}')
    echo "$m: $(( (b - a) / 1000 )) instructions per GET"
  done
done
