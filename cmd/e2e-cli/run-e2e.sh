#!/usr/bin/env bash
# Build cmd/e2e-cli and run Segment's sdk-e2e-tests suite against it (docs/E2E.md).
#
#   cmd/e2e-cli/run-e2e.sh [arguments for the suite's run-tests.sh, e.g. --suite basic]
#
# E2E_TESTS_DIR: the sdk-e2e-tests checkout (default: a sibling of this repository).
# E2E_CLI_TIMEOUT: the CLI's --timeout, the bound on one run (unset: the CLI's default, 5m).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
suite="${E2E_TESTS_DIR:-$root/../sdk-e2e-tests}"
bin="$root/bin/e2e-cli"

if [[ ! -x "$suite/scripts/run-tests.sh" ]]; then
	echo "run-e2e.sh: no sdk-e2e-tests checkout at $suite (set E2E_TESTS_DIR)" >&2
	exit 2
fi

echo "building $bin" >&2
(cd "$root" && go build -o "$bin" ./cmd/e2e-cli)

cd "$suite"
exec ./scripts/run-tests.sh \
	--sdk-dir "$here" \
	--cli "$bin${E2E_CLI_TIMEOUT:+ --timeout $E2E_CLI_TIMEOUT}" \
	"$@"
