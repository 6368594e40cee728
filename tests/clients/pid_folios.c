// SPDX-License-Identifier: MIT
/*
 * pid-folios: the folios of a buffer that another program owns, verified
 * exactly, while it runs.
 *
 *   pid-folios PID BYTES EXPECT
 *
 * The buffer is the first BYTES of PID's smallest read-write mapping of
 * BYTES to BYTES + 2 MB (a VM's RAM in QEMU is a mapping of exactly its
 * size; fio maps its I/O buffers with a page to spare for O_DIRECT
 * alignment and starts them at the mapping's start), found in
 * /proc/PID/maps; its folios come from mreg_verify_pid_range(). EXPECT is the
 * layout it must have: 4k, 64k (any mTHP size: 16k, 32k, ...), 2m-pmd
 * (PMD-sized folios mapped by PMDs), 2m-pte (PMD-sized folios under PTEs) or
 * any (print only). Every byte must be backed and sit in a folio of that size.
 * Prints "pid-folios: PID ADDR+BYTES: HISTOGRAM"; exit 0 when it matches, 1
 * when not, 2 on bad arguments or a missing mapping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mreg/mreg.h>

struct expect {
	uint64_t folio; /* bytes; 0: any */
	int pmd;	/* 1: PMD-mapped, 0: none, -1: any */
	bool ends;	/* base pages allowed at the ends */
};

static int parse_expect(const char *arg, struct expect *e)
{
	char s[32], *end, *plus;

	snprintf(s, sizeof(s), "%s", arg);
	plus = strchr(s, '+');
	e->ends = plus && !strcmp(plus, "+ends");
	if (plus && !e->ends)
		return -1;
	if (plus)
		*plus = '\0';
	e->pmd = 0;
	if (!strcmp(s, "any")) {
		e->folio = 0;
		e->pmd = -1;
		return 0;
	}
	if (!strcmp(s, "2m-pmd") || !strcmp(s, "2m-pte")) {
		e->folio = 2ull << 20;
		e->pmd = s[3] == 'p' && s[4] == 'm';
		return 0;
	}
	e->folio = strtoull(s, &end, 10) << 10;
	return (*end == 'k' || *end == 'K') && !end[1] && e->folio ? 0 : -1;
}

#define SLACK (2ull << 20)

/* The smallest rw mapping of @bytes to @bytes + SLACK holds the buffer. */
static int find_mapping(pid_t pid, uint64_t bytes, uint64_t *addr)
{
	unsigned long long lo, hi, best = 0;
	char path[64], *line = NULL, perms[8];
	size_t cap = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "pid-folios: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 &&
		    hi - lo >= bytes && hi - lo <= bytes + SLACK &&
		    perms[0] == 'r' && perms[1] == 'w') {
			if (!found || hi - lo < best) {
				*addr = lo;
				best = hi - lo;
				found = 1;
			} else if (hi - lo == best) {
				found++;
			}
		}
	free(line);
	fclose(f);
	if (found == 1)
		return 0;
	fprintf(stderr,
		"pid-folios: pid %d has %d smallest read-write mappings of "
		"%" PRIu64 " bytes or a little more, not one\n",
		(int)pid, found, bytes);
	return -1;
}

static bool matches(const struct mreg_folio_hist *h, uint64_t bytes,
		    const struct expect *e)
{
	uint64_t want = bytes, small;
	unsigned int order = 0;

	if (h->method != MREG_VERIFY_EXACT || h->unbacked_bytes)
		return false;
	if (!e->folio)
		return e->pmd < 0 ||
		       h->pmd_mapped_bytes == (e->pmd ? bytes : 0);
	while ((uint64_t)h->page_size << order < e->folio)
		order++;
	if (order >= MREG_HIST_ORDERS)
		return false;
	if (e->ends && order) {
		/* Base pages at the ends only, less than a folio at each. */
		small = h->bytes[0];
		if (small + h->bytes[order] != bytes || small >= 2 * e->folio)
			return false;
		want = h->bytes[order];
	} else if (h->bytes[order] != bytes) {
		return false;
	}
	return e->pmd < 0 || h->pmd_mapped_bytes == (e->pmd ? want : 0);
}

/* "1073741824", "1024M", "1G": bytes, or 0 for anything else. */
static uint64_t parse_bytes(const char *s)
{
	uint64_t v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	}
	return *end ? 0 : v;
}

int main(int argc, char **argv)
{
	struct mreg_folio_hist h = {.size = sizeof(h)};
	uint64_t bytes, addr = 0;
	struct expect e;
	char text[256], *end = NULL;
	pid_t pid;
	int ret;

	pid = argc == 4 ? (pid_t)strtol(argv[1], &end, 10) : 0;
	bytes = argc == 4 ? parse_bytes(argv[2]) : 0;
	if (argc != 4 || pid <= 0 || *end || !bytes ||
	    parse_expect(argv[3], &e)) {
		fprintf(stderr, "usage: pid-folios PID BYTES[K|M|G] "
				"4k|16k|64k|...|2m-pmd|2m-pte[+ends]|any\n");
		return 2;
	}
	if (find_mapping(pid, bytes, &addr))
		return 2;
	ret = mreg_verify_pid_range(pid, addr, bytes, &h);
	if (ret) {
		fprintf(stderr, "pid-folios: %s\n", mreg_last_error());
		return 2;
	}
	mreg_folio_hist_format(&h, text, sizeof(text));
	printf("pid-folios: %d 0x%" PRIx64 "+%" PRIu64 ": %s\n", (int)pid, addr,
	       bytes, text);
	/* Machine-readable: bytes of the range in each folio order. */
	printf("pid-folios-bytes:");
	for (unsigned int o = 0; o < MREG_HIST_ORDERS; o++)
		if (h.bytes[o])
			printf(" %u:%" PRIu64, o, h.bytes[o]);
	printf("\n");
	if (matches(&h, bytes, &e))
		return 0;
	fprintf(stderr, "pid-folios: pid %d: wanted %s, got %s\n", (int)pid,
		argv[3], text);
	return 1;
}
