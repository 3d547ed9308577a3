#!/usr/bin/env bash
# Instructions per unary call for bare tonic and backstop::grpc (see tests/examples/grpc_probe.rs).
# Usage: tests/benches/grpc_callgrind.sh [ways...]   (default: bare backstop)
# The client runs alone under callgrind (the greeter is another process); its runtime is
# current-thread, but tonic's channel drives the connection on a task of its own and hyper's
# pool may spawn: every thread's instructions are counted (callgrind's total).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cargo build -q --release -p backstop-tests --example grpc_probe
bin="${CARGO_TARGET_DIR:-target}/release/examples/grpc_probe"
out=$(mktemp -d)
"$bin" serve > "$out/url" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 50); do [ -s "$out/url" ] && break; sleep 0.1; done
url=$(head -1 "$out/url")
for way in "${@:-bare backstop}"; do
  for w in $way; do
    for n in 200 1200; do
      valgrind --tool=callgrind --callgrind-out-file="$out/$w.$n.out" "$bin" "$w" "$n" "$url" \
        >/dev/null 2>"$out/$w.$n.log"
    done
    a=$(grep -o 'Collected : [0-9]*' "$out/$w.200.log" | awk '{print $3}')
    b=$(grep -o 'Collected : [0-9]*' "$out/$w.1200.log" | awk '{print $3}')
    echo "$w: $(( (b - a) / 1000 )) instructions per call"
  done
done
