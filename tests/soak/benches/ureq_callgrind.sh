#!/usr/bin/env bash
# Instructions per GET of the client thread for each way of tests/soak/benches/ureq_probe.rs.
# Usage: tests/soak/benches/ureq_callgrind.sh [ways...]
#   (default: bare bare-timeout backon backstop backstop-abort backstop-gates backstop-events
#   backstop-budget; KEEP and DUMP_INSTR: see common/probe_callgrind.sh)
exec "$(dirname "${BASH_SOURCE[0]}")/common/probe_callgrind.sh" ureq_probe \
  "bare bare-timeout backon backstop backstop-abort backstop-gates backstop-events backstop-budget" "$@"
