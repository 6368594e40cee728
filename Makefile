# Front door: every target installs what it is missing, then builds.
#   make bench   the default benchmark on this host (table, JSON, CSV, plot)
#   make test    every test: host tests, then the qemu guest suite
#   make test-kernels  the guest suite on Debian's 5.10, 6.1, 6.12 and 7.3
#   make compare-7.3   stock against patched 7.3: kbench, then end to end
#   make install library, headers, mreg.pc, CMake package, mreg-bench and
#                man pages into $(DESTDIR)$(PREFIX) (PREFIX=/usr/local)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DMREG_WERROR=ON
PREFIX ?= /usr/local

.PHONY: all deps build install bench bench-guest compare test test-host \
	test-kernels compare-7.3 format clean

all: build

# DPDK's headers land in build/cache/dpdk-dev, outside every build tree.
DPDK_DEV ?= $(CURDIR)/build/cache/dpdk-dev

deps:
	scripts/deps.sh build bench trace
	scripts/dpdk-dev.sh $(DPDK_DEV)

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

# Configured for PREFIX, so that GNUInstallDirs picks the library directory
# (lib/<multiarch> for /usr on Debian); the installed tree is relocatable.
install: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	bench/run.sh $(BUILD) $(BENCH_ARGS)

# The same bench in the qemu guest on stock 6.12 (GUEST_ARGS: --sizes 256m,1g).
bench-guest: build
	bench/guest.sh $(BUILD) $(GUEST_ARGS)

# Stock vs patched 6.12 end to end (builds both kernels first: ~35 min
# cold, incremental after; the guest runs take ~30 min more under TCG),
# then the real clients, QEMU's passthrough start and fio's registered
# buffers (bench/clients.sh, ~20 min more).
compare: build
	bench/compare.sh $(BUILD) $(COMPARE_ARGS)
	bench/clients.sh $(BUILD) --out $(BUILD)/compare/clients

# The same on 7.3, the base of the series upstream could take: both
# kernels built from linux-source-7.3, the kbench table with kcount, then
# the end-to-end cells (kernel/results/2026-12-06-series-7.3.md).
compare-7.3: build
	kernel/build.sh --base 7.3 stock patched
	kernel/build.sh --base 7.3 bench stock patched
	bench/compare.sh $(BUILD) --kernels 7.3/stock,7.3/patched \
		--only io_uring,verbs,vfio,iommufd,kmod,kbench \
		--folios 4k,64k,2m-pte,2m-pmd --out $(BUILD)/compare-7.3
	bench/clients.sh $(BUILD) --kernels 7.3/stock,7.3/patched \
		--out $(BUILD)/compare-7.3/clients

test: build
	ctest --test-dir $(BUILD) --output-on-failure $(CTEST_ARGS)

# The guest suite on each of Debian's kernels (5.10, 6.1, 6.12, 7.3; about
# 25 minutes): docs/results/kernels.md, docs/results/support.tsv and the
# README's support table. KERNELS="6.1 5.10" runs only those.
test-kernels: build
	scripts/test-kernels.sh $(BUILD) $(KERNELS)

test-host: build
	ctest --test-dir $(BUILD) --output-on-failure -L host

format:
	scripts/deps.sh format
	clang-format -i include/mreg/*.h src/*.[ch] src/backends/*.c src/monitors/*.c \
		bench/*.[ch] tests/*.[ch] examples/*.c

clean:
	rm -rf $(BUILD)
