// SPDX-License-Identifier: GPL-2.0
/*
 * Pins one page of the loading process (its argv) with FOLL_PIN and keeps
 * it until the module is removed: a deliberate pin leak, so the harness
 * can show that it fails a test whose pins do not balance.
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>

static struct page *mreg_pinleak_page;

static int __init mreg_pinleak_init(void)
{
	unsigned long addr = current->mm->arg_start & PAGE_MASK;
	int ret = pin_user_pages_fast(addr, 1, 0, &mreg_pinleak_page);

	if (ret != 1)
		return ret < 0 ? ret : -EFAULT;
	pr_info("mreg_pinleak: holding one pin\n");
	return 0;
}

static void __exit mreg_pinleak_exit(void)
{
	unpin_user_page(mreg_pinleak_page);
}

module_init(mreg_pinleak_init);
module_exit(mreg_pinleak_exit);
MODULE_DESCRIPTION("mreg guest harness check: leaks one FOLL_PIN");
MODULE_LICENSE("GPL");
