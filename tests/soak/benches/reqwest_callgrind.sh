#!/usr/bin/env bash
# Instructions per GET of the client thread for each way of tests/soak/benches/reqwest_probe.rs.
# Usage: tests/soak/benches/reqwest_callgrind.sh [ways...]
#   (default: every way: bare middleware-pass middleware-timeout reqwest-retry reqwest-own-retry
#   backon backstop backstop-no-timer backstop-hedging backstop-gates backstop-events
#   backstop-budget; KEEP and DUMP_INSTR: see common/probe_callgrind.sh)
exec "$(dirname "${BASH_SOURCE[0]}")/common/probe_callgrind.sh" reqwest_probe \
  "bare middleware-pass middleware-timeout reqwest-retry reqwest-own-retry backon backstop backstop-no-timer backstop-hedging backstop-gates backstop-events backstop-budget" "$@"
