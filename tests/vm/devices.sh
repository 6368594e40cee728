# Device bring-up shared by mreg's guest tests and the guest bench
# (sourced after /mreg/lib.sh; busybox sh).

# libmreg.so travels in the payload's bin/: the build tree's own path,
# which the binaries' RUNPATH names, may sit under a guest mount (/tmp).
export LD_LIBRARY_PATH=/mreg/bin

# An RDMA device: soft-RoCE on lo unless one exists. Prints its name and
# sets MREG_RXE_ADDED when it made one, for rxe_down.
rxe_up() {
	local dev
	dev=$(ls /sys/class/infiniband/ 2>/dev/null | head -n 1)
	[ -n "$dev" ] && echo "$dev" && return 0
	# rxe's ICRC needs crc32 from the crypto API up to 6.x: not a
	# modules.dep edge. 7.x's rxe uses the crc32 library, and has none.
	load_modules crc32_generic >/dev/null 2>&1 || true
	load_modules ib_core ib_uverbs rdma_rxe >&2 || return 1
	rdma link add mreg_rxe type rxe netdev lo >&2 || return 1
	MREG_RXE_ADDED=1
	echo mreg_rxe
}

# Leave lo free for the harness's own rxe test.
rxe_down() {
	[ -n "${MREG_RXE_ADDED:-}" ] && rdma link delete mreg_rxe
	MREG_RXE_ADDED=
}

# qemu's edu device (1234:11e8) on vfio-pci; prints its PCI address.
edu_vfio() {
	local dev drv
	load_modules vfio vfio_iommu_type1 vfio_pci >&2 || return 1
	for dev in /sys/bus/pci/devices/*; do
		[ "$(cat "$dev/vendor"):$(cat "$dev/device")" = 0x1234:0x11e8 ] || continue
		drv=$(basename "$(readlink "$dev/driver" 2>/dev/null)" 2>/dev/null)
		if [ "$drv" != vfio-pci ]; then
			echo vfio-pci >"$dev/driver_override"
			[ -n "$drv" ] && echo "${dev##*/}" >"$dev/driver/unbind"
			echo "${dev##*/}" >/sys/bus/pci/drivers_probe
		fi
		echo "${dev##*/}"
		return 0
	done
	return 1
}

# A CPU-bound block device for O_DIRECT: null_blk without memory backing.
nullblk_up() {
	[ -b /dev/nullb0 ] || load_modules null_blk >&2 || return 1
	[ -b /dev/nullb0 ] && echo /dev/nullb0
}

# Every registration path the reliability tests walk: rxe, edu on
# vfio-pci, mreg.ko and the memory cgroup; a missing one is reported by
# the test itself, not fatal here.
reliability_paths_up() {
	rxe_up >/dev/null || echo "no rxe: verbs not run"
	MREG_VFIO_DEVICE=$(edu_vfio) && export MREG_VFIO_DEVICE ||
		echo "no edu on vfio-pci: vfio and iommufd not run"
	load_modules iommufd >/dev/null 2>&1 || true
	[ -e /dev/mreg ] || [ ! -e /mreg/ko/mreg.ko ] ||
		insmod /mreg/ko/mreg.ko || echo "insmod mreg.ko failed"
	[ -e /sys/fs/cgroup/cgroup.controllers ] ||
		mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null ||
		echo "no cgroup v2: the OOM case not run"
}
