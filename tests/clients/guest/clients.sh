# Real clients in the guest: QEMU starting a passthrough VM, fio with
# registered buffers. ". /mreg/clients.sh" after /mreg/lib.sh.
# shellcheck shell=dash
#
# Shared by the tests (tests/clients/tests/) and the bench
# (bench/clients.sh): one way to set the folio policy of a backing, to
# start QEMU, to find and verify a client's buffer, and to time the
# kernel's side of its registration.

# MREG_QEMU_* and MREG_FIO_* as tests/clients/run.sh was given them.
# shellcheck disable=SC1091
[ -r /mreg/clients.env ] && . /mreg/clients.env

# pid-folios finds libmreg through its RUNPATH, the host's build tree,
# which the harness copies to the same path; a tree under /tmp is hidden
# by the guest's own /tmp, so the copy in /mreg/bin comes first.
export LD_LIBRARY_PATH=/mreg/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

TRACEFS=/sys/kernel/tracing
THP=/sys/kernel/mm/transparent_hugepage
QEMU=/opt/qemu/qemu
EDU_FW=/opt/qemu/edu-fw.bin
HUGE_TMPFS=/mnt/mreg-huge
EDU_SLOT=5

# ---- folio policy -------------------------------------------------------

# Every mTHP size to never, then the one a backing asks for.
thp_only() {
	local want=$1 d
	echo never >"$THP/enabled"
	# Sizes the kernel lists but will not take (order 1 for anonymous
	# memory on some kernels) refuse the write: nothing to turn off.
	for d in "$THP"/hugepages-*kB; do
		[ -d "$d" ] || continue
		echo never 2>/dev/null >"$d/enabled"
		[ -e "$d/shmem_enabled" ] && echo never 2>/dev/null >"$d/shmem_enabled"
	done
	echo never >"$THP/shmem_enabled"
	case $want in
	4k) ;;
	2m) echo always >"$THP/enabled"
		[ -d "$THP/hugepages-2048kB" ] && echo inherit >"$THP/hugepages-2048kB/enabled" ;;
	*) [ -d "$THP/hugepages-$want" ] || return 1
		echo always >"$THP/hugepages-$want/enabled" ;;
	esac
	# khugepaged would collapse the mTHP layout behind the measurement.
	echo 0 >"$THP/khugepaged/defrag" 2>/dev/null || true
}

# The folio layout a backing should give, as pid-folios checks it.
backing_expect() {
	case $1 in
	4k | memfd) echo 4k ;;
	64k) echo 64k ;;
	2m-pmd) echo 2m-pmd ;;
	2m-pte) echo 2m-pte ;;
	esac
}

# QEMU's RAM for backing $1 of $2 MiB: sets the policy, prints the
# -object and -machine arguments. 2m-pte: QEMU maps its RAM where it
# likes, and anonymous memory there cannot be PTE-mapped without QEMU's
# help; a tmpfs file of PMD-sized folios (huge=always, written in first)
# mapped at an offset no PMD can map (offset=4k, align=2M) is the way a
# user gets 2 MB folios under PTEs from QEMU.
qemu_ram_args() {
	local backing=$1 mib=$2 common
	common="id=ram0,size=${mib}M,prealloc=on"
	case $backing in
	4k) thp_only 4k && echo "-object memory-backend-ram,$common" ;;
	64k) thp_only 64kB && echo "-object memory-backend-ram,$common" ;;
	2m-pmd) thp_only 2m && echo "-object memory-backend-ram,$common" ;;
	memfd) thp_only 4k && echo "-object memory-backend-memfd,$common,share=on" ;;
	2m-pte)
		thp_only 4k
		mkdir -p "$HUGE_TMPFS"
		if grep -q " $HUGE_TMPFS " /proc/mounts; then
			mount -o remount,size=$((mib + 8))M "$HUGE_TMPFS" || return 1
		else
			mount -t tmpfs -o huge=always,size=$((mib + 8))M none "$HUGE_TMPFS" || return 1
		fi
		rm -f "$HUGE_TMPFS/ram"
		dd if=/dev/zero of="$HUGE_TMPFS/ram" bs=2M count=$((mib / 2 + 1)) 2>/dev/null || return 1
		echo "-object memory-backend-file,$common,mem-path=$HUGE_TMPFS/ram,share=on,offset=4096,align=2M"
		;;
	*) return 1 ;;
	esac
	echo "-machine memory-backend=ram0"
}

qemu_ram_cleanup() { rm -f "$HUGE_TMPFS/ram"; }

# ---- edu on vfio-pci ----------------------------------------------------

find_edu() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x11e8 ] &&
			echo "${d##*/}" && return 0
	done
	return 1
}

edu_to_vfio() {
	local dev=/sys/bus/pci/devices/$1
	[ "$(basename "$(readlink "$dev/driver" 2>/dev/null)")" = vfio-pci ] && return 0
	[ -e "$dev/driver" ] && echo "$1" >"$dev/driver/unbind"
	echo vfio-pci >"$dev/driver_override"
	echo "$1" >/sys/bus/pci/drivers_probe
	[ "$(basename "$(readlink "$dev/driver")")" = vfio-pci ]
}

edu_release() {
	local dev=/sys/bus/pci/devices/$1
	[ -e "$dev/driver" ] && echo "$1" >"$dev/driver/unbind"
	echo >"$dev/driver_override"
}

# Why QEMU's iommufd backend cannot run on this kernel, or nothing.
iommufd_missing() {
	load_modules iommufd >/dev/null 2>&1 || true
	[ -c /dev/iommu ] || { echo "the kernel has no IOMMUFD (/dev/iommu)"; return 0; }
	ls "/sys/bus/pci/devices/$1/vfio-dev/" 2>/dev/null | grep -q vfio ||
		echo "the kernel has no VFIO device cdev (CONFIG_VFIO_DEVICE_CDEV)"
}

# -device (and -object) arguments for backend type1 or iommufd.
qemu_vfio_args() {
	case $1 in
	type1) echo "-device vfio-pci,host=$2,addr=$EDU_SLOT" ;;
	iommufd) echo "-object iommufd,id=iommufd0 -device vfio-pci,host=$2,addr=$EDU_SLOT,iommufd=iommufd0" ;;
	esac
}

# Start a passthrough VM paused: QEMU has created the machine, realized
# vfio-pci and DMA-mapped all its RAM before its monitor answers. Its
# guest is edu-fw (the firmware that drives edu's DMA and ends QEMU
# through isa-debug-exit). Sets QEMU_PID; the monitor is fd 3. Marks
# "exec" and "ready" in the trace, for ktrace_between.
#   qemu_vm_start BACKEND BACKING MIB BDF OUTPREFIX [run-as-prefix...]
qemu_vm_start() {
	local backend=$1 backing=$2 mib=$3 bdf=$4 out=$5 ram n
	shift 5
	ram=$(qemu_ram_args "$backing" "$mib") || return 1
	rm -f /tmp/qemu-monitor && mkfifo /tmp/qemu-monitor
	ktrace_mark exec 2>/dev/null
	# shellcheck disable=SC2046 # argument lists
	"$@" "$QEMU" -machine q35 -accel tcg -S -display none -nodefaults \
		-no-user-config -m "${mib}M" $ram $(qemu_vfio_args "$backend" "$bdf") \
		-bios "$EDU_FW" -device isa-debug-exit,iobase=0xf4,iosize=4 \
		-serial "file:$out.serial" -monitor stdio \
		</tmp/qemu-monitor >"$out.monitor" 2>"$out.log" &
	QEMU_PID=$!
	exec 3>/tmp/qemu-monitor
	echo "info status" >&3
	n=0
	until grep -q "VM status" "$out.monitor" 2>/dev/null; do
		kill -0 "$QEMU_PID" 2>/dev/null || { cat "$out.log"; return 1; }
		n=$((n + 1))
		[ $n -lt 6000 ] || { echo "QEMU never answered its monitor"; return 1; }
		sleep 0.1
	done
	ktrace_mark ready 2>/dev/null
	return 0
}

# Let the paused VM run edu-fw; its exit status says what the DMA found
# (33: every transfer matched).
qemu_vm_run() {
	local rc
	echo cont >&3
	wait "$QEMU_PID"
	rc=$?
	exec 3>&-
	rm -f /tmp/qemu-monitor
	return $rc
}

# ---- the kernel's own clock on the registration syscalls ----------------

# A kprobe on the syscall's entry (its second argument, regs->si, is the
# ioctl command or the io_uring_register opcode) and a kretprobe on its
# return, for the processes under set_event_pid and their threads. The
# kernel timestamps both: the duration is the kernel's, not the client's
# and not an estimate. x86-64: regs->si is at offset 104 of pt_regs.
ktrace_on() {
	local name=$1 syscall=$2 filter=$3
	[ -e "$TRACEFS/kprobe_events" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null
	[ -e "$TRACEFS/kprobe_events" ] || return 1
	ktrace_off
	echo "p:mreg/${name}_in __x64_sys_$syscall arg=+104(%di):u64" >>"$TRACEFS/kprobe_events" || return 1
	echo "r:mreg/${name}_out __x64_sys_$syscall ret=\$retval" >>"$TRACEFS/kprobe_events" || return 1
	echo "$filter" >"$TRACEFS/events/mreg/${name}_in/filter" || return 1
	echo 1 >"$TRACEFS/options/event-fork"
	echo 16384 >"$TRACEFS/buffer_size_kb"
	echo >"$TRACEFS/trace"
	echo 1 >"$TRACEFS/events/mreg/enable"
}

# "$KTRACE_EXEC prog args &": prog runs traced, its pid (and its
# threads') in set_event_pid before it starts, and $! is its pid.
KTRACE_EXEC=/mreg/ktrace-exec

ktrace_off() {
	[ -d "$TRACEFS/events/mreg" ] && echo 0 >"$TRACEFS/events/mreg/enable"
	echo >"$TRACEFS/set_event_pid" 2>/dev/null
	echo >"$TRACEFS/kprobe_events" 2>/dev/null
	true
}

# A named mark in the trace, on the kernel's clock (ktrace_between).
ktrace_mark() { echo "mreg-mark $1" >"$TRACEFS/trace_marker"; }

# Microseconds from mark $1 to mark $2.
ktrace_between() {
	awk -v a="mreg-mark $1" -v b="mreg-mark $2" '
	index($0, a) || index($0, b) {
		for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i; break }
		sub(/:$/, "", ts)
		if (index($0, a)) t0 = ts; else t1 = ts
	}
	END { if (t0 != "" && t1 != "") printf "%d\n", (t1 - t0) * 1e6 + 0.5 }' "$TRACEFS/trace"
}

# Each traced call: "tid us arg ret", its duration in microseconds from the
# kernel's timestamps (the trace clock prints microseconds).
ktrace_calls() {
	awk '
	/_in: / || /_out: / {
		task = $1; sub(/.*-/, "", task)
		for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i; break }
		sub(/:$/, "", ts)
		if ($0 ~ /_in: /) {
			a = $0; sub(/.*arg=/, "", a); sub(/ .*/, "", a)
			start[task] = ts; arg[task] = a
		} else if (task in start) {
			r = $0; sub(/.*ret=/, "", r); sub(/ .*/, "", r)
			printf "%s %d %s %s\n", task, (ts - start[task]) * 1e6 + 0.5, arg[task], r
			delete start[task]
		}
	}' "$TRACEFS/trace"
}

# ---- a client's buffer --------------------------------------------------

# pid-folios PID BYTES EXPECT: the mapping of exactly BYTES in PID, its
# folios verified exactly against EXPECT; prints the histogram.
client_folios() { pid-folios "$@"; }

# Every pin taken is released. Some are dropped by deferred work after
# the client exits (io_uring tears rings down from a workqueue), so this
# waits up to 10 s, as the harness does, before calling it a leak.
pins_balanced() {
	local a r i=0
	while :; do
		echo 1 >/proc/sys/vm/stat_refresh 2>/dev/null
		a=$(awk '$1 == "nr_foll_pin_acquired" { print $2 }' /proc/vmstat)
		r=$(awk '$1 == "nr_foll_pin_released" { print $2 }' /proc/vmstat)
		[ "$a" = "$r" ] && return 0
		[ $i -ge 50 ] && break
		i=$((i + 1))
		sleep 0.2
	done
	echo "pins: $a acquired, $r released"
	return 1
}
