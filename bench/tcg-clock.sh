# shellcheck shell=bash
# Sourced by the guest benchmarks. Under TCG the guest's clock follows the
# host's by default, so every timing carries whatever else the host ran
# (run-to-run spreads of 2-3x were seen here). With qemu's -icount the
# guest clock advances by 2^N ns per executed guest instruction: a timing
# becomes a count of the instructions the guest executed, identical from
# run to run and independent of host load, which is what a stock-vs-patched
# ratio needs. It does not weigh an atomic or a cache miss more than an add,
# so it is not a native-hardware time. MREG_VM_ICOUNT=off restores the host
# clock.
export MREG_VM_ICOUNT=${MREG_VM_ICOUNT:-0}

tcg_clock_label() {
	case $MREG_VM_ICOUNT in
	off) echo "qemu TCG, host clock" ;;
	*) echo "qemu TCG, icount clock (1 guest instruction = $((1 << MREG_VM_ICOUNT)) ns)" ;;
	esac
}
MREG_TCG_CLOCK=$(tcg_clock_label)
export MREG_TCG_CLOCK
