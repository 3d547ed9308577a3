#!/usr/bin/env bash
# Instructions per GET of the client thread for each way of tests/soak/benches/tower_probe.rs.
# Usage: tests/soak/benches/tower_callgrind.sh [ways...]
#   (default: every way: bare bare-timeout tower-retry tower-retry-timeout tower-resilience-timeout backstop
#   backstop-hedging backstop-gates backstop-events backstop-budget; KEEP and DUMP_INSTR: see
#   common/probe_callgrind.sh)
exec "$(dirname "${BASH_SOURCE[0]}")/common/probe_callgrind.sh" tower_probe \
  "bare bare-timeout tower-retry tower-retry-timeout tower-resilience-timeout backstop backstop-hedging backstop-gates backstop-events backstop-budget" "$@"
