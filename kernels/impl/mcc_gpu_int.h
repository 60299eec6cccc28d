/*
 * mcc_gpu_int.h: what the CUDA files of kernels/ share (never included by C
 * code; mcc_gpu.h is the only public header).
 *
 * Device layout of one partition (one device's share of the gallery):
 *
 *   tiles[t] = {off, ncyl | ntpl << 16}: templates [32 t, 32 t + ntpl) of the
 *       partition (local indices), their cylinders at [off, off + ncyl),
 *       sorted by angle across the whole tile and padded with invalid
 *       cylinders to a multiple of 32 (one warp group).
 *   lo[j], hi[j]: cylinder bits, words 0-1 and 2-3 (16 bytes each, so that a
 *       warp reads 512 contiguous bytes per load: the SoA of Fig. 10).
 *   meta[j] = angle | tloc << 8 | pc << 16 | valid << 31, tloc = the local
 *       template of the cylinder within its tile (0..31).
 *   tncyl[lt], alive[lt]: LUT_C and the tombstone flag per local template.
 *
 * That is 36 bytes per cylinder, as in paper 000 Table II.
 *
 * For refinement (mcc_gpu_refine.h), records in template-major order (the
 * templates' cylinders one after the other, in local template order, no
 * padding): tcoff[lt] is template lt's first record; sslot[tcoff[lt] + s]
 * the slot (index into lo/hi/meta) of its stored cylinder s, rewritten
 * whenever its tile is rebuilt (4 bytes per cylinder, always kept); and,
 * once attached, in the order of the minutiae, rperm (stored index of rank
 * k), rxy (position) and ruix (index into the unit-vector table utab):
 * 9 bytes per cylinder.
 */
#ifndef MCC_GPU_INT_H
#define MCC_GPU_INT_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "mcc_gpu.h"
#include "mcc_gpu_rt.h"
#include "mcc_refine_pack.h"

#define MCC_GPU_TILE		32	/* templates per tile = lanes of Step-2 */
#define MCC_GPU_WARPS		8	/* warps per block of the match kernel */
#define MCC_GPU_HROW		65	/* padded histogram row (w = 64 buckets) */
#define MCC_GPU_HIST_BYTES	(MCC_GPU_TILE * MCC_GPU_HROW * 4)
#define MCC_GPU_SC_BINS		2048	/* score histogram for the top-k threshold */
#define MCC_GPU_SC_SHIFT	19	/* bin = float bits >> 19 (scores in [0, 1]) */
#define MCC_GPU_LUT			264	/* LUT entries: popcounts 0..256, padded */
#define MCC_GPU_TROW		260	/* rcp table row: gallery pc 0..256, padded */
#define MCC_GPU_MARGIN		32	/* keys copied beyond k to catch ties */
#define MCC_GPU_BLOB_SMALL	(46 * 1024)	/* probe image: 2 blocks per SM (warp tiles), 4 (block tiles) */

/* Offsets of the common part of the probe image (shared memory). */
#define MCC_BLOB_SQRT		0
#define MCC_BLOB_E			(MCC_BLOB_SQRT + 4 * MCC_GPU_LUT)
#define MCC_BLOB_LUTP		(MCC_BLOB_E + 8 * MCC_GPU_LUT)
#define MCC_BLOB_PDESC		(MCC_BLOB_LUTP + 272)	/* 16-aligned */

/* Rcp modes and popcount modes of the match kernel. */
#define MCC_RCP_FP64		0
#define MCC_RCP_TABLE		1

/*
 * Staging of the refinement records (mcc_gpu_refine_data.cu): two host
 * buffers, pinned where the host allows, reused by every attach; one is
 * packed while the copies of the other (queued on the partitions' streams,
 * which the refinement kernel also runs on) travel. A buffer of cap
 * records holds, per record, its perm, xy and uix and room for one new
 * unit vector (an attach adds at most one per record): 25 bytes.
 */
#define MCC_GPU_RSTAGE_BUFS	2

typedef struct mcc_gpu_rstage_buf
{
	unsigned char *mem;
	size_t		cap;			/* records */
	int			pinned;			/* cudaHostAlloc'ed (else malloc'ed) */
	cudaEvent_t done[MCC_GPU_MAX_DEVICES];	/* per partition: after its last copies from here */
	int			used[MCC_GPU_MAX_DEVICES];	/* done was recorded */
} mcc_gpu_rstage_buf;

typedef struct mcc_gpu_rstage
{
	mcc_gpu_rstage_buf buf[MCC_GPU_RSTAGE_BUFS];
	int			next;			/* the buffer the next attach packs into */
	int			lost;			/* a failed attach: the tables start again at template 0 */
	double		pack_ms;		/* summed: records packed on the host */
	double		wait_ms;		/* waiting for a buffer's copies */
	double		copy_ms;		/* device room, allocation, queuing the copies */
	double		sync_ms;		/* mcc_gpu_refine_attach_wait */
} mcc_gpu_rstage;

/* One probe in the image: byte offsets from the image start. */
typedef struct mcc_pdesc
{
	uint32_t	n;				/* cylinders */
	uint32_t	cnt_off;		/* uint16 cnt[257]: cylinders with angle < a */
	uint32_t	lo_off;			/* uint4[3n]: words 0-1 of entry e = cyl e % n */
	uint32_t	hi_off;			/* uint4[3n]: words 2-3 */
	uint32_t	e_off;			/* double[3n]: eta = LUT_sqrt[pc] */
	uint32_t	row_off;		/* uint32[3n]: rcp row (words) | pc << 16 | pc==0 << 31 */
	uint32_t	col_off;		/* tc-lean: uint2[3n]: {rcp row (bytes), 2 pc} */
	uint32_t	pad1;
} mcc_pdesc;

/* Arguments of the match kernel. */
typedef struct mcc_match_args
{
	const uint4 *lo;
	const uint4 *hi;
	const uint32_t *meta;
	const uint2 *tiles;
	const uint16_t *tncyl;
	const uint8_t *alive;
	const uint4 *blob;			/* probe image, copied to shared memory */
	uint32_t	blob_words;		/* 16-byte words */
	uint32_t	nq;
	uint32_t	n_items;		/* tiles * nq */
	uint32_t	delta;			/* delta_theta, byte units */
	float	   *scores;			/* [nq][score_stride] */
	uint32_t	score_stride;
	uint32_t   *schist;			/* [nq][MCC_GPU_SC_BINS] */
	uint32_t   *counter;		/* work items handed out */
	int			fault;			/* test hook: write through NULL */
} mcc_match_args;

/* Size classes of the refinement kernel (RP_NCLASS of mcc_refine_pack.h). */
#define MCC_GPU_RF_CLASSES 5

/*
 * The buffers of mcc_gpu_order_launch (kernels/impl/mcc_gpu_order.cu), for
 * up to cap hits: pass-1 keys and positions (k0/v0 -> k1/v1), pass-2 keys
 * (s0 -> s1), the gathered hits, CUB's storage.
 */
typedef struct mcc_gpu_order
{
	uint64_t   *k0,
			   *k1;
	uint32_t   *v0,
			   *v1,
			   *s0,
			   *s1;
	mcc_gpu_hit *tmp;
	void	   *cub;
	size_t		cub_bytes;
	size_t		bytes;			/* all of it, counted in the partition's scratch */
	uint32_t	cap;
} mcc_gpu_order;

/* Lists of at least this many hits a probe are ordered on the device. */
#define MCC_GPU_ORDER_MIN	1024

/* One partition. */
typedef struct mcc_gpu_part
{
	int			dev;
	int			sm_count;
	size_t		smem_optin;
	cudaStream_t st;
	cudaEvent_t ev[6];

	/* gallery on the device */
	uint4	   *lo;
	uint4	   *hi;
	uint32_t   *meta;
	uint2	   *tiles;
	uint16_t   *tncyl;
	uint8_t    *alive;
	uint32_t   *d_gidx;			/* local -> gallery index (cap_tpl): hits leave the device whole */
	int64_t    *d_lid;			/* local -> id (cap_tpl) */
	uint32_t	cap_cyl;
	uint32_t	cap_tiles;
	uint32_t	cap_tpl;
	uint32_t	n_cyl;
	uint32_t	n_tiles;
	uint32_t	n_tpl;
	int			has_zero;		/* a cylinder with popcount 0 */
	double		angle_count[256];	/* cylinders per angle, for pair counts */

	/* host mirrors */
	uint32_t   *gidx;			/* local -> gallery index */
	int64_t    *lid;			/* local -> id: the merge reads it beside gidx, not through it */
	uint32_t   *tile_off;		/* cylinder offset of each tile */
	uint32_t   *h_tcoff;		/* tcoff of each local template, + 1 */

	/* refinement records (see above) */
	uint32_t   *tcoff;
	uint32_t   *sslot;
	uint32_t	cap_tco;		/* entries of tcoff */
	uint32_t	cap_rc;			/* entries of sslot */
	uint32_t	n_rc;			/* records of the templates held */
	uint8_t    *rperm;
	uint32_t   *rxy;
	uint32_t   *ruix;
	uint32_t	cap_ref;		/* entries of rperm, rxy, ruix */
	double	   *utab;			/* (ux, uy) per entry */
	uint32_t	n_utab;			/* entries uploaded: ... */
	uint32_t	n_ushared;		/* ... [0, n_ushared) the host's, then this partition's own */
	uint32_t	cap_utab;

	/* refinement scratch (mcc_gpu_refine.cu) */
	unsigned char *rf_buf;		/* sides, pairs, scores of a call */
	size_t		rf_cap;
	unsigned char *rf_scr;		/* Gamma and rho of the blocks */
	size_t		rf_scr_cap;
	mcc_sigmoid_tab *rf_tabs;	/* [2][3] */
	uint32_t   *rf_sqrt;		/* LUT_sqrt, RB_LUT entries */
	int			rf_tabs_gen;	/* generation of the tables uploaded */
	int			rf_ready;		/* kernel attributes set, streams made on this device */
	size_t		rf_bytes;		/* allocated for refinement scratch */
	cudaStream_t rf_main;		/* a rescoring's copies and launches: apart from the search's st */
	cudaEvent_t rf_tev[4];		/* its stage times (partition 0) */
	cudaStream_t rf_st[MCC_GPU_RF_CLASSES];	/* a size class's launch beside the others */
	cudaEvent_t rf_ev[MCC_GPU_RF_CLASSES + 1];	/* its end; [last]: the call's upload done */

	/* search scratch */
	uint4	   *blob;
	size_t		blob_cap;
	float	   *scores;
	uint64_t   *cand;
	uint64_t   *sorted;
	uint32_t   *schist;
	uint32_t   *small;			/* counter, thr[], ccnt[], outlen[], segments, floors */
	void	   *cub_tmp;
	size_t		cub_bytes;
	uint32_t	sc_tpl;			/* scratch sized for this many templates */
	int			sc_q;			/* and this many probes per pass */

	mcc_gpu_hit *d_hits;		/* a pass's first k + margin candidates per probe, as hits */
	mcc_gpu_hit *h_hits;		/* pinned: their copy */
	size_t		hits_cap;		/* bytes of each */
	uint32_t	hits_width;		/* this pass: hits per probe in d_hits/h_hits */
	int			hits_ordered;	/* this pass: they are by score, then id (mcc_gpu_order) */
	mcc_gpu_order ord;			/* buffers of the device's ordering of long lists */
	uint32_t   *h_small;		/* pinned: outlen[], ovf[]; the floors to upload */

	size_t		gallery_bytes;
	size_t		scratch_bytes;
} mcc_gpu_part;

/*
 * What the host keeps of a gallery template beside its id, in one 8-byte
 * record: a rescoring's prep reads all of it for each of thousands of
 * candidates at random, and one cache miss per candidate costs a quarter
 * of four arrays' (H100 host: prep 0.45 ms for 4,000 candidates).
 */
typedef struct mcc_gpu_tref
{
	uint32_t	local;			/* index in its partition */
	uint16_t	ncyl;			/* its cylinders */
	uint8_t		where;			/* its partition */
	uint8_t		removed:1;		/* mcc_gpu_remove'd */
	uint8_t		refd:1;			/* refinement data attached */
} mcc_gpu_tref;

struct mcc_gpu
{
	const mcc_profile *profile;
	mcc_gpu_options opt;
	int			nparts;
	mcc_gpu_part part[MCC_GPU_MAX_DEVICES];
	mcc_gpu_rt_lost lost;		/* a sticky error happened (mcc_gpu_rt.h) */

	/* gallery index -> (partition, local index, id) */
	uint32_t	n_tpl;
	uint32_t	map_cap;
	int64_t    *ids;
	mcc_gpu_tref *tref;			/* per gallery index: where it is, its flags */

	/* tables of the profile */
	uint32_t	sqrt_fx[MCC_GPU_LUT];
	uint8_t		lutp[MCC_GPU_LUT];
	uint32_t   *rcp_tab;		/* [257][MCC_GPU_TROW]: rcp(eta[a] + eta[b]) */

	/* the caller's hook around a call's wait for the device (mcc_gpu.h) */
	mcc_gpu_wait_hook wait_hook;
	void	   *wait_arg;

	/* pinned probe image */
	uint8_t    *h_blob;
	size_t		h_blob_cap;

	/* refinement (mcc_gpu_refine*.cu) */
	rp_utab		utab;			/* distinct directions and their unit vectors */
	mcc_gpu_rstage rstage;		/* staging of mcc_gpu_refine_attach's copies */
	mcc_sigmoid_tab rf_tab[2][3];	/* tables of the last parameters used */
	int			rf_tabs_gen;	/* bumped when they change */
	int			rf_threads;		/* mcc_gpu_refine_tune */
	int			rf_kcap;
	unsigned char *rf_h;		/* pinned: sides, pairs, scores */
	size_t		rf_h_cap;
	double	   *rf_dbg;			/* test hook: last set's unrounded score */
	mcc_gpu_refine_timing rtiming;

	mcc_gpu_timing timing;
	int			fault_next;
};

/*
 * Kernel parameters of a variant: rcp mode, carry-save adders, cylinders per
 * lane, block tile, tensor-core configuration (0 = none).
 */
void		mcc_gpu_variant_params(int variant, int *rcp, int *csa, int *cpl, int *bt, int *tc);

/* Threads per block of the match kernel for a tensor-core configuration. */
int			mcc_gpu_block_threads(int tc);

/* The match kernel of (rcp, csa, zero-safe, cpl, block tile, tc); NULL if not built. */
const void *mcc_gpu_match_kernel(int rcp, int csa, int zs, int cpl, int bt, int tc);

/*
 * Where a pass's floors (the float bits of each probe's min_score, 0 for
 * none) lie in p->small and p->h_small: after the selection's arrays.
 */
#define MCC_GPU_SMALL_FLOOR(nq)	(1 + 8 * (size_t) (nq))

/*
 * Launch the top-k selection of one partition (stream p->st), at most ccap
 * candidates per probe; ev (or NULL) is recorded before the sort. floored:
 * the pass's floors are on the device (MCC_GPU_SMALL_FLOOR): no candidate
 * of a score below its probe's floor's level-2 bin is taken.
 */
cudaError_t mcc_gpu_select_launch(mcc_gpu_part *p, int nq, int k,
								  uint32_t n_tpl, uint32_t ccap, int floored, cudaEvent_t ev);

/*
 * After the selection (same stream): the first width candidates of each
 * probe (at most its outlen) as hits, their local index mapped to gallery
 * index and id on the device, into p->d_hits[q * width ..].
 */
cudaError_t mcc_gpu_hits_launch(mcc_gpu_part *p, int nq, uint32_t ccap, uint32_t width);

/*
 * The device's ordering of long hit lists (mcc_gpu_order.cu): room for n
 * hits (at most room bytes more; cudaErrorMemoryAllocation past it), then
 * h[0..n) of partition p, by score, put in (score desc, id asc) order on
 * its stream.
 */
cudaError_t mcc_gpu_order_reserve(mcc_gpu_part *p, uint32_t n, size_t room);
cudaError_t mcc_gpu_order_launch(mcc_gpu_part *p, mcc_gpu_hit *h, uint32_t n);
void		mcc_gpu_order_free(mcc_gpu_part *p);

/* The hits of a probe from every partition, before the merge (grown as needed). */
typedef struct mcc_gpu_hit_acc
{
	mcc_gpu_hit *h;
	size_t		n;
	size_t		cap;
} mcc_gpu_hit_acc;

/*
 * After partition i's pass (mcc_gpu_gather.cu): its candidates of probe q
 * for the merge, the hits of the copied window where they are (*in_acc
 * false), or, when there are more (exact ties past it, every key mapped
 * on the host), appended to acc (*in_acc true, from *off on).
 */
mcc_gpu_code mcc_gpu_gather_part(mcc_gpu *g, int i, int q, const uint32_t *ccap,
								 mcc_gpu_hit_acc *acc, const mcc_gpu_hit **list, bool *in_acc,
								 size_t *off, mcc_error *err);

/*
 * The first k of the partitions' ordered lists merged into out, on several
 * threads when long; returns how many.
 */
size_t		mcc_gpu_merge_lists(const mcc_gpu_hit *const *list, const size_t *len, int nlists,
								size_t k, mcc_gpu_hit *out);

/* CUB temporary bytes needed for nq segments of cap keys. */
cudaError_t mcc_gpu_select_tmp_bytes(int nq, uint32_t cap, size_t *bytes);

/*
 * Wait until the work queued on the partitions in the bit set parts is
 * done, on their search streams or (refine) their rescoring streams, with
 * g's wait hook around the wait: the caller's own synchronization
 * afterwards reports any error.
 */
void		mcc_gpu_wait_outside(mcc_gpu *g, bool refine, uint32_t parts);

/* Wait for every partition's stream after a failure (errors cleared). */
void		mcc_gpu_drain(mcc_gpu *g);

/* Record a CUDA failure in err (and in g if sticky); returns the code. */
mcc_gpu_code mcc_gpu_fail(mcc_gpu *g, cudaError_t e, const char *what, int dev,
						  mcc_error *err);

/* Wait for stream st of partition p (its device selected); what: the work, for the error. */
mcc_gpu_code mcc_gpu_part_wait(mcc_gpu *g, const mcc_gpu_part *p, cudaStream_t st, const char *what,
							   mcc_error *err);

/* Release the gallery arrays of a partition (refinement records included). */
void		mcc_gpu_part_free_gallery(mcc_gpu_part *p);

/* Release the refinement records and unit vectors of a partition. */
void		mcc_gpu_part_free_refine(mcc_gpu_part *p);

/*
 * Wait for the refinement copies in flight (before the device arrays they
 * write are freed or replaced); errors cleared, as mcc_gpu_drain.
 */
void		mcc_gpu_rstage_drain(mcc_gpu *g);

/* mcc_gpu_rstage_drain, then release the staging buffers and their events. */
void		mcc_gpu_rstage_free(mcc_gpu *g);

/* Release the refinement scratch of a partition. */
void		mcc_gpu_part_free_rscratch(mcc_gpu_part *p);

/*
 * Grow a device array to hold n elements, keeping the first keep (the
 * capacity grows by half); *bytes counts what was added.
 */
cudaError_t mcc_gpu_grow(void **ptr, size_t elem, uint32_t *cap, uint32_t n, uint32_t keep,
						 size_t *bytes);

/* Bytes mcc_gpu_grow would add. */
size_t		mcc_gpu_grown(size_t elem, uint32_t cap, uint32_t n);

/* Release the selection buffers of a partition (scores to CUB storage). */
void		mcc_gpu_part_free_select(mcc_gpu_part *p);

/* Release the search scratch of a partition. */
void		mcc_gpu_part_free_scratch(mcc_gpu_part *p);

/* Bytes the context may still take on partition p's device (limit aware). */
size_t		mcc_gpu_room(mcc_gpu *g, mcc_gpu_part *p);

#endif							/* MCC_GPU_INT_H */
