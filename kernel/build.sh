#!/usr/bin/env bash
# Build the mreg guest kernels from Debian's linux-source-6.12 (6.12.117)
# or linux-source-7.3 (7.3.4), with the series for that base.
#
#   kernel/build.sh [--base 6.12|7.3] COMMAND...
#
# --base picks the tree and the series: 6.12 (the default: the LTS
# backport, kernel/series/6.12, built under build/kernel) or 7.3 (the
# series for upstream, kernel/series/7.3, built under build/kernel/7.3).
# "check" without --base checks both series.
#
#   kernel/build.sh source    install deps, unpack the tree to build/kernel/src
#   kernel/build.sh config    write the shared .config (defconfig + fragments)
#   kernel/build.sh stock     build the baseline kernel        -> build/kernel/stock
#   kernel/build.sh patched   build with the base's series applied -> build/kernel/patched
#   kernel/build.sh debug     patched + DEBUG_VM/PROVE_LOCKING/KASAN, from
#                             its own tree              -> build/kernel/debug
#   kernel/build.sh all       stock, patched and debug
#   kernel/build.sh prefix N  the first N patches only  -> build/kernel/pN
#   kernel/build.sh steps [FIRST-]LAST
#                             each step of the series from stock's objects,
#                             incrementally              -> build/kernel/pN
#   kernel/build.sh check     CI: series applies to a clean tree, each patch
#                             builds its touched objects, checkpatch --strict
#   kernel/build.sh cross arm64|i386
#                             the same per-patch build for arm64 with contpte
#                             and i386 with PAE (not in CI) -> build/kernel/cross-*
#   kernel/build.sh arm64|i386 [stock patched]
#                             a small kernel of each for arm64 (contpte) or
#                             i386 (PAE), booted under qemu TCG: batchedge,
#                             the gup_test matrix, kbench (not in CI; see
#                             kernel/tools/smallboot.sh) -> build/kernel/<t>-*
#   kernel/build.sh selftests gup_test, cow, gup_longterm, iommufd, foliobench
#                             from the same tree -> build/kernel/payload
#   kernel/build.sh bench [stock p1 ... patched]
#                             boot each kernel (default: stock, patched) in
#                             tests/guest/mreg-vm, run the kbench matrix,
#                             print a ratio table per step, with the kernel's
#                             instructions, atomics and memory accesses per
#                             page (kcount plugin; MREG_VM_PLUGIN_COUNTS=0
#                             leaves it out)
#   kernel/build.sh test [stock patched debug]
#                             the full kernel test on each kernel: the
#                             kernel's selftests, the batch-edge tests,
#                             rdma-core's and liburing's own tests,
#                             mreg.ko's suite and mreg's guest suite
#
# One source tree serves every variant: each variant has its own O= output
# directory, and the patch series is applied before a patched build and
# reversed right after, so stock and patched always come from the same tree
# and config. ccache (outside the clone) makes the patched build incremental:
# only the objects the series touches miss the cache.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KDIR=$ROOT/kernel
BASES="6.12 7.3"
# KBASE in the environment picks the base as --base does.
KBASE_ENV=${KBASE:-}
KBASE=${KBASE:-6.12}

# The source is pinned to the exact Debian upload, as the stock guest
# kernels are (tests/guest/lib/kernel.sh): the archive's linux-source-6.12
# moves with every point release (6.12.118 on 2026-12-02), and the series
# and every stock-vs-patched figure are against 6.12.117. 7.3 comes from
# trixie-backports through the same private apt state that fetches the
# stock guest kernels, so the host's apt configuration is never touched.
# 6.12 keeps build/kernel as its output directory, as before 7.3 existed.
select_base() {
	case $KBASE in
	6.12)
		KVER=6.12.117 SRC_PKG=linux-source-6.12
		SRC_VER=6.12.117-1~deb12u1 SRC_APT=host OUT=$ROOT/build/kernel
		;;
	7.3)
		KVER=7.3.4 SRC_PKG=linux-source-7.3
		SRC_VER=7.3.4-1~bpo13+1 SRC_APT=private
		OUT=$ROOT/build/kernel/7.3
		;;
	*) die "unknown base '$KBASE' (have: $BASES)" ;;
	esac
	SERIES_DIR=$KDIR/series/$KBASE
	SRC=$OUT/src
	TARBALL=$OUT/linux-source-$KVER.tar.xz
}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/mreg/ccache}
JOBS=${JOBS:-$(nproc)}
DEPS=(build-essential bc bison flex libelf-dev libssl-dev
      ccache cpio kmod rsync xz-utils git python3 libcap-dev)

log() { printf '[kernel] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# stock_apt: apt-get with the guest harness's private sources (trixie-
# backports for linux-source-7.3).
# shellcheck disable=SC2034 # read by kernel.sh's stock_apt
MREG_BUILD=$ROOT/build
# shellcheck source=tests/guest/lib/kernel.sh
. "$ROOT/tests/guest/lib/kernel.sh"

# Install only what is missing; apt-get update only when an install is due.
# The lock timeout matters: other helpers run apt on this machine too.
install_deps() {
	local missing=() p
	for p in "${DEPS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	log "installing: ${missing[*]}"
	apt-get -o DPkg::Lock::Timeout=900 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 \
		install -y -qq --no-install-recommends "${missing[@]}"
}

# apt-get download of the pinned source package, from the host's sources
# (6.12) or the private ones (7.3), updating the lists once if needed.
download_source() {
	local apt=(apt-get) want=$SRC_PKG=$SRC_VER
	[[ $SRC_APT == host ]] || apt=(stock_apt)
	"${apt[@]}" download -q "$want" ||
		{ "${apt[@]}" update -qq && "${apt[@]}" download -q "$want"; }
}

# The pinned source tarball, from the .deb that kmod/build.sh caches too.
source_tarball() {
	local debs=$ROOT/build/cache/debs deb
	[[ -f $TARBALL ]] && return 0
	mkdir -p "$debs" "$OUT"
	deb=$debs/${SRC_PKG}_${SRC_VER}_all.deb
	[[ -f $deb ]] || (cd "$debs" && download_source) >&2
	[[ -f $deb ]] || die "no $deb after apt-get download"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO "./usr/src/$SRC_PKG.tar.xz" >"$TARBALL.tmp"
	mv "$TARBALL.tmp" "$TARBALL"
}

# Unpack into $1 (a fresh directory) and check the version we get is the
# one the series is written against.

unpack_tree() {
	local dest=$1 ver
	source_tarball
	mkdir -p "$dest"
	tar -C "$dest" --strip-components=1 -xJf "$TARBALL"
	ver=$(make -s -C "$dest" kernelversion)
	[[ $ver == "$KVER" ]] || die "tree is $ver, expected $KVER"
}

cmd_source() {
	install_deps
	if [[ -f $SRC/.mreg-unpacked ]]; then
		return 0
	fi
	log "unpacking $TARBALL to $SRC"
	rm -rf "$SRC"
	unpack_tree "$SRC"
	touch "$SRC/.mreg-unpacked"
}

# The options the tests rely on, kept in sync with config/mreg.config: every
# one is checked after olddefconfig, since Kconfig silently drops an option
# whose dependencies are not met.
# Every =y/=m of the fragments must survive olddefconfig, and every "is
# not set" must stay off: a dependency Kconfig dropped would otherwise
# silently build a kernel without what a test relies on.
verify_config() {
	local cfg=$1 opt bad=0; shift
	for opt in $(grep -hE '^CONFIG_[A-Z0-9_]+=[ym]' "$@" | cut -d= -f1); do
		grep -qE "^$opt=[ym]" "$cfg" || { log "missing: $opt"; bad=1; }
	done
	for opt in $(grep -hoE '^# CONFIG_[A-Z0-9_]+ is not set' "$@" |
			awk '{print $2}'); do
		if grep -qE "^$opt=[ym]" "$cfg"; then
			log "should be off: $opt"
			bad=1
		fi
	done
	[[ $bad -eq 0 ]] || die "config $cfg lacks required options"
}

# defconfig + kvm_guest.config + our fragments, resolved by olddefconfig.
make_config() {
	local obj=$1; shift
	local frags=("$KDIR/config/mreg.config" "$@")
	mkdir -p "$obj"
	kmake "$obj" defconfig kvm_guest.config >/dev/null
	"$SRC"/scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" \
		"${frags[@]}" >/dev/null
	kmake "$obj" olddefconfig >/dev/null
	verify_config "$obj/.config" "${frags[@]}"
}

kmake() {
	local obj=$1; shift
	make -C "$SRC" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc" \
		-j"$JOBS" -s "$@"
}

cmd_config() {
	cmd_source
	make_config "$OUT/stock"
	log "config ok: $OUT/stock/.config"
}

series() {
	ls "$SERIES_DIR"/0[0-9][0-9][0-9]-*.patch 2>/dev/null |
		grep -v 0000-cover-letter || true
}

# Apply the series to the tree; a trap reverses it whatever happens, so
# the tree goes back to the pristine base for the next stock build. The
# applied patches are kept in the tree, and the revert uses those copies:
# the series in kernel/series may be edited while a long build runs.
apply_series() {
	local p applied=$SRC/.mreg-applied n=${1:-1000}
	[[ ! -d $applied ]] || revert_series
	mkdir -p "$applied"
	trap revert_series EXIT
	for p in $(series | head -n "$n"); do
		apply_patch "$p"
	done
}

apply_patch() {
	patch -d "$SRC" -p1 -s --forward <"$1" || die "cannot apply $1"
	cp "$1" "$SRC/.mreg-applied/"
}

revert_series() {
	local p applied=$SRC/.mreg-applied
	for p in $(ls "$applied"/*.patch 2>/dev/null | sort -r); do
		patch -d "$SRC" -p1 -s -R <"$p" || die "cannot revert $p"
		rm "$p"
	done
	rmdir "$applied" 2>/dev/null || true
	trap - EXIT
}

# Build one variant into $OUT/<name>: bzImage and modules_install tree.
build_variant() {
	local name=$1; shift
	local obj=$OUT/$name start=$SECONDS
	make_config "$obj" "$@"
	kmake "$obj" bzImage modules
	rm -rf "$obj/modules"
	kmake "$obj" INSTALL_MOD_PATH="$obj/modules" INSTALL_MOD_STRIP=1 \
		modules_install >/dev/null
	cp "$obj/arch/x86/boot/bzImage" "$obj/bzImage"
	log "$name: $obj/bzImage ($(kmake "$obj" kernelrelease)) in $((SECONDS - start)) s"
}

cmd_stock() {
	cmd_source
	build_variant stock
}

cmd_patched() {
	cmd_source
	apply_series
	build_variant patched
	revert_series
}

# The first N patches only, for the numbers in each patch's message: the
# io_uring patch alone, then GUP-fast on top, then slow GUP.
cmd_prefix() {
	local n=${1:?usage: kernel/build.sh prefix N}
	[[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || die "prefix: N must be a patch count"
	cmd_source
	apply_series "$n"
	build_variant "p$n"
	revert_series
}

# Every step of the series as a kernel of its own, for "kernel/build.sh
# bench stock p1 ... p19": kernel/build.sh steps [FIRST-]LAST (default: all).
# A cold build per step would be half an hour each here; instead one object
# directory starts as a copy of stock's (timestamps kept) and each patch in
# turn is applied and built incrementally, so a step costs what its patch
# touches (a few minutes; a patch to a header everything includes, such as
# include/linux/mm.h, rebuilds everything once). Each step gets
# $OUT/pN/{bzImage,modules}; when the last step is the whole series its
# object directory becomes $OUT/patched, as "kernel/build.sh patched"
# would have built it (same tree, same config).
cmd_steps() {
	local total first last n p obj=$OUT/steps-obj
	total=$(series | wc -l)
	[[ ${1:-1-$total} =~ ^([0-9]+-)?([0-9]+)$ ]] ||
		die "steps: usage: kernel/build.sh steps [FIRST-]LAST"
	last=${BASH_REMATCH[2]}
	first=${BASH_REMATCH[1]%-}
	first=${first:-$last}
	[[ -n ${1:-} ]] || first=1
	[[ $first -ge 1 && $first -le $last && $last -le $total ]] ||
		die "steps: $first-$last is not within 1-$total"
	cmd_source
	[[ -f $OUT/stock/bzImage ]] ||
		die "steps start from stock's objects: run kernel/build.sh stock"
	rm -rf "$obj"
	cp -a "$OUT/stock" "$obj"
	apply_series "$((first - 1))"
	for ((n = first; n <= last; n++)); do
		p=$(series | sed -n "${n}p")
		apply_patch "$p"
		step_build "$obj" "p$n"
	done
	revert_series
	if [[ $last -eq $total ]]; then
		rm -rf "$OUT/patched"
		mv "$obj" "$OUT/patched"
		cp "$OUT/p$last/bzImage" "$OUT/patched/bzImage"
		rm -rf "$OUT/patched/modules"
		cp -a "$OUT/p$last/modules" "$OUT/patched/modules"
		log "patched: $OUT/patched (the objects of p$last)"
	fi
}

# Build the tree as it stands in $1 and install it as the step $2.
step_build() {
	local obj=$1 dest=$OUT/$2 start=$SECONDS
	kmake "$obj" bzImage modules
	rm -rf "$dest"
	mkdir -p "$dest"
	kmake "$obj" INSTALL_MOD_PATH="$dest/modules" INSTALL_MOD_STRIP=1 \
		modules_install >/dev/null
	cp "$obj/arch/x86/boot/bzImage" "$dest/bzImage"
	cp "$obj/System.map" "$dest/System.map"
	gup_test_clock_returns "$obj/vmlinux" "$obj/System.map" \
		>"$dest/kcount-splits"
	log "$2: $dest/bzImage in $((SECONDS - start)) s"
}

# The debug variant has its own tree: its cold build takes over an hour
# here, and the shared tree must stay free (and pristine, with the series
# reverted) for stock and patched builds meanwhile.
cmd_debug() {
	SRC=$OUT/src-debug
	cmd_source
	apply_series
	build_variant debug "$KDIR/config/debug.config"
	revert_series
}

# CI check: a clean tree, each patch applied in turn, the objects the
# series touches rebuilt after every patch, checkpatch --strict on all.
# The objects of the C files patch $1 changes: each patch must build its own.
# (tools/, the selftests, is not kbuild's: the payload builds those.)
touched_objects() {
	sed -n 's|^+++ b/\(.*\)\.c$|\1.o|p' "$1" | grep -v '^tools/' || true
}

# What check builds after patch $1: the GUP and io_uring objects every
# patch may affect and the objects it touches, each once.
check_objects() {
	{ printf '%s\n' mm/gup.o io_uring/rsrc.o mm/memory.o
	  touched_objects "$1"; } | sort -u
}

cmd_check() {
	install_deps
	local tree=$OUT/check obj=$OUT/check-obj p n=0 start=$SECONDS
	rm -rf "$tree"
	unpack_tree "$tree"
	mkdir -p "$obj"
	make -C "$tree" O="$obj" -s defconfig kvm_guest.config >/dev/null
	"$tree"/scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" \
		"$KDIR/config/mreg.config" >/dev/null
	make -C "$tree" O="$obj" -s olddefconfig >/dev/null
	verify_config "$obj/.config" "$KDIR/config/mreg.config"
	make -C "$tree" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc" \
		-j"$JOBS" -s prepare
	for p in $(series); do
		n=$((n + 1))
		log "patch $n: $(basename "$p")"
		patch -d "$tree" -p1 -s --forward <"$p" || die "$p does not apply"
		# shellcheck disable=SC2046 # one word per object
		make -C "$tree" O="$obj" CC="ccache gcc" -j"$JOBS" -s \
			$(check_objects "$p") ||
			die "$p does not build"
		# FILE_PATH_CHANGES asks whether MAINTAINERS needs a new
		# file; the selftest the 7.3 series adds sits under an F:
		# pattern that already covers it (mm selftests).
		"$tree"/scripts/checkpatch.pl --strict --no-tree -q \
			--ignore FILE_PATH_CHANGES "$p" ||
			die "$p: checkpatch --strict"
	done
	[[ $n -gt 0 ]] || die "no patches in $SERIES_DIR"
	log "check ok: $KBASE, $n patches in $((SECONDS - start)) s"
}

# The selftests' uapi headers come from the tree itself, since Debian 12's
# linux-libc-dev (6.1) lacks what vm_util.c uses (PAGEMAP_SCAN).
tree_headers() {
	local obj=$OUT/headers
	[[ -f $obj/usr/include/linux/fs.h ]] && return 0
	mkdir -p "$obj"
	make -C "$SRC" O="$obj" -s headers_install INSTALL_HDR_PATH="$obj/usr" \
		>/dev/null
}

# gup_test, cow and gup_longterm from the same tree, plus foliobench, into
# the harness payload: build/kernel/payload/{bin,tests}.
cmd_selftests() {
	cmd_source
	tree_headers
	local mm=$SRC/tools/testing/selftests/mm pay=$OUT/payload t
	local inc=$OUT/selftests-inc cflags=(-O2 -Wall) settings=thp_settings.c
	mkdir -p "$pay/bin" "$pay/tests" "$inc"
	# local_config.h is what the selftests' check_config.sh would write
	# (local_config.h_gen from 7.x).
	if [[ -f /usr/include/liburing.h ]]; then
		echo '#define LOCAL_CONFIG_HAVE_LIBURING 1' >"$inc/local_config.h"
	else
		: >"$inc/local_config.h"
	fi
	cp "$inc/local_config.h" "$inc/local_config.h_gen"
	# 7.x renamed thp_settings.c to hugepage_settings.c and includes
	# tools/include/uapi as lib.mk's TOOLS_INCLUDES.
	[[ ! -f $mm/hugepage_settings.c ]] || settings=hugepage_settings.c
	cflags+=(-I"$inc" -I"$SRC" -I"$SRC/tools/testing/selftests"
		 -isystem "$OUT/headers/usr/include"
		 -isystem "$SRC/tools/include/uapi")
	# Relative sources: gup_longterm makes its "local tmpfile" from
	# __FILE__, which must name a path that exists in the guest's cwd.
	for t in gup_test cow gup_longterm; do
		(cd "$mm" && gcc "${cflags[@]}" -o "$pay/bin/$t" "$t.c" \
			vm_util.c "$settings" -lm $(selftest_libs)) \
			2>"$OUT/$t.log" || die "cannot build $t, see $OUT/$t.log"
	done
	iommufd_selftest "$pay/bin/iommufd"
	series_selftests "$pay/bin" "${cflags[@]}" -static
	gcc -O2 -Wall -Wextra -static -I"$SRC" -I"$ROOT/bench/tcg-plugin" \
		-isystem "$OUT/headers/usr/include" \
		-o "$pay/bin/foliobench" "$KDIR/bench/foliobench.c"
	gcc -O2 -Wall -Wextra -static -pthread -I"$SRC" \
		-isystem "$OUT/headers/usr/include" \
		-o "$pay/bin/batchedge" "$KDIR/tests/batchedge.c"
	cp "$KDIR"/guest/tests/* "$pay/tests/"
	log "payload: $pay"
	subsystem_payload
}

# The mm selftests the series itself adds (gup_batch in the 7.3 series),
# built from a copy of the tree's selftests with only the series'
# selftest patches applied, so stock and patched kernels run the same
# binary. $1: bin directory, then the compiler flags.
series_selftests() {
	local bin=$1 dst=$OUT/selftests-src p mm t
	shift
	rm -rf "$dst" && mkdir -p "$dst/tools/testing" "$dst/mm"
	cp -a "$SRC/tools/testing/selftests" "$dst/tools/testing/"
	# The mm selftests include the kernel's mm/gup_test.h by relative path.
	cp "$SRC/mm/gup_test.h" "$dst/mm/"
	for p in $(series); do
		grep '^+++ b/' "$p" | grep -qv '^+++ b/tools/testing/selftests/' &&
			continue
		patch -d "$dst" -p1 -s --forward <"$p" || die "cannot apply $p"
	done
	mm=$dst/tools/testing/selftests/mm
	for t in gup_batch; do
		[[ -f $mm/$t.c ]] || continue
		(cd "$mm" && gcc "$@" -I"$dst/tools/testing/selftests" \
			-o "$bin/$t" "$t.c" vm_util.c hugepage_settings.c -lm) \
			2>"$OUT/$t.log" || die "cannot build $t, see $OUT/$t.log"
	done
}

# The consumers' own suites (rdma-core's pyverbs tests, liburing's
# registered-buffer tests) in a payload of their own: the interpreter
# they need stays out of the other boots.
subsystem_payload() {
	local pay=$OUT/payload-subsystem
	local DEPS
	read -ra DEPS <<<"$("$KDIR/tools/subsystem-payload.sh" --deps)"
	install_deps
	mkdir -p "$pay/tests"
	cp "$KDIR"/guest/tests/{rdma-core,liburing} "$pay/tests/"
	"$KDIR/tools/subsystem-payload.sh" "$pay" ||
		die "cannot build the subsystem payload"
}

# The iommufd selftest of 6.12.117 does not build against 6.12.117's own
# uapi and mock driver: stable backports brought in a requested hw_info
# data type (in_data_type, IOMMU_HW_INFO_FLAG_INPUT_TYPE,
# IOMMU_HW_INFO_TYPE_DEFAULT, from 6.17) and a PASID-capable mock device
# (MOCK_FLAGS_DEVICE_PASID, MOCK_PASID_WIDTH). Every hw_info caller asks
# for the default type, which is what 6.12 reports without the field, and
# 6.12's mock has no PASID, so the copy drops the field and runs the one
# PASID variant (iommufd_ioas.mock_domain) as a plain mock domain; the two
# PASID constants only need to exist to compile. The copy's quoted
# includes resolve to the harness copy beside it, then through -I to the
# tree.
iommufd_selftest() {
	local sel=$SRC/tools/testing/selftests tmp=$OUT/iommufd-selftest
	local dir=$sel/iommu
	rm -rf "$tmp" && mkdir -p "$tmp/iommu"
	cp "$dir/iommufd.c" "$dir/iommufd_utils.h" "$tmp/iommu/"
	# 7.3's selftest matches its own uapi and mock driver.
	[[ $KBASE != 6.12 ]] || iommufd_selftest_612 "$dir" "$tmp/iommu"
	# The harness kills a test after 30 s of wall time, which the 128 MB
	# dirty-bitmap tests exceed on the KASAN kernel under TCG.
	sed 's/^#define TEST_TIMEOUT_DEFAULT 30$/#define TEST_TIMEOUT_DEFAULT 600/' \
		"$sel/kselftest_harness.h" >"$tmp/kselftest_harness.h"
	grep -q 'TEST_TIMEOUT_DEFAULT 600' "$tmp/kselftest_harness.h" ||
		die "kselftest_harness.h: no TEST_TIMEOUT_DEFAULT to raise"
	local pasid=()
	[[ $KBASE != 6.12 ]] ||
		pasid=(-DMOCK_FLAGS_DEVICE_PASID=0 -DMOCK_PASID_WIDTH=0)
	gcc -O2 -Wall -Wno-unused-function -D_GNU_SOURCE -I"$dir" -I"$sel" \
		"${pasid[@]}" \
		-isystem "$OUT/headers/usr/include" -o "$1" "$tmp/iommu/iommufd.c" \
		-lpthread -lcap 2>"$OUT/iommufd.log" ||
		die "cannot build the iommufd selftest, see $OUT/iommufd.log"
}

iommufd_selftest_612() {
	local dir=$1 dst=$2
	sed -e '/\.in_data_type = data_type,/d' \
	    -e '/if (data_type != IOMMU_HW_INFO_TYPE_DEFAULT)/d' \
	    -e '/cmd.flags |= IOMMU_HW_INFO_FLAG_INPUT_TYPE;/d' \
	    -e 's/IOMMU_HW_INFO_TYPE_DEFAULT/IOMMU_HW_INFO_TYPE_NONE/g' \
	    "$dir/iommufd_utils.h" >"$dst/iommufd_utils.h"
	sed -i -e 's/IOMMU_HW_INFO_TYPE_DEFAULT/IOMMU_HW_INFO_TYPE_NONE/g' \
	       -e 's/\.pasid_capable = true,/.pasid_capable = false,/' \
		"$dst/iommufd.c"
}

selftest_libs() {
	[[ -f /usr/include/liburing.h ]] && echo -luring
	true
}

# Boot $1 (stock, patched or debug) in the harness with the payload and run
# the tests named in $2; results in build/kernel/results/<variant>.
run_guest() {
	local v=$1 tests=$2 obj=$OUT/$1 vm=$ROOT/tests/guest/mreg-vm
	local res=$OUT/results/${3:-$1}
	[[ -x $vm ]] || die "no harness at $vm"
	[[ -f $obj/bzImage ]] || die "no $obj/bzImage: run kernel/build.sh $v"
	mkdir -p /tmp/mreg "$OUT/results"
	rm -rf "$res"
	"$vm" run --kernel "$obj/bzImage" \
		--modules "$(ls -d "$obj"/modules/lib/modules/* | head -1)" \
		--payload "${PAYLOAD:-$OUT/payload}" --tests "$tests" --no-builtin \
		--mem "${GUEST_MEM:-3G}" --timeout "${GUEST_TIMEOUT:-3000}" \
		--test-timeout "${TEST_TIMEOUT:-2400}" --out "$res" \
		${BENCH_APPEND:+--append "$BENCH_APPEND"}
}

# The return addresses of gup_test_ioctl()'s ktime_get() calls in the
# vmlinux $1 (System.map $2), one per line: kcount splits a call there.
gup_test_clock_returns() {
	local vmlinux=$1 map=$2 range
	# No early exit in awk: sort would die of SIGPIPE, and pipefail with it.
	range=$(sort "$map" | awk '$3 == "gup_test_ioctl" { s = $1; next }
		s && !done { printf "--start-address=0x%s --stop-address=0x%s", s, $1
			done = 1 }')
	[[ -n $range ]] || return 0
	# shellcheck disable=SC2086 # two options
	objdump -d --no-show-raw-insn $range "$vmlinux" |
		awk '/call.*<ktime_get>$/ { getline; sub(":", "", $1); print $1 }'
}

# One kernel's bench run. With kcount, the returns from gup_test's
# ktime_get() calls (around its pin and around its unpin) split each call,
# so ratio.py can count the pin alone, the part gup_test's clock times.
# The plugin takes the addresses from the build, hence nokaslr.
bench_guest() {
	local v=$1 split="" a
	if [[ $MREG_VM_PLUGIN_COUNTS == 1 ]]; then
		for a in $(bench_split_sites "$v"); do
			split+="${split:+,}split=$a"
		done
	fi
	if [[ -z $split ]]; then
		run_guest "$v" "${BENCH_TESTS:-kbench}"
		return
	fi
	(
		export MREG_VM_PLUGIN_ARGS="${MREG_VM_PLUGIN_ARGS:+$MREG_VM_PLUGIN_ARGS,}$split"
		BENCH_APPEND="nokaslr${BENCH_APPEND:+ $BENCH_APPEND}"
		run_guest "$v" "${BENCH_TESTS:-kbench}"
	)
}

# Step builds keep their split sites (step_build), not their vmlinux.
bench_split_sites() {
	local d=$OUT/$1
	if [[ -f $d/kcount-splits ]]; then
		cat "$d/kcount-splits"
	elif [[ -f $d/vmlinux && -f $d/System.map ]]; then
		gup_test_clock_returns "$d/vmlinux" "$d/System.map"
	fi
}

# Stock, then patched, same payload and matrix, one after the other.
# Each kernel in turn, then a ratio table for each one against the one
# before it (stock against patched by default; "stock p1 p4 patched" gives
# each step of the series its own table). BENCH_APPEND is added to the
# guest's command line: 'KBENCH_ROWS="4kB 64kB" KBENCH_BIG=0' runs part of
# the matrix. With kcount the guest boots nokaslr (bench_guest), which
# also lets kcount's prof= map to System.map.
cmd_bench() {
	local rc=0 v prev="" variants=("$@")
	[[ ${#variants[@]} -gt 0 ]] || variants=(stock patched)
	. "$ROOT/bench/tcg-clock.sh"
	# The icount clock charges an atomic like an add: kcount counts them.
	export MREG_VM_PLUGIN_COUNTS=${MREG_VM_PLUGIN_COUNTS:-1}
	cmd_selftests
	# A failing guest test must not stop the other kernels' runs.
	for v in "${variants[@]}"; do
		bench_guest "$v" || rc=1
	done
	for v in "${variants[@]}"; do
		if [[ -n $prev ]]; then
			echo "## $prev -> $v"
			python3 "$KDIR/bench/ratio.py" "$OUT/results/$prev" \
				"$OUT/results/$v"
			echo
		fi
		prev=$v
	done
	if [[ ${#variants[@]} -eq 1 ]]; then
		echo "## ${variants[0]}"
		python3 "$KDIR/bench/ratio.py" "$OUT/results/${variants[0]}"
	fi
	return "$rc"
}

# Cross builds of the series for the configurations FPB_LOCKLESS exists
# for: arm64 with contpte, i386 with PAE. Like check, on a clean tree of
# its own, patch by patch, each patch building mm/gup.o and the objects it
# changes; no checkpatch (check does it). Build only, and not in CI: the
# toolchain install and prepare take minutes.
cross_args() {
	case $1 in
	arm64) echo "ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- defconfig" ;;
	i386) echo "ARCH=i386 CROSS_COMPILE= i386_defconfig" ;;
	*) die "cross: unknown target '$1' (arm64 or i386)" ;;
	esac
}

# Objects a target cannot build: rxe needs !HIGHMEM, and i386 PAE is
# HIGHMEM64G (kernel/config/cross-i386.config).
cross_objects() {
	local target=$1 p=$2
	{ echo mm/gup.o; echo mm/memory.o; touched_objects "$p"; } | sort -u |
		if [[ $target == i386 ]]; then
			grep -v '^drivers/infiniband/sw/rxe/'
		else
			cat
		fi
}

cmd_cross() {
	local target=${1:-} arch cross defcfg tree obj frag p n=0 start=$SECONDS
	[[ -n $target ]] || die "usage: kernel/build.sh cross arm64|i386"
	read -r arch cross defcfg <<<"$(cross_args "$target")"
	arch=${arch#ARCH=} cross=${cross#CROSS_COMPILE=}
	[[ $target != arm64 ]] || DEPS+=(gcc-aarch64-linux-gnu)
	install_deps
	tree=$OUT/cross-$target-src obj=$OUT/cross-$target
	# A base whose Kconfig differs has a fragment of its own.
	frag=$KDIR/config/cross-$target.config
	[[ ! -f $KDIR/config/cross-$target-$KBASE.config ]] ||
		frag=$KDIR/config/cross-$target-$KBASE.config
	rm -rf "$tree" "$obj"
	unpack_tree "$tree"
	mkdir -p "$obj"
	local mk=(make -C "$tree" O="$obj" ARCH="$arch" CROSS_COMPILE="$cross"
		  CC="ccache ${cross}gcc" HOSTCC="ccache gcc" -j"$JOBS" -s)
	"${mk[@]}" "$defcfg" >/dev/null
	ARCH=$arch "$tree"/scripts/kconfig/merge_config.sh -m -O "$obj" \
		"$obj/.config" "$frag" >/dev/null
	"${mk[@]}" olddefconfig >/dev/null
	verify_config "$obj/.config" "$frag"
	"${mk[@]}" prepare
	for p in $(series); do
		n=$((n + 1))
		log "$target patch $n: $(basename "$p")"
		patch -d "$tree" -p1 -s --forward <"$p" || die "$p does not apply"
		# shellcheck disable=SC2046 # one word per object
		"${mk[@]}" $(cross_objects "$target" "$p") ||
			die "$p does not build for $target"
	done
	log "cross $target ok: $n patches in $((SECONDS - start)) s"
}

cmd_boot() {
	# shellcheck source=kernel/tools/smallboot.sh
	. "$KDIR/tools/smallboot.sh"
	smallboot_main "$@"
}

# The kernel's own tests from this tree, then mreg's two guest suites with
# mreg.ko built for the kernel under test. Every variant runs even when an
# earlier one fails; the debug kernel (KASAN, lockdep) is given longer.
# The iommufd selftest gets a boot without the emulated intel-iommu (see
# the test).
KERNEL_TESTS="kselftests kselftests-cow kselftests-gupbatch batchedge"
SUBSYSTEM_TESTS="rdma-core liburing"
# The guest turns name=value on the kernel command line into environment.
# test_threads' 4 x 10000 pairs on io_uring alone did not end in 12 min
# on the KASAN kernel under TCG: it runs 4 x 625 there (10000 / slow^2),
# 4 x 10000 on the others.
SOAK_SECONDS=${SOAK_SECONDS:-600}

cmd_test() {
	local v rc=0 variants=("$@")
	[[ ${#variants[@]} -gt 0 ]] || variants=(stock patched debug)
	cmd_selftests
	for v in "${variants[@]}"; do
		test_variant "$v" || rc=1
	done
	summarize_tests "${variants[@]}"
	return "$rc"
}

# Kernels with the rxe patches take one MR over 1 GiB: test_pieces checks.
one_mr() {
	case $1 in patched | debug) echo " MREG_RXE_ONE_MR=1" ;; esac
}

test_variant() {
	local v=$1 obj=$OUT/$1 mods rc=0 slow=1
	[[ -f $obj/bzImage ]] || die "no $obj/bzImage: run kernel/build.sh $v"
	mods=$(ls -d "$obj"/modules/lib/modules/* | head -1)
	[[ $v != debug ]] || slow=4
	log "$v: kernel selftests and batch edges"
	GUEST_TIMEOUT=$((3000 * slow)) TEST_TIMEOUT=$((1200 * slow)) \
		run_guest "$v" "$KERNEL_TESTS" "$v-kernel" || rc=1
	MREG_VM_IOMMU=off TEST_TIMEOUT=$((600 * slow)) \
		run_guest "$v" kselftests-iommufd "$v-iommufd" || rc=1
	log "$v: rdma-core's and liburing's own tests"
	PAYLOAD=$OUT/payload-subsystem TEST_TIMEOUT=$((1200 * slow)) \
		run_guest "$v" "$SUBSYSTEM_TESTS" "$v-subsystem" || rc=1
	log "$v: mreg.ko suite"
	KMOD_TEST_TIMEOUT=$((300 * slow)) "$ROOT/kmod/tests/run-guest.sh" --race-runs 10 \
		--kernel "$obj/bzImage" --modules "$mods" --kdir "$obj" \
		--out "$OUT/results/$v-kmod" || rc=1
	log "$v: mreg guest suite, the reliability tests with a 10 min soak"
	# mreg.ko built for this kernel: kmod/mreg.ko is Debian's 6.12's.
	KDIR=$obj MREG_KO_OUT=$OUT/results/$v-mreg.ko "$ROOT/kmod/build.sh" \
		build >&2 || rc=1
	# 6G as in ctest's guest_suite: test_pieces' 4 GiB buffers need it.
	MREG_KO=$OUT/results/$v-mreg.ko \
	"$ROOT/tests/vm/run.sh" "$ROOT/build" --kernel "$obj/bzImage" \
		--modules "$mods" --out "$OUT/results/$v-mreg" --mem 6G \
		--append "MREG_SOAK_SECONDS=$SOAK_SECONDS MREG_THREAD_ITERS=$((10000 / slow / slow))$(one_mr "$v")" \
		--test-timeout $((900 * slow)) --timeout $((2700 * slow)) || rc=1
	log "$v: real clients: QEMU's passthrough start (type1, iommufd), fio"
	"$ROOT/tests/clients/run.sh" "$ROOT/build" --kernel "$obj/bzImage" \
		--modules "$mods" --out "$OUT/results/$v-clients" \
		--test-timeout $((900 * slow)) --timeout $((1800 * slow)) || rc=1
	return "$rc"
}

# One line per guest test and kernel, from the harness's verdicts.
summarize_tests() {
	local v d
	for v in "$@"; do
		for d in "$OUT/results/$v-kernel" "$OUT/results/$v-iommufd" \
			 "$OUT/results/$v-subsystem" "$OUT/results/$v-kmod" \
			 "$OUT/results/$v-mreg" "$OUT/results/$v-clients"; do
			[[ -f $d/console.log ]] || continue
			grep -a '^MREG-RESULT' "$d/console.log" | sed "s/^/$v: /"
		done
	done
}

main() {
	local cmd base_given=0
	[[ -z $KBASE_ENV ]] || base_given=1
	if [[ ${1:-} == --base ]]; then
		KBASE=${2:?--base needs 6.12 or 7.3}
		base_given=1
		shift 2
	elif [[ ${1:-} == --base=* ]]; then
		KBASE=${1#--base=}
		base_given=1
		shift
	fi
	[[ $# -gt 0 ]] || usage
	select_base
	# check without --base: both series, as CI should.
	if [[ $1 == check && $base_given == 0 ]]; then
		for KBASE in $BASES; do
			(select_base && cmd_check) || exit 1
		done
		shift
		[[ $# -eq 0 ]] || main "$@"
		return
	fi
	if [[ $1 == test || $1 == bench ]]; then
		cmd=$1
		shift
		"cmd_$cmd" "$@"
		return
	fi
	if [[ $1 == arm64 || $1 == i386 ]]; then
		cmd_boot "$@"
		return
	fi
	if [[ $1 == prefix || $1 == cross || $1 == steps ]]; then
		"cmd_$1" "${2:-}"
		return
	fi
	for cmd in "$@"; do
		case $cmd in
		source | config | stock | patched | debug | check | selftests)
			"cmd_$cmd" ;;
		all) cmd_stock; cmd_patched; cmd_debug ;;
		*) usage ;;
		esac
	done
}

usage() {
	sed -n '2,38p' "${BASH_SOURCE[0]}"
	exit 2
}

main "$@"
