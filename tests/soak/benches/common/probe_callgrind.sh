#!/usr/bin/env bash
# Instructions per GET of the client thread for each way of a per-GET probe
# (tests/soak/benches/<probe>.rs), called by reqwest_callgrind.sh and tower_callgrind.sh.
# Usage: probe_callgrind.sh <probe> "<default ways>" [ways...]
#   KEEP=dir keeps the profiles there (callgrind_annotate "$KEEP"/<way>.1200.*-01; where two
#   ways differ per GET: cg_per_get.py functions|callers|sites "$KEEP" <way> <way> ...);
#   DUMP_INSTR=yes records them per instruction (--dump-instr=yes) for that.
#   FEATURES=observe builds the probe with backstop's `tracing` and `metrics` on (nothing
#   installed to listen unless the way installs it).
# The probe's server runs in the same process, on its own thread: callgrind counts each thread
# apart (--separate-threads), and the first thread is the client. 200 and 1,200 GETs, the
# difference divided by 1,000: start-up excluded.
set -euo pipefail
probe=$1
defaults=$2
shift 2
cd "$(dirname "${BASH_SOURCE[0]}")/../../../.."
bin=$(cargo bench -p backstop-soak --bench "$probe" --no-run --message-format=json \
  ${FEATURES:+--features "$FEATURES"} 2>/dev/null \
  | grep -o "\"executable\":\"[^\"]*$probe[^\"]*\"" | cut -d'"' -f4)
if [[ -n "${KEEP:-}" ]]; then
  out=$KEEP
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
for way in "${@:-$defaults}"; do
  for w in $way; do
    for n in 200 1200; do
      rm -f "$out/$w.$n".*
      valgrind --tool=callgrind --separate-threads=yes --dump-instr="${DUMP_INSTR:-no}" \
        --callgrind-out-file="$out/$w.$n.%p" "$bin" --only "$w" "$n" >/dev/null 2>&1
    done
    a=$(grep '^summary:' "$out/$w".200.*-01 | awk '{print $2}')
    b=$(grep '^summary:' "$out/$w".1200.*-01 | awk '{print $2}')
    echo "$w: $(( (b - a) / 1000 )) instructions per GET"
  done
done
