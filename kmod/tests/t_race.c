// SPDX-License-Identifier: GPL-2.0
/*
 * Races: two threads pin, read back and unpin random pieces of a region
 * while another thread munmaps and remaps, mprotects, MADV_DONTNEEDs and
 * forks over it.  Pins may fail with EFAULT (the piece is unmapped or
 * read-only at that moment) but must never see bytes the process did not
 * write; the harness fails the test on any kernel splat or pin leak.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mt.h"

#define NPAGES 1024UL
#define LEN (NPAGES * MT_PAGE)
#define SEED 42

static char *region;
static int mfd;
static atomic_int stop;
static atomic_ulong pins_ok, pins_failed, mutations;

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Each checked word is 0 (fresh page) or the value the process wrote. */
static void check_copy(const char *copy, size_t first, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const uint32_t *w = (const uint32_t *)(copy + i * MT_PAGE);
		uint32_t want = mt_page_word(SEED, first + i);

		MT_CHECK(w[0] == 0 || w[0] == want, "page %zu word0 0x%x",
			 first + i, w[0]);
		MT_CHECK(w[MT_PAGE / 4 - 1] == 0 || w[MT_PAGE / 4 - 1] == ~want,
			 "page %zu last word 0x%x", first + i,
			 w[MT_PAGE / 4 - 1]);
	}
}

static void pin_once(unsigned int *s, char *copy)
{
	size_t first = rnd(s) % NPAGES, n = 1 + rnd(s) % (NPAGES - first);
	struct mreg_pin p;
	int ret;

	ret = mt_pin(mfd, (uintptr_t)region + first * MT_PAGE, n * MT_PAGE,
		     rnd(s) % 4 ? 0 : MREG_PIN_FLAG_READONLY, 0, &p);
	if (ret) {
		MT_CHECK(ret == -EFAULT || ret == -ENOMEM, "PIN: %s",
			 strerror(-ret));
		pins_failed++;
		return;
	}
	MT_EXPECT_ERR(mt_read(mfd, p.out_handle, 0, n * MT_PAGE, copy), 0,
		      "READ");
	check_copy(copy, first, n);
	MT_EXPECT_ERR(mt_unpin(mfd, p.out_handle), 0, "UNPIN");
	pins_ok++;
}

static void *pinner(void *arg)
{
	unsigned int s = (unsigned int)(uintptr_t)arg;
	char *copy = malloc(LEN);

	MT_CHECK(copy, "malloc");
	while (!stop)
		pin_once(&s, copy);
	free(copy);
	return NULL;
}

static void refill(size_t first, size_t n)
{
	size_t i;

	for (i = first; i < first + n; i++) {
		uint32_t *w = (uint32_t *)(region + i * MT_PAGE);

		w[0] = mt_page_word(SEED, i);
		w[MT_PAGE / 4 - 1] = ~w[0];
	}
}

static void fork_once(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		region[0] ^= 0;
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void mutate_once(unsigned int *s)
{
	size_t first = rnd(s) % NPAGES, n = 1 + rnd(s) % (NPAGES - first);
	char *p = region + first * MT_PAGE;

	switch (rnd(s) % 4) {
	case 0:
		munmap(p, n * MT_PAGE);
		MT_CHECK(mmap(p, n * MT_PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p,
			 "remap");
		break;
	case 1:
		mprotect(p, n * MT_PAGE, PROT_READ);
		usleep(100);
		mprotect(p, n * MT_PAGE, PROT_READ | PROT_WRITE);
		break;
	case 2:
		madvise(p, n * MT_PAGE, MADV_DONTNEED);
		break;
	default:
		fork_once();
	}
	refill(first, n);
	mutations++;
}

int main(void)
{
	unsigned long secs = mt_env_ulong("MREG_RACE_SECONDS", 20);
	pthread_t t[2];
	unsigned int s = 1;
	time_t end;

	mfd = mt_open();
	region = mt_map(LEN, MT_2M);
	refill(0, NPAGES);
	pthread_create(&t[0], NULL, pinner, (void *)1);
	pthread_create(&t[1], NULL, pinner, (void *)2);
	end = time(NULL) + secs;
	while (time(NULL) < end)
		mutate_once(&s);
	stop = 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	close(mfd);
	printf("%lus: %lu pins ok, %lu failed, %lu mutations\n", secs,
	       (unsigned long)pins_ok, (unsigned long)pins_failed,
	       (unsigned long)mutations);
	MT_CHECK(pins_ok > 0, "no pin succeeded");
	printf("PASS race\n");
	return 0;
}
