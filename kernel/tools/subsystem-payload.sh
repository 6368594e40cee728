#!/usr/bin/env bash
# The consumers' own test suites, from Debian, into the guest payload:
#
#   kernel/tools/subsystem-payload.sh PAYLOAD
#   kernel/tools/subsystem-payload.sh --deps   the Debian packages it needs
#
#   - rdma-core's tests (pyverbs, run_tests.py) from python3-pyverbs, the
#     same rdma-core release as the host's libibverbs1 that the guest runs,
#     with the Python 3.11 interpreter and standard library they need,
#     into PAYLOAD/root (copied as a tree into the guest);
#   - liburing's tests that register buffers, built from Debian's source
#     of liburing 2.9 (trixie's), into PAYLOAD/bin as liburing-<name>.
#
# Debian ships no liburing tests, so they come from `apt-get source`. The
# release is trixie's 2.9 (February 2025, the 6.13 kernel's), not the
# host's 2.3 (bookworm, 2022): 2.3's tests predate 6.12's semantics (its
# rsrc_tags expects -EAGAIN where 6.12 succeeds, its io_uring_register
# polls the ring on itself and waits forever), while 2.9's probe what the
# kernel offers, and cover 6.12's IORING_REGISTER_CLONE_BUFFERS. The tests
# link their own liburing.a statically; the host keeps its liburing2. The
# deb-src index goes to a private apt state under build/cache/apt: the
# host's sources.list and lists stay as they were.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=$ROOT/build/cache
PAY=${1:?usage: subsystem-payload.sh PAYLOAD | --deps}

# The tests of liburing 2.9 that register buffers: fixed reads and writes
# (read-write, file-verify, fixed-link, fixed-buf-iter, fixed-buf-merge,
# stdout), a hugetlb-backed buffer (fixed-hugepage), buffer updates with
# tags (rsrc_tags: patch 1's update path), buffers cloned between rings
# (regbuf-clone: patch 1's accounting of shared folios), the limits of
# registration (io_uring_register) and restricted rings
# (register-restrictions).
LIBURING_VERSION=2.9-1
LIBURING_TESTS=(read-write file-verify fixed-link fixed-buf-iter
		fixed-buf-merge fixed-hugepage stdout rsrc_tags regbuf-clone
		io_uring_register register-restrictions)

log() { printf '[subsystem] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

host_version() { dpkg-query -W -f='${Version}' "$1"; }

# Debian's packages this needs (python3.11 is Debian's, not a pyenv one);
# kernel/build.sh selftests installs them.
DEPS=(libibverbs1 librdmacm1 python3.11 libpython3.11 dpkg-dev rsync gzip)
check_deps() {
	local missing=() p
	for p in "${DEPS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] ||
		die "missing ${missing[*]}: run kernel/build.sh selftests"
}

# apt-get with a sources list of our own: Debian's deb-src of trixie, its
# index in build/cache/apt.
private_apt() {
	local dir=$CACHE/apt suite=trixie
	mkdir -p "$dir/lists/partial"
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"http://deb.debian.org/debian $suite main" >"$dir/sources.list"
	apt-get -o APT::Sandbox::User=root \
		-o Dir::Etc::SourceList="$dir/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/lists" "$@"
}

# Debian's source of PACKAGE at VERSION, unpacked with its patches once;
# prints the tree.
debian_source() {
	local pkg=$1 ver=$2 dir=$CACHE/src/$1-$2
	if [[ ! -e $dir/.unpacked ]]; then
		log "apt-get source $pkg=$ver"
		rm -rf "$dir" && mkdir -p "$dir"
		private_apt -qq update >&2
		(cd "$dir" && private_apt -qq source "$pkg=$ver" >&2) ||
			die "apt-get source $pkg=$ver failed"
		touch "$dir/.unpacked"
	fi
	compgen -G "$dir/$pkg-*/" | head -1
}

liburing_tests() {
	local ver=$LIBURING_VERSION tree t
	tree=$(debian_source liburing "$ver")
	[[ -f $tree/config-host.mak ]] || (cd "$tree" && ./configure >/dev/null)
	make -C "$tree/src" -s -j"$(nproc)" >/dev/null
	make -C "$tree/test" -s -j"$(nproc)" \
		"${LIBURING_TESTS[@]/%/.t}" >/dev/null 2>&1 ||
		die "cannot build liburing's tests in $tree/test"
	rm -f "$PAY"/bin/liburing-*
	for t in "${LIBURING_TESTS[@]}"; do
		cp "$tree/test/$t.t" "$PAY/bin/liburing-$t"
	done
	log "liburing $ver: ${#LIBURING_TESTS[@]} tests"
}

# python3-pyverbs of the host's rdma-core release, unpacked into the tree.
# Debian compresses the tests as documentation: undo that.
pyverbs_tests() {
	local ver deb dir=$CACHE/debs
	ver=$(host_version libibverbs1) || die "libibverbs1 is not installed"
	mkdir -p "$dir"
	deb=$dir/python3-pyverbs_${ver}_amd64.deb
	if [[ ! -f $deb ]]; then
		(cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root "python3-pyverbs=$ver" >&2) || {
			apt-get update -qq >&2
			(cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root "python3-pyverbs=$ver" >&2)
		} || die "cannot download python3-pyverbs=$ver"
	fi
	dpkg-deb -x "$deb" "$PAY/root"
	find "$PAY/root/usr/share/doc/rdma-core/tests" -name '*.py.gz' \
		-exec gunzip -f {} +
	log "rdma-core $ver: pyverbs tests"
}

# The interpreter and the standard library, without what no test imports
# (the stdlib's own tests, IDLE, Tk, 2to3). Compiled once on the host:
# compiling on first import costs minutes under TCG.
python_runtime() {
	local lib=/usr/lib/python3.11
	[[ -x /usr/bin/python3.11 && -f $lib/os.py ]] ||
		die "no Debian python3.11 on the host"
	mkdir -p "$PAY/root/usr/bin"
	cp -L /usr/bin/python3.11 "$PAY/root/usr/bin/python3"
	rsync -a --exclude=test/ --exclude=idlelib/ --exclude=tkinter/ \
		--exclude=lib2to3/ --exclude=ensurepip/ --exclude=site-packages/ \
		--exclude=dist-packages/ "$lib/" "$PAY/root$lib/"
	/usr/bin/python3.11 -m compileall -q -j0 "$PAY/root$lib" \
		"$PAY/root/usr/lib/python3/dist-packages" \
		"$PAY/root/usr/share/doc/rdma-core/tests" >/dev/null || true
}

main() {
	[[ $PAY != --deps ]] || { echo "${DEPS[*]}"; return; }
	check_deps
	mkdir -p "$PAY/bin"
	rm -rf "$PAY/root" && mkdir -p "$PAY/root"
	liburing_tests
	pyverbs_tests
	python_runtime
}

main
