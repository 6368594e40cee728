// SPDX-License-Identifier: MIT
#include <stdlib.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentiles: every reported figure is one that was seen. */
static double rank(const double *sorted, int nr, int pct)
{
	int idx = (pct * nr + 99) / 100 - 1;

	return sorted[idx < 0 ? 0 : idx];
}

void stats_compute(double *samples, int nr, struct stats *out)
{
	if (!nr)
		return;
	qsort(samples, (size_t)nr, sizeof(*samples), cmp_double);
	out->min = samples[0];
	out->max = samples[nr - 1];
	out->p90 = rank(samples, nr, 90);
	out->median = nr % 2 ? samples[nr / 2]
			     : (samples[nr / 2 - 1] + samples[nr / 2]) / 2;
}
