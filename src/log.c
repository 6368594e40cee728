// SPDX-License-Identifier: MIT
/* One logging hook for the whole library; nothing is printed by default. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static mreg_log_fn log_fn;
static void *log_ctx;
static _Thread_local char last_error[512];

MREG_EXPORT void mreg_set_log(mreg_log_fn fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

MREG_EXPORT const char *mreg_last_error(void)
{
	return last_error;
}

static void mreg_vlog(int level, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level <= MREG_LOG_ERR)
		snprintf(last_error, sizeof(last_error), "%s", msg);
	if (log_fn)
		log_fn(log_ctx, level, msg);
}

void mreg_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mreg_vlog(level, fmt, ap);
	va_end(ap);
}

int mreg_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mreg_vlog(MREG_LOG_ERR, fmt, ap);
	va_end(ap);
	return err;
}
