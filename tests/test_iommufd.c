// SPDX-License-Identifier: MIT
/*
 * iommufd through mreg with a real device attached to the IOAS: IOAS_MAP
 * of every folio size pins the range and IOAS_UNMAP releases every pin.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "tcommon.h"
#include "tvfio.h"

#define LEN (32u << 20)

static int map_balance(const struct t_folio *c, const char *bdf)
{
	struct mreg_domain_attr attr = {.backend = MREG_BACKEND_IOMMUFD,
					.comp_mask = MREG_DOMAIN_ATTR_DEVICE,
					.device = bdf};
	struct t_pins before, mapped;
	struct mreg_region *r;
	struct mreg_domain *d;
	struct mreg_buf *buf;

	T_CHECK(!t_buf(c, LEN, &buf), "%s: %s", c->name, mreg_last_error());
	T_CHECK(!mreg_domain_open(&attr, &d), "%s", mreg_last_error());
	t_pins_read(&before);
	T_CHECK(!mreg_region_register(d, mreg_buf_addr(buf), LEN, &r), "%s: %s",
		c->name, mreg_last_error());
	t_pins_read(&mapped);
	T_CHECK(mapped.acquired - before.acquired >= LEN / 4096,
		"%s: IOAS_MAP pinned %" PRIu64 " pages", c->name,
		mapped.acquired - before.acquired);
	T_CHECK(!mreg_region_deregister(r, NULL), "%s", mreg_last_error());
	T_CHECK(t_pins_balanced(&before), "%s: pins leaked", c->name);
	T_CHECK(!mreg_domain_close(d), "%s", mreg_last_error());
	printf("  %-10s IOAS_MAP/UNMAP, pins balanced\n", c->name);
	mreg_buf_free(buf);
	return T_PASS;
}

int main(void)
{
	struct t_folio cases[32];
	char bdf[64];
	int n, i, ret = T_PASS;

	t_init("test_iommufd");
	if (!mreg_backend_supported(MREG_BACKEND_IOMMUFD))
		return t_skip("no /dev/iommu: kernel without CONFIG_IOMMUFD "
			      "(iommufd is Linux 6.2; Debian builds none)");
	if (t_vfio_device(bdf, sizeof(bdf)))
		return t_skip("no device bound to vfio-pci");
	if (geteuid())
		return t_skip(
			"folio sizes are chosen through sysfs: needs root");
	n = t_folio_cases(cases, 32, MREG_BACKING_ANON);
	for (i = 0; i < n && !ret; i++)
		ret = map_balance(&cases[i], bdf);
	return ret;
}
