#!/bin/bash
# Install a build tree into a scratch prefix and use it as an application
# would: a man page for every exported symbol, each rendering without a
# warning; a program built with `pkg-config mreg` and with
# find_package(mreg) that runs against the installed library alone; the
# installed mreg-bench. The same tree staged with DESTDIR must work from
# where it is staged, too (mreg.pc and the RPATH are relative).
#   scripts/check-install.sh BUILD_DIR SOURCE_DIR
# ctest passes CMAKE, CC, MREG_VERSION, MREG_PREFIX (the configured
# prefix), MREG_BINDIR, MREG_MANDIR and MREG_BENCH (1: mreg-bench was
# built). Exit 0 pass, 1 fail.
set -euo pipefail

BUILD=$(realpath "$1")
SRC=$(realpath "$2")
CMAKE=${CMAKE:-cmake}
CC=${CC:-cc}
VERSION=${MREG_VERSION:?}
CONF_PREFIX=${MREG_PREFIX:-/usr/local}
MANDIR=${MREG_MANDIR:-share/man}
BINDIR=${MREG_BINDIR:-bin}
WORK=$BUILD/check-install
PREFIX=$WORK/prefix
STAGE=$WORK/stage

fail() {
	echo "check-install: FAIL: $*" >&2
	exit 1
}

note() {
	echo "check-install: $*"
}

symbols() {
	sed -n 's/^[[:space:]]*\(mreg_[a-z0-9_]*\);.*/\1/p' "$SRC/src/libmreg.map"
}

# The one mreg.pc under @root; its directory goes to PKG_CONFIG_PATH.
pc_dir() {
	local pc
	pc=$(find "$1" -name mreg.pc)
	[[ $(wc -l <<<"$pc") -eq 1 && -n $pc ]] || fail "not one mreg.pc under $1: $pc"
	dirname "$pc"
}

install_trees() {
	rm -rf "$WORK"
	mkdir -p "$WORK"
	"$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" ||
		fail "cmake --install --prefix $PREFIX (see $WORK/install.log)"
	DESTDIR=$STAGE "$CMAKE" --install "$BUILD" >"$WORK/stage.log" ||
		fail "DESTDIR=$STAGE cmake --install (see $WORK/stage.log)"
}

# Each symbol has man3/<symbol>.3: its own page, or a .so link to the
# page whose NAME section lists it. No page documents a symbol that is
# not exported.
check_man_symbols() {
	local man3=$PREFIX/$MANDIR/man3 sym page target
	for sym in $(symbols); do
		page=$man3/$sym.3
		[[ -f $page ]] || fail "no man page for $sym ($page)"
		target=$(sed -n 's/^\.so \(.*\)$/\1/p' "$page")
		[[ -z $target ]] || page=$PREFIX/$MANDIR/$target
		[[ -f $page ]] || fail "$sym.3 links to missing $target"
		sed -n '/^\.SH NAME/,/^\.SH/p' "$page" | grep -q "\b$sym\b" ||
			fail "$(basename "$page") does not name $sym in NAME"
	done
	for page in "$man3"/*.3; do
		symbols | grep -qx "$(basename "$page" .3)" ||
			fail "$(basename "$page") documents no exported symbol"
	done
	note "man3 pages for all $(symbols | wc -l) exported symbols"
}

# groff with every warning on must stay silent; man(1) and lexgrog (the
# whatis parser) must take each page too, when they are installed. Run
# from the man root, where ".so man3/x.3" resolves.
check_man_render() {
	local page err=$WORK/man.err
	command -v groff >/dev/null ||
		{ note "SKIP rendering: no groff (apt install groff-base)" && return; }
	pushd "$PREFIX/$MANDIR" >/dev/null
	for page in man*/*.[0-9]; do
		LC_ALL=C.UTF-8 grep -qP '[^\x00-\x7f]' "$page" &&
			fail "$page: not ASCII (use groff escapes)"
		groff -man -Tutf8 -ww -z "$page" 2>"$err" || fail "groff $page"
		[[ ! -s $err ]] || fail "groff warns on $page: $(cat "$err")"
		if command -v man >/dev/null; then
			MANWIDTH=80 man --warnings -l "$page" >/dev/null 2>"$err" ||
				fail "man -l $page"
			[[ ! -s $err ]] || fail "man -l warns on $page: $(cat "$err")"
		fi
		if command -v lexgrog >/dev/null && ! grep -q '^\.so ' "$page"; then
			lexgrog "$page" >/dev/null || fail "lexgrog: bad NAME in $page"
		fi
	done
	popd >/dev/null
	note "every page renders without warnings"
}

write_app() {
	cat >"$WORK/app.c" <<'EOF'
/* An application of the installed tree: headers, library, symbols. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mreg/mreg.h>

#define CHECK(cond)                                                    \
	do {                                                           \
		if (!(cond)) {                                         \
			fprintf(stderr, "app: failed: %s\n", #cond);   \
			return 1;                                      \
		}                                                      \
	} while (0)

/* Like snprintf: buflen 0 writes nothing, the length comes back. */
static int check_hist_format(void)
{
	struct mreg_folio_hist h = {.method = MREG_VERIFY_EXACT,
				    .page_size = 4096};
	char full[256], small[8], guard[4] = "abc";
	int need;

	h.folios[4] = 4096; /* 64K */
	h.folios[9] = 3;    /* 2M */
	h.pmd_mapped_bytes = 6ull << 20;
	need = mreg_folio_hist_format(&h, full, sizeof(full));
	CHECK(need > 0 && need == (int)strlen(full));
	CHECK(mreg_folio_hist_format(&h, NULL, 0) == need);
	CHECK(mreg_folio_hist_format(&h, guard, 0) == need);
	CHECK(!strcmp(guard, "abc"));
	CHECK(mreg_folio_hist_format(&h, small, sizeof(small)) == need);
	CHECK(!strncmp(small, full, sizeof(small) - 1) && !small[7]);
	CHECK(mreg_folio_hist_format(&h, small, 1) == need && !small[0]);
	return 0;
}

int main(void)
{
	uint64_t sizes[32];
	int nr, i;

	CHECK(!strcmp(mreg_backend_name(MREG_BACKEND_IO_URING), "io_uring"));
	CHECK(mreg_backend_parse("io_uring") == MREG_BACKEND_IO_URING);
	CHECK(mreg_backend_parse("nonesuch") == -EINVAL);
	nr = mreg_thp_sizes(sizes, 32);
	CHECK(nr >= 0 || nr == -ENOENT); /* no THP in sysfs: no sizes */
	printf("app: thp sizes:");
	for (i = 0; i < nr; i++)
		printf(" %llukB", (unsigned long long)sizes[i] >> 10);
	printf("\n");
	return check_hist_format();
}
EOF
	cat >"$WORK/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(app C)
find_package(mreg $VERSION REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE mreg::mreg)
EOF
}

# @bin must load libmreg from under @root, and nothing else's copy.
check_loads_from() {
	local bin=$1 root so
	root=$(realpath "$2")
	so=$(env -u LD_LIBRARY_PATH ldd "$bin" | awk '/libmreg\.so/ { print $3 }')
	[[ -n $so && $so != "not" ]] || fail "$bin: libmreg not found"
	[[ $(realpath "$so") == "$root"/* ]] || fail "$bin loads $so, not one under $root"
}

# Build app.c with the flags of the mreg.pc found under @root, run it.
check_pkgconfig() {
	local root=$1 pcdir flags libdir
	pcdir=$(pc_dir "$root")
	[[ $(PKG_CONFIG_PATH=$pcdir pkg-config --modversion mreg) == "$VERSION" ]] ||
		fail "$pcdir/mreg.pc: version is not $VERSION"
	flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs mreg)
	libdir=$(realpath "$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir mreg)")
	[[ -f $libdir/libmreg.so && $libdir == $(realpath "$root")/* ]] ||
		fail "mreg.pc: libdir $libdir has no libmreg.so or is not under $root"
	# shellcheck disable=SC2086 # the flags are words
	"$CC" -std=c11 -Wall -Wextra -Werror -o "$WORK/app-pc" "$WORK/app.c" \
		$flags -Wl,-rpath,"$libdir" || fail "cc app.c $flags"
	check_loads_from "$WORK/app-pc" "$root"
	env -u LD_LIBRARY_PATH "$WORK/app-pc" || fail "app built with pkg-config"
	note "pkg-config mreg under $root: $flags"
}

check_cmake_package() {
	local log=$WORK/app-cmake.log
	"$CMAKE" -S "$WORK" -B "$WORK/app-build" -DCMAKE_PREFIX_PATH="$PREFIX" \
		>"$log" 2>&1 || fail "find_package(mreg) (see $log)"
	"$CMAKE" --build "$WORK/app-build" >>"$log" 2>&1 ||
		fail "build with mreg::mreg (see $log)"
	check_loads_from "$WORK/app-build/app" "$PREFIX"
	env -u LD_LIBRARY_PATH "$WORK/app-build/app" >/dev/null ||
		fail "app built with find_package(mreg)"
	note "find_package(mreg $VERSION) builds and runs"
}

# The installed mreg-bench runs by its RPATH alone, under @root/@bin.
check_bench() {
	local bench=$1/$BINDIR/mreg-bench out=$WORK/bench.out err=$WORK/bench.err rc
	[[ -x $bench ]] || fail "no $bench"
	check_loads_from "$bench" "$1"
	env -u LD_LIBRARY_PATH "$bench" --help >"$out" 2>"$err" ||
		fail "mreg-bench --help exits $?: $(cat "$err")"
	grep -q '^usage: mreg-bench' "$out" || fail "mreg-bench --help: no usage on stdout"
	[[ ! -s $err ]] || fail "mreg-bench --help writes to stderr: $(cat "$err")"
	[[ $(env -u LD_LIBRARY_PATH "$bench" --version) == "mreg-bench $VERSION" ]] ||
		fail "mreg-bench --version does not say $VERSION"
	rc=0
	env -u LD_LIBRARY_PATH "$bench" --no-such-option >/dev/null 2>"$err" || rc=$?
	if [[ $rc -ne 2 ]] || ! grep -q '^usage:' "$err"; then
		fail "mreg-bench with a bad option: exit $rc, not 2 with usage on stderr"
	fi
	note "$bench: --help, --version, bad option"
}

main() {
	install_trees
	write_app
	check_man_symbols
	check_man_render
	check_pkgconfig "$PREFIX"
	check_pkgconfig "$STAGE"
	check_cmake_package
	if [[ ${MREG_BENCH:-1} == 1 ]]; then
		check_bench "$PREFIX"
		check_bench "$STAGE$CONF_PREFIX"
	else
		note "mreg-bench not built (MREG_BUILD_BENCH=OFF): not checked"
	fi
	note "PASS"
}

main "$@"
