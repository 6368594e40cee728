/* SPDX-License-Identifier: MIT */
/*
 * The registration paths this guest offers (io_uring, verbs, VFIO,
 * iommufd, mreg.ko, DPDK), for the reliability tests that run every one of
 * them the same way, and the per-process counters they check.
 */
#ifndef MREG_TPATHS_H
#define MREG_TPATHS_H

#include <stddef.h>

#include <mreg/mreg.h>

#define T_MAX_PATHS 6

struct t_path {
	enum mreg_backend backend;
	const char *name;
	char device[64]; /* VFIO/iommufd/DPDK: the PCI address; else "" */
};

/* Fill @paths with the usable paths; print why each other one is not.
 * Return: their number. */
int t_paths(struct t_path *paths, int max);
/* @name is one of the paths' names: keep only that one (NULL: all). */
int t_paths_only(struct t_path *paths, int n, const char *name);
int t_path_open(const struct t_path *p, struct mreg_domain **d);
/* A small registration through a fresh domain: the path still works. */
int t_path_works(const struct t_path *p);

/* A /proc/self/status field in kB (VmPin: pinned_vm, VmLck: locked_vm),
 * or -1. */
long t_status_kb(const char *field);
/* A "Field: N kB" line of /proc/meminfo, in kB; -1 if absent. */
long t_meminfo_kb(const char *field);
/* Write @val to a sysfs, procfs or cgroup file. Return: 0 or -errno. */
int t_write_file(const char *path, const char *val);
/* Anonymous memory, faulted in (@populate) or not. */
void *t_map(size_t len, int populate);

#endif
