# shellcheck shell=bash
# kernel/build.sh arm64|i386 [stock] [patched]: the series booted on the
# two configurations FPB_LOCKLESS exists for: arm64 with contpte, and
# i386 with PAE (a PTE read in two halves, GUP_GET_PXX_LOW_HIGH).
#
# Sourced by kernel/build.sh (its log, die, install_deps, unpack_tree,
# series and verify_config). Builds a small kernel for the target from a
# tree of its own (allnoconfig + config/<target>-boot.config), stock and
# with the series, boots each under qemu TCG with the icount clock, and
# runs the same guest tests as x86 (batchedge, the gup_test matrix, the
# kbench cells) through the same /init (tests/guest/guest/init), which
# checks the pin balance and dmesg around every test. No 9p here: the
# results come back on the console, kbench's lines included.
#
# Why a kernel of its own rather than defconfig: arm64 defconfig builds
# thousands of drivers, over an hour on two cores under ccache misses; the
# tests need an MMU with the target's PTE format, THP, GUP_TEST and a
# console.
#
# Results: build/kernel/<target>-results/<variant>/{console.log,kbench.txt}
# and, for two variants, the ratio table (kernel/bench/ratio.py).

# Per target: arch, cross prefix, the C compiler for the guest programs,
# the image, Debian's architecture for busybox, qemu and its console.
sb_target() {
	SB=$1
	case $SB in
	arm64)
		SB_ARCH=arm64 SB_CROSS=aarch64-linux-gnu- SB_CC=aarch64-linux-gnu-gcc
		SB_IMAGE=arch/arm64/boot/Image SB_DEB_ARCH=arm64
		SB_DEPS="gcc-aarch64-linux-gnu qemu-system-arm"
		SB_QEMU=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on)
		SB_CONSOLE=ttyAMA0 SB_APPEND= ;;
	i386)
		SB_ARCH=i386 SB_CROSS= SB_CC="gcc -m32"
		SB_IMAGE=arch/x86/boot/bzImage SB_DEB_ARCH=i386
		SB_DEPS="gcc-multilib qemu-system-x86"
		SB_QEMU=(qemu-system-i386 -M pc -cpu max
			 -device isa-debug-exit,iobase=0xf4,iosize=0x04)
		# TCG's TSC fails the clocksource watchdog against jiffies,
		# which would leave the timings 4 ms coarse.
		SB_CONSOLE=ttyS0 SB_APPEND=tsc=reliable ;;
	*) die "boot targets are arm64 and i386, not '$SB'" ;;
	esac
	A64_SRC=$OUT/$SB-src
}

A64_ROWS=${A64_ROWS:-4kB 64kB 2MB-pte}
A64_TESTS=${A64_TESTS:-batchedge kselftests kbench}

a64_make() {
	local obj=$1; shift
	make -C "$A64_SRC" O="$obj" ARCH="$SB_ARCH" CROSS_COMPILE="$SB_CROSS" \
		CC="ccache ${SB_CROSS}gcc" HOSTCC="ccache gcc" -j"$JOBS" -s "$@"
}

a64_tree() {
	[[ -f $A64_SRC/.mreg-unpacked ]] && return 0
	rm -rf "$A64_SRC"
	unpack_tree "$A64_SRC"
	touch "$A64_SRC/.mreg-unpacked"
}

# One variant's image; the patched one applies the series to the target's
# tree and reverses it afterwards (a trap covers a failed build).
a64_build() {
	local v=$1 obj=$OUT/$SB-$1 frag=$KDIR/config/$SB-boot.config
	local start=$SECONDS p
	# A base whose Kconfig differs (7.3: no HIGHMEM64G) has its own.
	[[ ! -f $KDIR/config/$SB-boot-$KBASE.config ]] ||
		frag=$KDIR/config/$SB-boot-$KBASE.config
	mkdir -p "$obj"
	if [[ $v == patched ]]; then
		for p in $(series); do
			patch -d "$A64_SRC" -p1 -s --forward <"$p" ||
				die "cannot apply $p to the $SB tree"
		done
		trap a64_revert EXIT
	fi
	a64_make "$obj" allnoconfig >/dev/null
	ARCH=$SB_ARCH "$A64_SRC"/scripts/kconfig/merge_config.sh -m -O "$obj" \
		"$obj/.config" "$frag" >/dev/null
	a64_make "$obj" olddefconfig >/dev/null
	verify_config "$obj/.config" "$frag"
	a64_make "$obj" "$(basename "$SB_IMAGE")"
	[[ $v != patched ]] || a64_revert
	log "$SB $v: $obj/$SB_IMAGE in $((SECONDS - start)) s"
}

a64_revert() {
	local p
	for p in $(series | sort -r); do
		patch -d "$A64_SRC" -p1 -s -R <"$p" ||
			die "cannot revert $p from the $SB tree"
	done
	trap - EXIT
}

# busybox for the target, from Debian, without adding its architecture to
# dpkg's: apt runs on lists of its own under build/.
a64_busybox() {
	local apt=$OUT/$SB-apt deb
	[[ -x $apt/root/bin/busybox ]] && return 0
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	local opts=(-o APT::Architecture="$SB_DEB_ARCH"
		    -o APT::Architectures::="$SB_DEB_ARCH"
		    -o Dir::State::Lists="$apt/lists"
		    -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1)
	apt-get "${opts[@]}" update -qq
	(cd "$apt" && apt-get "${opts[@]}" download "busybox-static:$SB_DEB_ARCH" -qq)
	deb=$(ls "$apt"/busybox-static_*_"$SB_DEB_ARCH".deb | head -1)
	dpkg-deb -x "$deb" "$apt/root"
}

# The guest's programs, static for the target, from its tree's headers.
a64_programs() {
	local bin=$1 hdr=$OUT/$SB-headers mm=$A64_SRC/tools/testing/selftests/mm
	local cc=$SB_CC inc=$OUT/$SB-selftests-inc
	[[ -f $hdr/usr/include/linux/fs.h ]] ||
		make -C "$A64_SRC" O="$hdr" ARCH="$SB_ARCH" -s headers_install \
			INSTALL_HDR_PATH="$hdr/usr" >/dev/null
	mkdir -p "$bin" "$inc"
	: >"$inc/local_config.h"
	: >"$inc/local_config.h_gen"
	local settings=thp_settings.c
	[[ ! -f $mm/hugepage_settings.c ]] || settings=hugepage_settings.c
	local flags=(-O2 -Wall -static -I"$A64_SRC" -isystem "$hdr/usr/include")
	# shellcheck disable=SC2086 # SB_CC may carry -m32
	$cc "${flags[@]}" -pthread -o "$bin/batchedge" "$KDIR/tests/batchedge.c"
	# shellcheck disable=SC2086
	$cc "${flags[@]}" -I"$ROOT/bench/tcg-plugin" -o "$bin/foliobench" \
		"$KDIR/bench/foliobench.c"
	# shellcheck disable=SC2086
	(cd "$mm" && $cc "${flags[@]}" -I"$inc" \
		-I"$A64_SRC/tools/testing/selftests" -o "$bin/gup_test" \
		gup_test.c vm_util.c "$settings" -lm)
}

# The initramfs: busybox, the harness's /init and lib.sh, the kernel
# tests and the programs. /init installs busybox's applets first.
a64_initramfs() {
	local out=$1 root=$1/root
	rm -rf "$root" && mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,mreg/bin,mreg/tests} \
		"$root"/{proc,sys,dev,tmp,run,root}
	cp "$OUT/$SB-apt/root/bin/busybox" "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
	cat >"$root/init" <<'EOF'
#!/bin/sh
/bin/busybox --install -s
exec /mreg/init
EOF
	chmod +x "$root/init"
	cp "$ROOT/tests/guest/guest/init" "$root/mreg/init"
	cp "$ROOT/tests/guest/guest/lib.sh" "$root/mreg/lib.sh"
	local t
	for t in $A64_TESTS; do
		cp "$KDIR/guest/tests/$t" "$root/mreg/tests/"
	done
	a64_programs "$root/mreg/bin"
	{
		echo "MREG_TESTS='$A64_TESTS'"
		echo "MREG_TEST_TIMEOUT='${TEST_TIMEOUT:-2400}'"
		echo "MREG_SHELL=''"
	} >"$root/mreg/config"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) \
		>"$out/initramfs.cpio.gz"
}

# Boot one variant; the verdict is the MREG-DONE line on the console.
a64_boot() {
	local v=$1 res=$OUT/$SB-results/$1 img=$OUT/$SB-$1/$SB_IMAGE
	[[ -f $img ]] || die "no $img: run kernel/build.sh $SB $v"
	rm -rf "$res" && mkdir -p "$res"
	a64_initramfs "$res"
	local append="console=$SB_CONSOLE panic=-1 no_timer_check $SB_APPEND"
	append+=" KBENCH_ROWS=\"$A64_ROWS\" KBENCH_RUNS=${KBENCH_RUNS:-5} KBENCH_BIG=0"
	log "$SB $v: booting (${SB_QEMU[0]} TCG, icount clock)"
	timeout "${GUEST_TIMEOUT:-5400}" "${SB_QEMU[@]}" \
		-smp 2 -m "${GUEST_MEM:-3G}" -nographic -no-reboot \
		-icount shift=0,sleep=off -kernel "$img" \
		-initrd "$res/initramfs.cpio.gz" -append "$append" \
		</dev/null >"$res/console.log" 2>&1 || true
	tr -d '\r' <"$res/console.log" | sed -n 's/^\[kbench\] //p' |
		cat >"$res/kbench.txt"
	grep -a '^MREG-RESULT' "$res/console.log" | tr -d '\r' >&2 || true
	grep -aq 'MREG-DONE passed [0-9]* failed 0 ' "$res/console.log" ||
		{ log "$SB $v: FAILED, see $res/console.log"; return 1; }
	log "$SB $v: $(grep -a -m1 MREG-DONE "$res/console.log" | tr -d '\r')"
}

smallboot_main() {
	sb_target "$1"
	shift
	local variants=("$@") v rc=0
	[[ ${#variants[@]} -gt 0 ]] || variants=(stock patched)
	# shellcheck disable=SC2206 # package names, one word each
	DEPS+=($SB_DEPS cpio)
	install_deps
	a64_tree
	a64_busybox
	for v in "${variants[@]}"; do
		[[ $v == stock || $v == patched ]] ||
			die "$SB: variants are stock and patched, not '$v'"
		a64_build "$v"
	done
	for v in "${variants[@]}"; do
		a64_boot "$v" || rc=1
	done
	if [[ ${#variants[@]} -eq 2 ]]; then
		python3 "$KDIR/bench/ratio.py" "$OUT/$SB-results/${variants[0]}" \
			"$OUT/$SB-results/${variants[1]}" |
			tee "$OUT/$SB-results/ratio.md"
	fi
	return "$rc"
}
