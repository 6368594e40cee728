# shellcheck shell=bash
# Our own 6.12 builds (kernel/build.sh: stock, patched, pN, debug), for the
# guest benchmarks: sourced by bench/compare.sh and bench/scale.sh.

kernel_out() { echo "$top/build/kernel/$1"; }

# mreg.ko for one of our kernels, built in a DKMS-style copy of kmod/ in
# $2 so the tree's own module (for Debian's kernel) is left alone.
module_for() {
	local v=$1 dir=$2/kmod
	rm -rf "$dir" && mkdir -p "$dir/include/uapi"
	cp "$top"/kmod/*.[ch] "$top"/kmod/Kbuild "$top"/kmod/Makefile "$dir/"
	cp "$top/include/uapi/mreg.h" "$dir/include/uapi/"
	make -s -C "$dir" KDIR="$(kernel_out "$v")" >&2
	echo "$dir/mreg.ko"
}

# The mreg-vm options that boot variant $1.
kernel_args() {
	local k
	k=$(kernel_out "$1")
	echo --kernel "$k/bzImage" --modules "$(ls -d "$k"/modules/lib/modules/* | head -n 1)"
}
