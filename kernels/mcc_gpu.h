/*
 * mcc_gpu.h: the GPU identification engine (paper 000, Sec. 4, adapted to
 * Hopper), behind a plain C interface with no CUDA types.
 *
 * One mcc_gpu context drives a set of devices. The gallery (an mcc_soa the
 * host keeps) is partitioned across them; each partition is stored in tiles
 * of 32 templates whose cylinders are sorted by angle (Sec. 4.6, with the
 * histograms of a tile kept in shared memory instead of global B[N][w]).
 * A search scores Q probes against every live template in one pass per
 * device and returns, per probe, the k best (score desc, id asc) after a
 * device-side selection; only the candidates travel back.
 *
 * Scores are bit-identical to the CPU's (mcc_lss.h): same LUT_sqrt, same
 * rcp(den) = floor(64 * 2^32 / den) (computed exactly on the device), same
 * d = (sqrt_fx * rcp) >> 32, same LUT_p and the same IEEE division.
 *
 * Errors: every function returns an mcc_gpu_code and fills err, as every
 * library of kernels/ does (mcc_gpu_runtime.h says what each code means;
 * devices are counted by mcc_gpu_probe() there). MCC_GPU_STICKY: every
 * later call on the context returns it again; the caller closes the
 * context and uses the CPU path.
 *
 * Threads: a context is used by one thread at a time (the matcher service
 * owns it). Gallery indices are the caller's mcc_soa template indices; they
 * stay valid across mcc_gpu_append() and mcc_gpu_remove() as long as the
 * caller only appends to its soa.
 *
 * Only the default profile (gpu2015: 255-bit cylinders, no masks) runs on the
 * GPU; other profiles get MCC_GPU_UNSUPPORTED and stay on the CPU.
 */
#ifndef MCC_GPU_H
#define MCC_GPU_H

#include <stddef.h>
#include <stdint.h>

/* src/core's headers have no C++ guards of their own */
#ifdef __cplusplus
extern "C"
{
#endif

#include "mcc_error.h"
#include "mcc_gpu_runtime.h"
#include "mcc_profile.h"
#include "mcc_soa.h"
#include "mcc_template.h"



typedef struct mcc_gpu mcc_gpu;

/*
 * Kernel variants (tests and benchmarks pick one; 0 = the fastest measured,
 * now tc-lean; docs/gpu-notes.md).
 * rcp(den) by exact FP64 Newton steps or from a per-probe table in shared
 * memory; popcount with 6 POPC (two carry-save adders) or 4 (four); one
 * histogram set per warp ("warp tile") or per block ("blk": the warps of a
 * block share a tile, so more warps fit an SM); one or two gallery
 * cylinders per lane ("x2": each probe cylinder read serves two); "tc":
 * popcounts by binary tensor-core MMA (AND + POPC) with the same exact
 * epilogue ("sp": software pipelined, "w10": 10 warps per block).
 * tc-lean: tc-table-w10-sp with fewer instructions per pair slot (a
 * column word per probe entry, byte addresses from per-row and per-column
 * parts, no clamp); tc-lean-u4: the same with the loop over 8-entry chunks
 * unrolled 4 times instead of 2.
 */
typedef enum mcc_gpu_variant
{
	MCC_GPU_VARIANT_DEFAULT = 0,
	MCC_GPU_VARIANT_FP64_CSA2 = 1,
	MCC_GPU_VARIANT_FP64_CSA4 = 2,
	MCC_GPU_VARIANT_TABLE_CSA2 = 3,
	MCC_GPU_VARIANT_TABLE_CSA4 = 4,
	MCC_GPU_VARIANT_BLK_FP64_CSA2 = 5,
	MCC_GPU_VARIANT_BLK_FP64_CSA4 = 6,
	MCC_GPU_VARIANT_BLK_TABLE_CSA2 = 7,
	MCC_GPU_VARIANT_BLK_TABLE_CSA4 = 8,
	MCC_GPU_VARIANT_BLK_FP64_CSA2_X2 = 9,
	MCC_GPU_VARIANT_BLK_FP64_CSA4_X2 = 10,
	MCC_GPU_VARIANT_BLK_TABLE_CSA2_X2 = 11,
	MCC_GPU_VARIANT_BLK_TABLE_CSA4_X2 = 12,
	MCC_GPU_VARIANT_TC_TABLE = 13,	/* popcounts by binary tensor-core MMA */
	MCC_GPU_VARIANT_TC_FP64 = 14,
	MCC_GPU_VARIANT_TC_TABLE_SP = 15,	/* next MMA issued before the epilogue */
	MCC_GPU_VARIANT_TC_TABLE_W10 = 16,	/* 10 warps per block (more warps per SM) */
	MCC_GPU_VARIANT_TC_TABLE_W10_SP = 17,
	MCC_GPU_VARIANT_TC_LEAN = 18,	/* w10-sp with a leaner epilogue */
	MCC_GPU_VARIANT_TC_LEAN_U4 = 19,	/* tc-lean, chunk loop unrolled 4 times */
	MCC_GPU_VARIANT_COUNT = 20
} mcc_gpu_variant;

/* Options of mcc_gpu_open(); zero-fill for the defaults. */
typedef struct mcc_gpu_options
{
	size_t		mem_limit;		/* per device, bytes the context may take; 0 = free memory */
	int			variant;		/* mcc_gpu_variant */
	int			max_batch;		/* probes per device pass; 0 = 32 */
	int			pc_window;		/* tiles: popcount order inside windows of this
								 * many cylinders of the angle order (fewer
								 * bank conflicts on rcp); 0 = angle order */
} mcc_gpu_options;

/* Device memory of one partition. */
typedef struct mcc_gpu_meminfo
{
	int			ordinal;		/* device */
	uint32_t	n_tpl;			/* templates held (live and removed) */
	uint32_t	n_cyl;			/* cylinder slots (padded to 32 per tile) */
	size_t		gallery_bytes;	/* allocated for the gallery */
	size_t		scratch_bytes;	/* allocated for search buffers */
	size_t		dev_free;		/* cudaMemGetInfo, after our allocations */
	size_t		dev_total;
} mcc_gpu_meminfo;

/* One result of a search. */
typedef struct mcc_gpu_hit
{
	float		score;
	uint32_t	index;			/* template index in the caller's mcc_soa */
	int64_t		id;				/* the soa's id[index] */
} mcc_gpu_hit;

/* Time of the stages of the last search (paper 000 Table VI), milliseconds. */
typedef struct mcc_gpu_timing
{
	double		prep_ms;		/* host: probe tables */
	double		h2d_ms;			/* probe upload */
	double		match_ms;		/* LUT_theta walk + Step-1 + Step-2 (fused) */
	double		select_ms;		/* top-k: threshold, compaction, CUB sort */
	double		d2h_ms;			/* candidates back */
	double		merge_ms;		/* host: merge of devices and ties */
	double		total_ms;		/* wall clock of the call */
	double		sort_ms;		/* part of select_ms: candidate sort */
	double		ties_ms;		/* part of merge_ms: runs of equal scores ordered by id */
	int			tie_run_max;	/* the longest such run of the call */
	int			reselects;		/* partitions' selections run again with room for every template */
	double		pairs;			/* local similarities computed (gate passed) */
	int			blocks_per_sm;	/* match kernel occupancy (last pass) */
	int			passes;			/* device passes (probe chunks) */
	double		settle_ms;		/* host wall: long lists' order on the devices and copies, all partitions */
	/* every partition (the stages above are partition 0's), summed over passes: */
	double		select_max_ms;	/* the slowest partition's selection */
	double		part_max_ms;	/* the slowest partition's pass, upload to copies back */
	double		wait_ms;		/* host wall: passes queued until every partition's collected */
} mcc_gpu_timing;

/*
 * Open a context on devices[0..ndev) (the same ordinal may repeat: several
 * partitions on one GPU, as tests do) for profile p.
 */
mcc_gpu_code mcc_gpu_open(const int *devices, int ndev, const mcc_profile *p,
						  const mcc_gpu_options *opt, struct mcc_gpu **out,
						  mcc_error *err);

/* Release everything; safe on NULL and after a sticky error. */
void		mcc_gpu_close(struct mcc_gpu *g);

/* Replace the device gallery by all templates of s. */
mcc_gpu_code mcc_gpu_upload(struct mcc_gpu *g, const mcc_soa *s, mcc_error *err);

/*
 * Add templates [t0, t1) of s (which holds every earlier template at its
 * earlier index, t0 = templates already given) without a full reload.
 */
mcc_gpu_code mcc_gpu_append(struct mcc_gpu *g, const mcc_soa *s, uint32_t t0,
							uint32_t t1, mcc_error *err);

/* Tombstone template index (it no longer appears in any result). */
mcc_gpu_code mcc_gpu_remove(struct mcc_gpu *g, uint32_t index, mcc_error *err);

/*
 * Search nq probes: hits[q * k .. q * k + nhits[q]) receive the k best live
 * templates of probe q, best first (score desc, id asc).
 */
mcc_gpu_code mcc_gpu_search(struct mcc_gpu *g, const mcc_template_view *probes,
							int nq, int k, mcc_gpu_hit *hits, int *nhits,
							mcc_error *err);

/*
 * The same with a floor per probe: hits[q * k ..] receive the k best live
 * templates of probe q among those scoring >= min_score[q] (fewer, down to
 * none, when fewer reach it); min_score NULL is mcc_gpu_search(). The floor
 * cuts the selection on the device: a search for every row above a
 * threshold (deduplication's LSS stage asks k in the thousands, and few
 * rows pass) sorts, orders and copies only the rows that reach it.
 */
mcc_gpu_code mcc_gpu_search_min(struct mcc_gpu *g, const mcc_template_view *probes,
								int nq, int k, const float *min_score,
								mcc_gpu_hit *hits, int *nhits, mcc_error *err);

/*
 * Test entry: every score. scores[q * n + i] for gallery index i, n = the
 * number of templates given so far; removed templates get -1.
 */
mcc_gpu_code mcc_gpu_score_all(struct mcc_gpu *g, const mcc_template_view *probes,
							   int nq, float *scores, mcc_error *err);

/*
 * Called by a search (mcc_gpu_search, mcc_gpu_score_all) and by a
 * rescoring (mcc_gpu_refine) around their wait for the device: leaving = 1
 * before, 0 after. A caller that serializes its calls on a lock may release
 * it there, so that another thread's host work (a rescoring's prep, a
 * search's merge) runs while this call's kernels do: between the two calls
 * the waiting call touches no host state of the context and waits on its
 * own streams only (a search's and a rescoring's are apart). What the
 * caller must hold back until the call returns: calls that change or free
 * the context's device data (upload, append, remove, refinement data,
 * close) and a second call of the same kind on the same context.
 */
typedef void (*mcc_gpu_wait_hook) (void *arg, int leaving);

/* Set g's wait hook (NULL: none, the default). */
void		mcc_gpu_set_wait_hook(struct mcc_gpu *g, mcc_gpu_wait_hook fn, void *arg);

/* Number of templates given so far (live and removed). */
uint32_t	mcc_gpu_size(const struct mcc_gpu *g);

/* Memory per partition: info[0 .. *n), *n <= max. */
mcc_gpu_code mcc_gpu_memory(struct mcc_gpu *g, mcc_gpu_meminfo *info, int max,
							int *n, mcc_error *err);

/* Stage times of the last mcc_gpu_search() or mcc_gpu_score_all(). */
void		mcc_gpu_last_timing(const struct mcc_gpu *g, mcc_gpu_timing *t);

/* Name of a variant ("fp64", "table-csa2", ...). */
const char *mcc_gpu_variant_name(int variant);

/*
 * Test hook: make the next kernel of partition 0 fault, which corrupts the
 * CUDA context (a sticky error), to test the caller's fallback path.
 */
mcc_gpu_code mcc_gpu_debug_fault(struct mcc_gpu *g, mcc_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* MCC_GPU_H */
