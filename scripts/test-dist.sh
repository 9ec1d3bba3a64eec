#!/usr/bin/env bash
# Runs every compiled test (dist/test) two at a time. TAP goes to stdout as before; a spec report goes
# to a file beside it, and when a test fails its "failing tests" section is printed last, so that the
# tail of a long run (all a CI log may keep) names the test that failed and why.
set -uo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp -t pdu-bridge-tests.XXXXXX)
# shellcheck disable=SC2046 # one argument per test file; the paths hold no spaces
node --test --test-concurrency=2 \
  --test-reporter=tap --test-reporter-destination=stdout \
  --test-reporter=spec --test-reporter-destination="$report" \
  $(find dist/test -name '*.test.js' | sort) "$@"
rc=$?
if [ "$rc" -ne 0 ]; then
  printf '\n=== failing tests on Node %s (spec reporter; full report in %s)\n' "$(node --version)" "$report"
  sed -n '/failing tests:/,$p' "$report" | head -400
else
  rm -f "$report"
fi
exit "$rc"
