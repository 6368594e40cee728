#!/usr/bin/env bash
# Build the payload (gup_test, foliobench, batchedge from the kernel tree)
# and run the batchedge guest test on the stock, then the patched kernel.
# The verdicts are the MREG-RESULT lines; results in build/kernel/results/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$ROOT/kernel/build.sh" selftests
rc=0
for v in stock patched; do
	out=$ROOT/build/kernel/results/edges-$v
	rm -rf "$out"
	# A failure on one kernel must not hide the other kernel's result.
	"$ROOT/tests/guest/mreg-vm" run --kernel "$ROOT/build/kernel/$v/bzImage" \
		--modules "$(ls -d "$ROOT"/build/kernel/$v/modules/lib/modules/* | head -1)" \
		--payload "$ROOT/build/kernel/payload" --tests batchedge \
		--no-builtin --mem 3G --timeout 3000 --test-timeout 2400 \
		--out "$out" || rc=1
	grep -a 'MREG-RESULT' "$out/console.log" | sed "s/^/$v: /" || true
done
exit "$rc"
