// SPDX-License-Identifier: MIT
/*
 * What else the kernel did while a cell ran. Under qemu's icount clock a
 * timing is a count of every guest instruction, those that kcompactd,
 * khugepaged or kswapd execute on the other vCPU too, so a cell that
 * overlapped such work reads slower without anything in its own path
 * changing. Each cell records the deltas of the /proc/vmstat counters of
 * that background memory work, and the CPU ticks the rest of the system
 * used (all CPUs' busy time in /proc/stat minus this process's), so such
 * a cell can be told apart from a real difference.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"

const char *const background_names[BG_NR] = {
	[BG_COMPACT_STALL] = "compact_stall",
	[BG_COMPACT_WAKE] = "compact_daemon_wake",
	[BG_COMPACT_MIGRATE] = "compact_migrate_scanned",
	[BG_COMPACT_DAEMON_MIGRATE] = "compact_daemon_migrate_scanned",
	[BG_PGMIGRATE] = "pgmigrate_success",
	[BG_THP_COLLAPSE] = "thp_collapse_alloc",
	[BG_THP_SPLIT] = "thp_split_page",
	[BG_KSWAPD_SCAN] = "pgscan_kswapd",
	[BG_OTHER_TICKS] = "other_cpu_ticks",
};

static void read_vmstat(uint64_t *v)
{
	FILE *f = fopen("/proc/vmstat", "re");
	char name[64];
	uint64_t val;
	int i;

	if (!f)
		return;
	while (fscanf(f, "%63s %" SCNu64, name, &val) == 2)
		for (i = 0; i < BG_OTHER_TICKS; i++)
			if (!strcmp(name, background_names[i]))
				v[i] = val;
	fclose(f);
}

/* Busy ticks of all CPUs (the first line of /proc/stat), less this
 * process's own user and system time in the same unit. */
static uint64_t other_ticks(void)
{
	uint64_t user, nice, sys, idle, iowait, irq, softirq, own;
	long hz = sysconf(_SC_CLK_TCK);
	struct rusage ru;
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f,
		   "cpu %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64,
		   &user, &nice, &sys, &idle, &iowait, &irq, &softirq);
	fclose(f);
	if (n != 7 || hz <= 0 || getrusage(RUSAGE_SELF, &ru))
		return 0;
	own = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		      (uint64_t)hz +
	      ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
		      (uint64_t)hz / 1000000;
	return user + nice + sys + irq + softirq - own;
}

void background_snapshot(struct background *b)
{
	memset(b, 0, sizeof(*b));
	read_vmstat(b->v);
	b->v[BG_OTHER_TICKS] = other_ticks();
}

/* @b becomes the counts from @b to now; a counter that went back
 * (rounding of the tick difference) counts as none. */
void background_delta(struct background *b)
{
	struct background now;
	int i;

	background_snapshot(&now);
	for (i = 0; i < BG_NR; i++)
		b->v[i] = now.v[i] > b->v[i] ? now.v[i] - b->v[i] : 0;
}

/*
 * How many physically contiguous runs back [addr, addr + len): VFIO and
 * iommufd map a contiguous run with one IOMMU call and rxe's scatterlist
 * merges it, so the same folio layout can cost different amounts on the
 * same kernel when the pages came from the allocator in another order.
 * 0 when the PFNs cannot be read (not root, or no pagemap).
 */
uint64_t pfn_runs(const void *addr, size_t len)
{
	uint64_t chunk[512], prev = 0, runs = 0;
	uintptr_t first = (uintptr_t)addr / (uintptr_t)getpagesize();
	size_t pages = len / (size_t)getpagesize(), done = 0, i, n;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (done < pages) {
		n = pages - done < 512 ? pages - done : 512;
		if (pread(fd, chunk, n * 8, (off_t)((first + done) * 8)) !=
		    (ssize_t)(n * 8))
			break;
		for (i = 0; i < n; i++) {
			uint64_t pfn = chunk[i] & ((1ull << 55) - 1);

			if (!(chunk[i] >> 63) || !pfn) {
				close(fd);
				return 0;
			}
			runs += pfn != prev + 1;
			prev = pfn;
		}
		done += n;
	}
	close(fd);
	return done == pages ? runs : 0;
}
