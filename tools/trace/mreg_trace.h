/* SPDX-License-Identifier: MIT */
/*
 * What mreg-trace's BPF side and its command line share: the registration
 * paths it knows, and the record it keeps for each (process, path).
 */
#ifndef MREG_TRACE_H
#define MREG_TRACE_H

#define MREG_TRACE_COMM_LEN 16
#define MREG_TRACE_LAT_SLOTS 40  /* log2 of nanoseconds: up to ~18 min */
#define MREG_TRACE_ORDERS 19	  /* folio orders 0..18 (1 GB with 4 kB) */

/* Registration paths, each one kernel function (mreg_trace.c names them). */
enum mreg_trace_path {
	PATH_PUP_FAST,	     /* pin_user_pages_fast() */
	PATH_GUP_FAST,	     /* get_user_pages_fast() */
	PATH_PUP_REMOTE,     /* pin_user_pages_remote() */
	PATH_GUP_LONGTERM,   /* __gup_longterm_locked() */
	PATH_VERBS_REG_MR,   /* ib_uverbs_reg_mr() */
	PATH_VERBS_UMEM,     /* ib_umem_get() (6.x), ib_umem_get_desc() (7.x) */
	PATH_VFIO_MAP,	     /* vfio_dma_do_map() */
	PATH_VFIO_UNMAP,     /* vfio_dma_do_unmap() */
	PATH_IOMMUFD_MAP,    /* iommufd_ioas_map() */
	PATH_IOPT_MAP,	     /* iopt_map_user_pages() */
	PATH_URING_REGISTER, /* io_sqe_buffers_register() */
	PATH_URING_UPDATE,   /* __io_sqe_buffers_update() */
	PATH_NR,
};

struct mreg_trace_key {
	__u32 tgid;
	__u32 path;
};

/*
 * Per (process, path). bytes: what the call was asked to register (GUP:
 * pages pinned); pages: pages pinned beneath it (the outermost GUP call's
 * result); order_pages[o]: of those, pages in folios of order o, read from
 * the pages array GUP returned.
 */
struct mreg_trace_stat {
	char comm[MREG_TRACE_COMM_LEN];
	__u64 calls;
	__u64 bytes;
	__u64 pages;
	__u64 errors;
	__u64 ns;
	__u64 lat[MREG_TRACE_LAT_SLOTS];
	__u64 order_pages[MREG_TRACE_ORDERS];
};

struct mreg_trace_err_key {
	__u32 tgid;
	__u32 path;
	__s32 err; /* positive errno */
	__u32 pad;
};

#endif
