#!/bin/sh
# mreg-trace on the build host's own kernel: trace one io_uring buffer
# registration (uring-bad-register's, refused with EFAULT) and find it in
# the report. Where the host refuses BPF tracing (this project's VM host
# does, even to root), skip with mreg-trace's own reason.
#   tools/trace/host-check.sh MREG_TRACE URING_BAD_REGISTER
trace=$1 bad=$2 out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$trace" -o json -d 3 >"$out/report.json" 2>"$out/err" &
pid=$!
n=0
until grep -q ready "$out/err" 2>/dev/null; do
	if ! kill -0 $pid 2>/dev/null; then
		echo "skip: $(grep mreg-trace: "$out/err" | tail -1)"
		exit 77
	fi
	n=$((n + 1))
	[ $n -lt 100 ] || { echo "mreg-trace not ready in 10 s"; exit 1; }
	sleep 0.1
done
"$bad" >/dev/null
wait $pid || { cat "$out/err"; exit 1; }
grep uring-bad-regis "$out/report.json" | grep -q '"EFAULT": 1' ||
	{ cat "$out/report.json"; echo "the refused registration is not in the report"; exit 1; }
echo "mreg-trace on the host: the refused registration counted as EFAULT"
