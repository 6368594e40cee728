// SPDX-License-Identifier: GPL-2.0
/*
 * run-as UID GID PROG [ARGS...]: run PROG with no supplementary groups as
 * UID:GID.  The guest has no /etc/passwd, so su and setpriv's user names
 * cannot be used; kmod-trinity runs trinity unprivileged with this.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uid_t uid;
	gid_t gid;

	if (argc < 4) {
		fprintf(stderr, "usage: run-as UID GID PROG [ARGS...]\n");
		return 2;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 0);
	gid = (gid_t)strtoul(argv[2], NULL, 0);
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid)) {
		fprintf(stderr, "run-as: %u:%u: %s\n", uid, gid, strerror(errno));
		return 1;
	}
	execvp(argv[3], argv + 3);
	fprintf(stderr, "run-as: %s: %s\n", argv[3], strerror(errno));
	return 127;
}
