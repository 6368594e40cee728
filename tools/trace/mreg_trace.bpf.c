// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * mreg-trace's kernel side: fentry/fexit on each registration path.
 *
 * Every path records calls, bytes, errors and a log2 latency histogram
 * per (process, path). The outermost GUP call of a thread also walks the
 * pages array it returns, folio by folio (bpf_loop; one step per folio,
 * so a 64 kB registration costs one step per 16 pages), and adds the
 * pages of each folio order to its own record and to the consumer (VFIO,
 * iommufd, verbs, io_uring) the thread is inside, if any. Inner GUP
 * calls (pin_user_pages_remote() -> __gup_longterm_locked()) count their
 * calls and time but not pages, which their caller already counts.
 *
 * Struct layouts come from the running kernel's BTF (CO-RE); the uapi
 * structs read here (VFIO's) have a fixed layout.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "mreg_trace.h"

/* Hash maps allocate on insert (BPF_F_NO_PREALLOC): preallocating every
 * table's worth of entries made the tracer slow to start, for entries
 * that are mostly never used. */

#define PAGE_SIZE 4096
#define MAX_WALK  (1 << 23) /* bpf_loop's own limit */

const volatile __u32 filter_tgid;
const volatile char filter_comm[MREG_TRACE_COMM_LEN];
const volatile __u64 min_bytes;
/* Paths asked for, bit per enum mreg_trace_path: the VFIO ioctl fallback
 * serves two paths and must record only those wanted. */
const volatile __u32 want_paths = ~0u;

/* Calls not recorded because a table was full, for the report. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

/* A call in flight, per (thread, path). */
struct inflight {
	__u64 ts;
	__u64 end; /* set before the folio walk: its cost is not the call's */
	__u64 aux; /* kprobes: the pages array, kept for the return probe */
	__u64 bytes;
	__u64 pages;
	__u64 order_pages[MREG_TRACE_ORDERS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u64); /* tid << 8 | path */
	__type(value, struct inflight);
} inflight SEC(".maps");

/* The consumer paths each thread is inside (a bit per path; verbs_umem
 * runs inside verbs_reg_mr, iopt_map inside iommufd_map), and its GUP
 * depth. */
struct thread_state {
	__u32 consumers;
	__u32 gup_depth;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct thread_state);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, struct mreg_trace_key);
	__type(value, struct mreg_trace_stat);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct mreg_trace_err_key);
	__type(value, __u64);
} errors SEC(".maps");

/* A zeroed record to insert from: too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct mreg_trace_stat);
} scratch SEC(".maps");

static __always_inline __u64 inflight_key(__u32 tid, __u32 path)
{
	return (__u64)tid << 8 | path;
}

/* The process's name, not the calling thread's (QEMU's "CPU 0/TCG"). */
static __always_inline void process_comm(char *comm)
{
	struct task_struct *task = bpf_get_current_task_btf();

	bpf_probe_read_kernel_str(comm, MREG_TRACE_COMM_LEN,
				  task->group_leader->comm);
}

static __always_inline bool wanted(void)
{
	char comm[MREG_TRACE_COMM_LEN];
	int i;

	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return false;
	if (!filter_comm[0])
		return true;
	process_comm(comm);
	for (i = 0; i < MREG_TRACE_COMM_LEN; i++) {
		if (comm[i] != filter_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

static __always_inline struct thread_state *thread(__u32 tid)
{
	struct thread_state zero = {}, *t;

	t = bpf_map_lookup_elem(&threads, &tid);
	if (t)
		return t;
	bpf_map_update_elem(&threads, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&threads, &tid);
}

static __always_inline void enter_aux(__u32 path, __u64 bytes, bool consumer,
				      __u64 aux)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 key = inflight_key(tid, path);
	struct inflight *in, zero = {};
	struct thread_state *t;

	if (!(want_paths & (1u << path)) || !wanted())
		return;
	t = thread(tid);
	if (!t)
		return;
	if (consumer)
		t->consumers |= 1u << path;
	else
		t->gup_depth++;
	zero.bytes = bytes;
	zero.aux = aux;
	bpf_map_update_elem(&inflight, &key, &zero, BPF_ANY);
	in = bpf_map_lookup_elem(&inflight, &key);
	if (in)
		in->ts = bpf_ktime_get_ns();
}

static __always_inline void enter(__u32 path, __u64 bytes, bool consumer)
{
	enter_aux(path, bytes, consumer, 0);
}

static __always_inline struct mreg_trace_stat *stat_of(__u32 tgid, __u32 path)
{
	struct mreg_trace_key key = {.tgid = tgid, .path = path};
	struct mreg_trace_stat *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&stats, &key);
	if (s)
		return s;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return NULL;
	__builtin_memset(s, 0, sizeof(*s));
	process_comm(s->comm);
	/* Another CPU may insert first: then its entry is the one. */
	bpf_map_update_elem(&stats, &key, s, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&stats, &key);
	if (!s) {
		__u64 *d = bpf_map_lookup_elem(&dropped, &zero);

		if (d)
			__sync_fetch_and_add(d, 1);
	}
	return s;
}

static __always_inline __u32 log2_slot(__u64 ns)
{
	__u32 slot = 0;
	int i;

	for (i = 0; i < MREG_TRACE_LAT_SLOTS - 1; i++) {
		if (ns <= 1)
			break;
		ns >>= 1;
		slot++;
	}
	return slot;
}

static __always_inline void record(__u32 path, struct inflight *in, long ret)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 ns = (in->end ? in->end : bpf_ktime_get_ns()) - in->ts;
	struct mreg_trace_err_key ek = {.tgid = tgid, .path = path};
	struct mreg_trace_stat *s;
	__u64 one = 1, *n;
	__u32 slot;
	int i;

	if (ret >= 0 && in->bytes < min_bytes)
		return;
	s = stat_of(tgid, path);
	if (!s)
		return;
	__sync_fetch_and_add(&s->calls, 1);
	__sync_fetch_and_add(&s->ns, ns);
	slot = log2_slot(ns);
	if (slot < MREG_TRACE_LAT_SLOTS)
		__sync_fetch_and_add(&s->lat[slot], 1);
	if (ret < 0) {
		__sync_fetch_and_add(&s->errors, 1);
		ek.err = (__s32)-ret;
		n = bpf_map_lookup_elem(&errors, &ek);
		if (!n && !bpf_map_update_elem(&errors, &ek, &one, BPF_NOEXIST))
			return;
		/* Inserted meanwhile by another CPU: count on it. */
		n = n ? n : bpf_map_lookup_elem(&errors, &ek);
		if (n)
			__sync_fetch_and_add(n, 1);
		return;
	}
	__sync_fetch_and_add(&s->bytes, in->bytes);
	__sync_fetch_and_add(&s->pages, in->pages);
	for (i = 0; i < MREG_TRACE_ORDERS; i++)
		__sync_fetch_and_add(&s->order_pages[i], in->order_pages[i]);
}

/* The in-flight record of consumer path @path of thread @tid, if the
 * thread is inside it. */
static __always_inline struct inflight *consumer_rec(__u32 tid, __u32 bits,
						     int path)
{
	__u64 key = inflight_key(tid, path);

	if (!(bits & (1u << path)))
		return NULL;
	return bpf_map_lookup_elem(&inflight, &key);
}

static __always_inline __u32 consumers_of(__u32 tid)
{
	struct thread_state *t = bpf_map_lookup_elem(&threads, &tid);

	return t ? t->consumers : 0;
}

/* Bytes a nested call registers, added to every consumer it runs under. */
static __always_inline void add_bytes(__u64 bytes)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), bits;
	struct inflight *c;
	int p;

	if (!wanted())
		return;
	bits = consumers_of(tid);
	for (p = PATH_VERBS_REG_MR; p < PATH_NR; p++) {
		c = consumer_rec(tid, bits, p);
		if (c)
			__sync_fetch_and_add(&c->bytes, bytes);
	}
}

static __always_inline void leave(__u32 path, long ret, bool consumer)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 key = inflight_key(tid, path);
	struct thread_state *t;
	struct inflight *in;

	in = bpf_map_lookup_elem(&inflight, &key);
	if (!in)
		return;
	record(path, in, ret);
	bpf_map_delete_elem(&inflight, &key);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		return;
	if (consumer)
		t->consumers &= ~(1u << path);
	else if (t->gup_depth)
		t->gup_depth--;
	if (!t->consumers && !t->gup_depth)
		bpf_map_delete_elem(&threads, &tid);
}

/* ---- the folios of a GUP result ---------------------------------------- */

/* 32 slots, indexed by order & 31: a mask the verifier can bound. */
#define WALK_SLOTS 32
/* The pages array is copied in chunks: one helper call per CHUNK pages. */
#define CHUNK 64

struct walk {
	struct page **pages;
	__u64 nr;
	__u64 i;
	__u64 chunk_start; /* index of chunk[0]; nr when empty */
	__u64 order_pages[WALK_SLOTS];
	unsigned long chunk[CHUNK];
};

/*
 * The walk's state lives in a map, not on the stack: the verifier tracks
 * stack values exactly and would verify the bpf_loop() callback once per
 * value the index takes; map memory it does not track. One per thread:
 * a tracing program can be preempted (PREEMPT_LAZY, preempt=full), and
 * another thread's walk on the same CPU must not overwrite this one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tid: a walk can be preempted, not shared */
	__type(value, struct walk);
} walks SEC(".maps");

struct walk_ctx {
	struct walk *w;
};

/* Too large for the stack: the zeroed walk to insert. */
static const struct walk walk_zero;

/*
 * struct page read with plain loads through bpf_rdonly_cast() (untrusted,
 * fault-safe): a helper call per field would cost more than GUP's own
 * work per 4 kB page. The words are read through struct range (two u64s)
 * because the verifier types a load by the first member at its offset:
 * page->compound_head shares its word with lru.next, a pointer it would
 * not let us test bit 0 of; and page->flags changed type (unsigned long,
 * then memdesc_flags_t), which CO-RE does not relocate across. Word 0 of
 * a struct page is its flags, word 1 its compound_head, in every kernel;
 * a large folio's order is in its first tail's flags (folio->_flags_1).
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

static __always_inline struct range *words_of(unsigned long addr)
{
	return bpf_rdonly_cast((void *)addr,
			       bpf_core_type_id_kernel(struct range));
}

static __always_inline unsigned long page_at(struct walk *w, __u64 i)
{
	__u64 n;
	__u32 sz;

	if (i < w->chunk_start || i >= w->chunk_start + CHUNK) {
		/* No further than the array's end: past it may fault, and a
		 * faulting read leaves the whole chunk zeroed. */
		n = i < w->nr ? w->nr - i : 0;
		sz = (__u32)(n < CHUNK ? n : CHUNK) * sizeof(unsigned long);
		if (sz > sizeof(w->chunk))
			sz = sizeof(w->chunk);
		w->chunk_start = i;
		bpf_probe_read_kernel(w->chunk, sz, &w->pages[i]);
	}
	return w->chunk[(i - w->chunk_start) & (CHUNK - 1)];
}

/*
 * 7.x with HVO-friendly vmemmap (CONFIG_HUGETLB_PAGE_OPTIMIZE_VMEMMAP,
 * struct page a power of two in size) keeps in a tail's compound_info a
 * mask that rounds the tail's address down to its head, where earlier
 * kernels keep head + 1. The two are told apart by value, not by kernel
 * config (which /proc may not expose): such a mask is ones down to a
 * power of two, which no struct page address in the vmemmap area is.
 */
static __always_inline bool is_head_mask(unsigned long info)
{
	unsigned long mask = info & ~1UL;

	return mask && (mask | (mask - 1)) == ~0UL;
}

/* The head of @p's folio and its order: _compound_head(), read. */
static __always_inline unsigned long folio_of(unsigned long p, __u32 *order)
{
	__u64 size = bpf_core_type_size(struct page);
	unsigned long head = p, ch;
	struct range *pg, *tail;

	*order = 0;
	pg = words_of(p);
	if (!pg)
		return p;
	ch = pg->end;
	if ((ch & 1) && is_head_mask(ch))
		head = p & ch;
	else if (ch & 1)
		head = ch - 1;
	else if (!(pg->start &
		   (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return p;
	tail = words_of(head + size);
	if (tail)
		*order = tail->start & 0xff;
	return head;
}

/*
 * One large folio from pages[i] (the rest of it that follows in the
 * array, checked at its last page), or up to 8 base pages: the callback's
 * own cost would otherwise be most of the walk's on 4 kB pages.
 */
#define SMALL_RUN 8

static long walk_step(__u64 index, struct walk_ctx *ctx)
{
	__u64 size = bpf_core_type_size(struct page), nr, pos, step;
	struct walk *w = ctx->w;
	unsigned long p, head;
	__u32 order, o2;
	int k;

	for (k = 0; k < SMALL_RUN; k++) {
		if (!w || w->i >= w->nr)
			return 1;
		p = page_at(w, w->i);
		if (!p)
			return 1;
		head = folio_of(p, &order);
		order &= WALK_SLOTS - 1;
		if (!order) {
			w->order_pages[0]++;
			w->i++;
			continue;
		}
		nr = 1ULL << order;
		pos = (p - head) / size;
		step = pos < nr ? nr - pos : 1;
		if (step > w->nr - w->i)
			step = w->nr - w->i;
		if (step > 1 &&
		    folio_of(page_at(w, w->i + step - 1), &o2) != head)
			step = 1;
		/* Re-masked: the verifier sees this access, not the one above.
		 */
		w->order_pages[order & (WALK_SLOTS - 1)] += step;
		w->i += step;
		return 0;
	}
	return 0;
}

static __always_inline void gup_done(__u32 path, struct page **pages, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), bits;
	__u64 key = inflight_key(tid, path), end = bpf_ktime_get_ns();
	struct thread_state *t = bpf_map_lookup_elem(&threads, &tid);
	struct walk_ctx wc;
	struct inflight *in, *c;
	struct walk *w;
	int i, p;

	in = bpf_map_lookup_elem(&inflight, &key);
	if (!in || !t)
		goto out;
	in->end = end;
	if (ret > 0)
		in->bytes = (__u64)ret * PAGE_SIZE;
	/* Outermost GUP call with a pages array: its folios. */
	if (ret <= 0 || !pages || t->gup_depth != 1)
		goto out;
	bpf_map_update_elem(&walks, &tid, &walk_zero, BPF_ANY);
	w = bpf_map_lookup_elem(&walks, &tid);
	if (!w)
		goto out;
	w->pages = pages;
	w->nr = (__u64)ret;
	w->chunk_start = w->nr; /* empty */
	wc.w = w;
	bpf_loop(ret < MAX_WALK ? ret : MAX_WALK, walk_step, &wc, 0);
	in->pages = (__u64)ret;
	/* Branch-free loops: the verifier walks each branch per iteration. */
	for (i = 0; i < MREG_TRACE_ORDERS; i++)
		in->order_pages[i] = w->order_pages[i];
	bits = t->consumers;
	for (p = PATH_VERBS_REG_MR; p < PATH_NR; p++) {
		c = consumer_rec(tid, bits, p);
		if (!c)
			continue;
		__sync_fetch_and_add(&c->pages, (__u64)ret);
		for (i = 0; i < MREG_TRACE_ORDERS; i++)
			__sync_fetch_and_add(&c->order_pages[i],
					     w->order_pages[i]);
	}
	bpf_map_delete_elem(&walks, &tid);
out:
	leave(path, ret, false);
}

static __always_inline void gup_leave(void *ctx, __u32 path, int pages_arg,
				      bool int_ret)
{
	__u64 arg = 0, rv = 0;

	bpf_get_func_arg(ctx, pages_arg, &arg);
	bpf_get_func_ret(ctx, &rv);
	/* int or long: pin_user_pages_fast() returns int. */
	gup_done(path, (struct page **)arg, int_ret ? (long)(int)rv : (long)rv);
}

/* A return probe: the pages array its entry probe kept. */
static __always_inline void gup_kret(__u32 path, long ret)
{
	__u64 key = inflight_key((__u32)bpf_get_current_pid_tgid(), path);
	struct inflight *in = bpf_map_lookup_elem(&inflight, &key);

	gup_done(path, in ? (struct page **)in->aux : NULL, ret);
}

/* ---- the paths ----------------------------------------------------------- */

/*
 * Arguments and return values through bpf_get_func_arg()/_ret(): the
 * verifier takes a direct context load only for scalars and pointers to
 * structs, and these functions' signatures differ between kernels.
 */
static __always_inline __u64 arg_of(void *ctx, int n)
{
	__u64 v = 0;

	bpf_get_func_arg(ctx, n, &v);
	return v;
}

static __always_inline long int_ret_of(void *ctx)
{
	__u64 v = 0;

	bpf_get_func_ret(ctx, &v);
	return (long)(int)v;
}

/* A uapi struct's u64 field, at its fixed offset. */
static __always_inline __u64 u64_at(__u64 ptr, int off)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (void *)ptr + off);
	return v;
}

/* An fentry/fexit pair for a GUP entry point: the pages array is
 * argument @pages_arg; pin_user_pages_fast() and get_user_pages_fast()
 * return int, the others long. */
#define FPAIR_GUP(name, fn, path, pages_arg, int_ret)                         \
	SEC("fentry/" #fn)                                                    \
	int BPF_PROG(name##_in)                                               \
	{                                                                     \
		enter(path, 0, false);                                        \
		return 0;                                                     \
	}                                                                     \
	SEC("fexit/" #fn)                                                     \
	int BPF_PROG(name##_out)                                              \
	{                                                                     \
		gup_leave(ctx, path, pages_arg, int_ret);                     \
		return 0;                                                     \
	}

FPAIR_GUP(pup_fast, pin_user_pages_fast, PATH_PUP_FAST, 3, true)
FPAIR_GUP(gup_fast, get_user_pages_fast, PATH_GUP_FAST, 3, true)
FPAIR_GUP(pup_remote, pin_user_pages_remote, PATH_PUP_REMOTE, 4, false)
FPAIR_GUP(gup_longterm, __gup_longterm_locked, PATH_GUP_LONGTERM, 3, false)

/* An fentry/fexit pair for a consumer returning int, its size known at
 * entry (@bytes_expr) or added from beneath (0). */
#define FPAIR(name, fn, path, bytes_expr)                                     \
	SEC("fentry/" #fn)                                                    \
	int BPF_PROG(name##_in)                                               \
	{                                                                     \
		enter(path, bytes_expr, true);                                \
		return 0;                                                     \
	}                                                                     \
	SEC("fexit/" #fn)                                                     \
	int BPF_PROG(name##_out)                                              \
	{                                                                     \
		leave(path, int_ret_of(ctx), true);                           \
		return 0;                                                     \
	}

/* struct vfio_iommu_type1_dma_map and _dma_unmap are uapi (argsz, flags,
 * vaddr or iova, ...): size sits at offset 24 in the first, 16 in the
 * second. */
FPAIR(verbs_reg_mr, ib_uverbs_reg_mr, PATH_VERBS_REG_MR, 0)
FPAIR(vfio_map, vfio_dma_do_map, PATH_VFIO_MAP, u64_at(arg_of(ctx, 1), 24))
FPAIR(vfio_unmap, vfio_dma_do_unmap, PATH_VFIO_UNMAP,
      u64_at(arg_of(ctx, 1), 16))
FPAIR(iommufd_map, iommufd_ioas_map, PATH_IOMMUFD_MAP, 0)
FPAIR(uring_register, io_sqe_buffers_register, PATH_URING_REGISTER, 0)
FPAIR(uring_update, __io_sqe_buffers_update, PATH_URING_UPDATE, 0)

/* ib_umem_get(device, addr, size, access), up to 6.x. */
SEC("fentry/ib_umem_get")
int BPF_PROG(verbs_umem_in)
{
	__u64 size = arg_of(ctx, 2);

	add_bytes(size);
	enter(PATH_VERBS_UMEM, size, true);
	return 0;
}

SEC("fexit/ib_umem_get")
int BPF_PROG(verbs_umem_out)
{
	__u64 v = 0;
	long ret;

	/* A struct ib_umem * or an ERR_PTR: the errno in the pointer. */
	bpf_get_func_ret(ctx, &v);
	ret = (long)v;
	leave(PATH_VERBS_UMEM, ret < 0 && ret >= -4095 ? ret : 0, true);
	return 0;
}

/* 7.x: ib_umem_get_desc(device, desc, access), the exported entry that
 * ib_umem_get_va() and the ioctl path go through; the size is in the uapi
 * struct ib_uverbs_buffer_desc (offset 24; a DMABUF descriptor pins
 * nothing and is counted with its length). */
SEC("fentry/ib_umem_get_desc")
int BPF_PROG(verbs_umem_desc_in)
{
	__u64 size = u64_at(arg_of(ctx, 1), 24);

	add_bytes(size);
	enter(PATH_VERBS_UMEM, size, true);
	return 0;
}

SEC("fexit/ib_umem_get_desc")
int BPF_PROG(verbs_umem_desc_out)
{
	__u64 v = 0;
	long ret;

	bpf_get_func_ret(ctx, &v);
	ret = (long)v;
	leave(PATH_VERBS_UMEM, ret < 0 && ret >= -4095 ? ret : 0, true);
	return 0;
}

/*
 * Where vfio_dma_do_map() and _unmap() are inlined (Debian's 6.12), the
 * ioctl around them: VFIO_IOMMU_MAP_DMA and _UNMAP_DMA by command, the
 * size from the caller's struct (fentry runs in its context).
 */
#define VFIO_IOMMU_MAP_DMA   0x3b71
#define VFIO_IOMMU_UNMAP_DMA 0x3b72

static __always_inline int vfio_ioctl_path(void *ctx)
{
	__u32 cmd = (__u32)arg_of(ctx, 1);

	if (cmd == VFIO_IOMMU_MAP_DMA)
		return PATH_VFIO_MAP;
	if (cmd == VFIO_IOMMU_UNMAP_DMA)
		return PATH_VFIO_UNMAP;
	return -1;
}

/* The size is read on return: the kernel has copied the struct by then,
 * so its page is resident (a non-sleepable probe cannot fault it in). */
static __always_inline void vfio_ioctl_leave(int path, __u64 uarg, long ret)
{
	__u64 key = inflight_key((__u32)bpf_get_current_pid_tgid(), path);
	struct inflight *in = bpf_map_lookup_elem(&inflight, &key);
	__u64 size = 0;

	if (!in)
		return;
	bpf_probe_read_user(&size, sizeof(size),
			    (void *)uarg + (path == PATH_VFIO_MAP ? 24 : 16));
	in->bytes = size;
	leave(path, ret, true);
}

SEC("fentry/vfio_iommu_type1_ioctl")
int BPF_PROG(vfio_ioctl_in)
{
	int path = vfio_ioctl_path(ctx);

	if (path >= 0)
		enter(path, 0, true);
	return 0;
}

SEC("fexit/vfio_iommu_type1_ioctl")
int BPF_PROG(vfio_ioctl_out)
{
	__u64 v = 0;
	int path = vfio_ioctl_path(ctx);

	if (path < 0)
		return 0;
	bpf_get_func_ret(ctx, &v);
	vfio_ioctl_leave(path, arg_of(ctx, 2), (long)v);
	return 0;
}

/* iopt_map_user_pages(ictx, iopt, iova, uptr, length, prot, flags) */
SEC("fentry/iopt_map_user_pages")
int BPF_PROG(iopt_map_in)
{
	__u64 length = arg_of(ctx, 4);

	add_bytes(length);
	enter(PATH_IOPT_MAP, length, true);
	return 0;
}

SEC("fexit/iopt_map_user_pages")
int BPF_PROG(iopt_map_out)
{
	leave(PATH_IOPT_MAP, int_ret_of(ctx), true);
	return 0;
}

/* Where __io_sqe_buffers_update() is inlined: io_register_rsrc_update()
 * for IORING_RSRC_BUFFER (its fourth argument), not for files. */
#define IORING_RSRC_BUFFER 1

SEC("fentry/io_register_rsrc_update")
int BPF_PROG(uring_rsrc_update_in)
{
	if (arg_of(ctx, 3) == IORING_RSRC_BUFFER)
		enter(PATH_URING_UPDATE, 0, true);
	return 0;
}

SEC("fexit/io_register_rsrc_update")
int BPF_PROG(uring_rsrc_update_out)
{
	if (arg_of(ctx, 3) == IORING_RSRC_BUFFER)
		leave(PATH_URING_UPDATE, int_ret_of(ctx), true);
	return 0;
}

/* Each buffer io_uring registers, io_sqe_buffer_register(ctx, iov, ...):
 * its length, to the call above it. */
SEC("fentry/io_sqe_buffer_register")
int BPF_PROG(uring_buffer_in)
{
	add_bytes(u64_at(arg_of(ctx, 1), 8)); /* struct iovec: iov_len */
	return 0;
}

/* ---- kprobes: the same paths where fentry cannot attach (--kprobes) --- */

#define KPAIR_GUP(name, fn, path, pages_parm, int_ret)                    \
	SEC("kprobe/" #fn)                                                \
	int BPF_KPROBE(k_##name##_in)                                     \
	{                                                                 \
		enter_aux(path, 0, false, PT_REGS_PARM##pages_parm(ctx)); \
		return 0;                                                 \
	}                                                                 \
	SEC("kretprobe/" #fn)                                             \
	int BPF_KRETPROBE(k_##name##_out)                                 \
	{                                                                 \
		long rc = PT_REGS_RC(ctx);                                \
		gup_kret(path, int_ret ? (long)(int)rc : rc);             \
		return 0;                                                 \
	}

KPAIR_GUP(pup_fast, pin_user_pages_fast, PATH_PUP_FAST, 4, true)
KPAIR_GUP(gup_fast, get_user_pages_fast, PATH_GUP_FAST, 4, true)
KPAIR_GUP(pup_remote, pin_user_pages_remote, PATH_PUP_REMOTE, 5, false)
KPAIR_GUP(gup_longterm, __gup_longterm_locked, PATH_GUP_LONGTERM, 4, false)

/* Consumers whose size is known at entry, or added from beneath. */
#define KPAIR(name, fn, path, bytes_expr, ret_expr) \
	SEC("kprobe/" #fn)                          \
	int BPF_KPROBE(k_##name##_in)               \
	{                                           \
		enter(path, bytes_expr, true);      \
		return 0;                           \
	}                                           \
	SEC("kretprobe/" #fn)                       \
	int BPF_KRETPROBE(k_##name##_out)           \
	{                                           \
		long rc = PT_REGS_RC(ctx);          \
		leave(path, ret_expr, true);        \
		return 0;                           \
	}

KPAIR(verbs_reg_mr, ib_uverbs_reg_mr, PATH_VERBS_REG_MR, 0, (int)rc)
KPAIR(vfio_map, vfio_dma_do_map, PATH_VFIO_MAP, u64_at(PT_REGS_PARM2(ctx), 24),
      (int)rc)
KPAIR(vfio_unmap, vfio_dma_do_unmap, PATH_VFIO_UNMAP,
      u64_at(PT_REGS_PARM2(ctx), 16), (int)rc)
KPAIR(iommufd_map, iommufd_ioas_map, PATH_IOMMUFD_MAP, 0, (int)rc)
KPAIR(uring_register, io_sqe_buffers_register, PATH_URING_REGISTER, 0, (int)rc)
KPAIR(uring_update, __io_sqe_buffers_update, PATH_URING_UPDATE, 0, (int)rc)

SEC("kprobe/ib_umem_get")
int BPF_KPROBE(k_verbs_umem_in)
{
	__u64 size = PT_REGS_PARM3(ctx);

	add_bytes(size);
	enter(PATH_VERBS_UMEM, size, true);
	return 0;
}

SEC("kretprobe/ib_umem_get")
int BPF_KRETPROBE(k_verbs_umem_out)
{
	long rc = PT_REGS_RC(ctx);

	leave(PATH_VERBS_UMEM, rc < 0 && rc >= -4095 ? rc : 0, true);
	return 0;
}

SEC("kprobe/ib_umem_get_desc")
int BPF_KPROBE(k_verbs_umem_desc_in)
{
	__u64 size = u64_at(PT_REGS_PARM2(ctx), 24);

	add_bytes(size);
	enter(PATH_VERBS_UMEM, size, true);
	return 0;
}

SEC("kretprobe/ib_umem_get_desc")
int BPF_KRETPROBE(k_verbs_umem_desc_out)
{
	long rc = PT_REGS_RC(ctx);

	leave(PATH_VERBS_UMEM, rc < 0 && rc >= -4095 ? rc : 0, true);
	return 0;
}

SEC("kprobe/iopt_map_user_pages")
int BPF_KPROBE(k_iopt_map_in)
{
	__u64 length = PT_REGS_PARM5(ctx);

	add_bytes(length);
	enter(PATH_IOPT_MAP, length, true);
	return 0;
}

SEC("kretprobe/iopt_map_user_pages")
int BPF_KRETPROBE(k_iopt_map_out)
{
	leave(PATH_IOPT_MAP, (int)PT_REGS_RC(ctx), true);
	return 0;
}

SEC("kprobe/vfio_iommu_type1_ioctl")
int BPF_KPROBE(k_vfio_ioctl_in)
{
	__u32 cmd = (__u32)PT_REGS_PARM2(ctx);
	int path = cmd == VFIO_IOMMU_MAP_DMA	 ? PATH_VFIO_MAP
		   : cmd == VFIO_IOMMU_UNMAP_DMA ? PATH_VFIO_UNMAP
						 : -1;

	/* The user pointer kept for the return probe (aux). */
	if (path >= 0)
		enter_aux(path, 0, true, PT_REGS_PARM3(ctx));
	return 0;
}

/* Whichever of map and unmap its entry began: the other finds nothing. */
static __always_inline void vfio_kret(int path, long rc)
{
	__u64 key = inflight_key((__u32)bpf_get_current_pid_tgid(), path);
	struct inflight *in = bpf_map_lookup_elem(&inflight, &key);

	if (in)
		vfio_ioctl_leave(path, in->aux, rc);
}

SEC("kretprobe/vfio_iommu_type1_ioctl")
int BPF_KRETPROBE(k_vfio_ioctl_out)
{
	long rc = PT_REGS_RC(ctx);

	vfio_kret(PATH_VFIO_MAP, rc);
	vfio_kret(PATH_VFIO_UNMAP, rc);
	return 0;
}

SEC("kprobe/io_register_rsrc_update")
int BPF_KPROBE(k_uring_rsrc_update_in)
{
	if (PT_REGS_PARM4(ctx) == IORING_RSRC_BUFFER)
		enter(PATH_URING_UPDATE, 0, true);
	return 0;
}

SEC("kretprobe/io_register_rsrc_update")
int BPF_KRETPROBE(k_uring_rsrc_update_out)
{
	leave(PATH_URING_UPDATE, (int)PT_REGS_RC(ctx), true);
	return 0;
}

SEC("kprobe/io_sqe_buffer_register")
int BPF_KPROBE(k_uring_buffer_in)
{
	add_bytes(u64_at(PT_REGS_PARM2(ctx), 8));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
