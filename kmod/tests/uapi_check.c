// SPDX-License-Identifier: GPL-2.0
/*
 * include/uapi/mreg.h must build as plain C11 userspace code and keep a
 * layout without implicit padding, identical for 32- and 64-bit callers:
 * the sizes and offsets below are the ABI of version 1.  Structs grow
 * only at their end (copy_struct_from_user()): a grown struct keeps its
 * first-version fields where they were and says here when it grew.
 */
#include <stddef.h>

#include "uapi/mreg.h"

#define ABI(type, bytes) _Static_assert(sizeof(struct type) == (bytes), #type)
#define AT(type, field, off) \
	_Static_assert(offsetof(struct type, field) == (off), #type "." #field)

/* 56 bytes in the first version; user_locked_pages appended (issue 28). */
ABI(mreg_info, 64);
AT(mreg_info, mm_pinned_pages, 48);
AT(mreg_info, user_locked_pages, 56);
ABI(mreg_set_limit, 16);
ABI(mreg_bench, 336);
ABI(mreg_pin, 56);
ABI(mreg_extent, 32);
ABI(mreg_query, 40);
ABI(mreg_unpin, 16);
ABI(mreg_read, 40);
AT(mreg_bench, addr, 24);
AT(mreg_bench, order_hist, 80);
AT(mreg_pin, addr, 16);
AT(mreg_pin, out_handle, 32);
AT(mreg_query, extents, 16);
AT(mreg_read, dst, 32);

int main(void)
{
	return MREG_IOC_PIN == MREG_IOC_INFO ? 1 : 0;
}
