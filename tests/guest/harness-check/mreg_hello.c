// SPDX-License-Identifier: GPL-2.0
/* Smallest module: proves out-of-tree builds against the headers work. */
#include <linux/module.h>

static int __init mreg_hello_init(void)
{
	pr_info("mreg_hello: loaded\n");
	return 0;
}

static void __exit mreg_hello_exit(void)
{
}

module_init(mreg_hello_init);
module_exit(mreg_hello_exit);
MODULE_DESCRIPTION("mreg guest harness check module");
MODULE_LICENSE("GPL");
