#!/usr/bin/env bash
# Instructions per GET of the client thread for each way of tests/soak/benches/reqwest_probe.rs.
# Usage: tests/soak/benches/reqwest_callgrind.sh [ways...]
#   (default: bare middleware-pass middleware-timeout reqwest-retry backstop backstop-no-timer)
# The probe's server runs in the same process, on its own thread: callgrind counts each thread
# apart (--separate-threads), and the first thread is the client. 200 and 1,200 GETs, the
# difference divided by 1,000: start-up excluded.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
bin=$(cargo bench -p backstop-soak --bench reqwest_probe --no-run --message-format=json 2>/dev/null \
  | grep -o '"executable":"[^"]*reqwest_probe[^"]*"' | cut -d'"' -f4)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for way in "${@:-bare middleware-pass middleware-timeout reqwest-retry backstop backstop-no-timer}"; do
  for w in $way; do
    for n in 200 1200; do
      valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/$w.$n.%p" \
        "$bin" --only "$w" "$n" >/dev/null 2>&1
    done
    a=$(grep '^summary:' "$out/$w".200.*-01 | awk '{print $2}')
    b=$(grep '^summary:' "$out/$w".1200.*-01 | awk '{print $2}')
    echo "$w: $(( (b - a) / 1000 )) instructions per GET"
  done
done
