# shellcheck shell=bash
# kernel/build.sh arm64 [stock] [patched]: the series on arm64 with contpte.
#
# Sourced by kernel/build.sh (its log, die, install_deps, unpack_tree,
# series and verify_config). Builds a small arm64 kernel from a tree of
# its own (allnoconfig + config/arm64-boot.config), stock and with the
# series, boots each under qemu-system-aarch64 -M virt with the icount
# clock, and runs the same guest tests as x86 (batchedge, the gup_test
# matrix, the kbench cells) through the same /init (tests/guest/guest/init),
# which checks the pin balance and dmesg around every test. No 9p here: the
# results come back on the console, kbench's lines included.
#
# Why a kernel of its own rather than defconfig: arm64 defconfig builds
# thousands of drivers, over an hour on two cores under ccache misses; the
# tests need an MMU with contpte, THP, GUP_TEST and a console.
#
# Results: build/kernel/arm64-results/<variant>/{console.log,kbench.txt}
# and, for two variants, the ratio table (kernel/bench/ratio.py).

A64_SRC=$OUT/arm64-src
A64_CROSS=aarch64-linux-gnu-
A64_ROWS=${A64_ROWS:-4kB 64kB 2MB-pte}
A64_TESTS=${A64_TESTS:-batchedge kselftests kbench}

a64_make() {
	local obj=$1; shift
	make -C "$A64_SRC" O="$obj" ARCH=arm64 CROSS_COMPILE="$A64_CROSS" \
		CC="ccache ${A64_CROSS}gcc" HOSTCC="ccache gcc" -j"$JOBS" -s "$@"
}

a64_tree() {
	[[ -f $A64_SRC/.mreg-unpacked ]] && return 0
	rm -rf "$A64_SRC"
	unpack_tree "$A64_SRC"
	touch "$A64_SRC/.mreg-unpacked"
}

# One variant's Image; the patched one applies the series to the arm64
# tree and reverses it afterwards (a trap covers a failed build).
a64_build() {
	local v=$1 obj=$OUT/arm64-$1 frag=$KDIR/config/arm64-boot.config
	local start=$SECONDS p
	mkdir -p "$obj"
	if [[ $v == patched ]]; then
		for p in $(series); do
			patch -d "$A64_SRC" -p1 -s --forward <"$p" ||
				die "cannot apply $p to the arm64 tree"
		done
		trap a64_revert EXIT
	fi
	a64_make "$obj" allnoconfig >/dev/null
	ARCH=arm64 "$A64_SRC"/scripts/kconfig/merge_config.sh -m -O "$obj" \
		"$obj/.config" "$frag" >/dev/null
	a64_make "$obj" olddefconfig >/dev/null
	verify_config "$obj/.config" "$frag"
	a64_make "$obj" Image
	[[ $v != patched ]] || a64_revert
	log "arm64 $v: $obj/arch/arm64/boot/Image in $((SECONDS - start)) s"
}

a64_revert() {
	local p
	for p in $(series | sort -r); do
		patch -d "$A64_SRC" -p1 -s -R <"$p" ||
			die "cannot revert $p from the arm64 tree"
	done
	trap - EXIT
}

# busybox for arm64, from Debian, without adding arm64 to dpkg's
# architectures: apt runs on lists of its own under build/.
a64_busybox() {
	local apt=$OUT/arm64-apt deb
	[[ -x $apt/root/bin/busybox ]] && return 0
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	local opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
		    -o Dir::State::Lists="$apt/lists"
		    -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1)
	apt-get "${opts[@]}" update -qq
	(cd "$apt" && apt-get "${opts[@]}" download busybox-static:arm64 -qq)
	deb=$(ls "$apt"/busybox-static_*_arm64.deb | head -1)
	dpkg-deb -x "$deb" "$apt/root"
}

# The guest's programs, static for arm64, from the arm64 tree's headers.
a64_programs() {
	local bin=$1 hdr=$OUT/arm64-headers mm=$A64_SRC/tools/testing/selftests/mm
	local cc=${A64_CROSS}gcc inc=$OUT/arm64-selftests-inc
	[[ -f $hdr/usr/include/linux/fs.h ]] ||
		make -C "$A64_SRC" O="$hdr" ARCH=arm64 -s headers_install \
			INSTALL_HDR_PATH="$hdr/usr" >/dev/null
	mkdir -p "$bin" "$inc"
	: >"$inc/local_config.h"
	local flags=(-O2 -Wall -static -I"$A64_SRC" -isystem "$hdr/usr/include")
	"$cc" "${flags[@]}" -pthread -o "$bin/batchedge" "$KDIR/tests/batchedge.c"
	"$cc" "${flags[@]}" -I"$ROOT/bench/tcg-plugin" -o "$bin/foliobench" \
		"$KDIR/bench/foliobench.c"
	(cd "$mm" && "$cc" "${flags[@]}" -I"$inc" \
		-I"$A64_SRC/tools/testing/selftests" -o "$bin/gup_test" \
		gup_test.c vm_util.c thp_settings.c -lm)
}

# The initramfs: busybox, the harness's /init and lib.sh, the kernel
# tests and the programs. /init installs busybox's applets first.
a64_initramfs() {
	local out=$1 root=$1/root
	rm -rf "$root" && mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,mreg/bin,mreg/tests} \
		"$root"/{proc,sys,dev,tmp,run,root}
	cp "$OUT/arm64-apt/root/bin/busybox" "$root/bin/busybox"
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
	local v=$1 res=$OUT/arm64-results/$1 img=$OUT/arm64-$1/arch/arm64/boot/Image
	[[ -f $img ]] || die "no $img: run kernel/build.sh arm64 $v"
	rm -rf "$res" && mkdir -p "$res"
	a64_initramfs "$res"
	local append="console=ttyAMA0 panic=-1 no_timer_check"
	append+=" KBENCH_ROWS=\"$A64_ROWS\" KBENCH_RUNS=${KBENCH_RUNS:-5} KBENCH_BIG=0"
	log "arm64 $v: booting (qemu-system-aarch64 TCG, icount clock)"
	timeout "${GUEST_TIMEOUT:-5400}" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on \
		-smp 2 -m "${GUEST_MEM:-3G}" -nographic -no-reboot \
		-icount shift=0,sleep=off -kernel "$img" \
		-initrd "$res/initramfs.cpio.gz" -append "$append" \
		</dev/null >"$res/console.log" 2>&1 || true
	tr -d '\r' <"$res/console.log" | sed -n 's/^\[kbench\] //p' |
		cat >"$res/kbench.txt"
	grep -a '^MREG-RESULT' "$res/console.log" | tr -d '\r' >&2 || true
	grep -aq 'MREG-DONE passed [0-9]* failed 0 ' "$res/console.log" ||
		{ log "arm64 $v: FAILED, see $res/console.log"; return 1; }
	log "arm64 $v: $(grep -a -m1 MREG-DONE "$res/console.log" | tr -d '\r')"
}

arm64_main() {
	local variants=("$@") v rc=0
	[[ ${#variants[@]} -gt 0 ]] || variants=(stock patched)
	DEPS+=(gcc-aarch64-linux-gnu qemu-system-arm cpio)
	install_deps
	a64_tree
	a64_busybox
	for v in "${variants[@]}"; do
		[[ $v == stock || $v == patched ]] ||
			die "arm64: variants are stock and patched, not '$v'"
		a64_build "$v"
	done
	for v in "${variants[@]}"; do
		a64_boot "$v" || rc=1
	done
	if [[ ${#variants[@]} -eq 2 ]]; then
		python3 "$KDIR/bench/ratio.py" "$OUT/arm64-results/${variants[0]}" \
			"$OUT/arm64-results/${variants[1]}" |
			tee "$OUT/arm64-results/ratio.md"
	fi
	return "$rc"
}
