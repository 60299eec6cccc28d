/*
 * mcc_gpu_refine.h: the second stage of identification on the GPU: lists of
 * (probe, candidate) pairs rescored with the global methods of
 * src/core/mcc/mcc_match.h, every score bit-identical to what
 * mcc_match_candidate() gives on the CPU for the same pair, method and
 * parameters. Plain C, no CUDA types; works on an mcc_gpu context
 * (mcc_gpu.h), whose gallery templates can be candidates.
 *
 * Methods on the GPU: fused (the default, MCC_METHOD_BEST), lss-dtr, lss-r,
 * lgs, lgs-r, lgs-dtr and lss. lsa, lsa-r, lsa-dtr (the Hungarian
 * assignment) and consolidation stay on the CPU: mcc_gpu_refine() answers
 * MCC_GPU_UNSUPPORTED for them (mcc_gpu_refine_supported() says so before).
 *
 * How the arithmetic stays the CPU's (docs/gpu-notes.md, "Refinement"):
 * Gamma from the LSS integers and one IEEE float division; entries ranked
 * by the same unique 48-bit keys; LGS greedy in key order; the relaxations
 * in double precision with IEEE sqrt and division, no fused multiply-add
 * (the kernel is built with -fmad=false), the sigmoid tables of the
 * mcc_match_params copied to the device, each sum over k in the CPU's order;
 * the efficiency selection with the CPU's tie rule; unit vectors from
 * mcc_dm_sincos() on the host; n_P from the host tables.
 *
 * Candidates are either gallery templates of the context (by their gallery
 * index, as mcc_gpu_search() returns them) or templates given with the call
 * (views), for requests whose candidates are not in a device gallery.
 *
 * Gallery templates need their refinement data on the device: per template,
 * its cylinders in minutia order (an index into the gallery's own cylinder
 * copy, so the bits are not stored twice), the minutiae positions (int16)
 * and an index into a table of unit vectors (one entry per distinct minutia
 * direction: few for real data, whose angles are quantized). That is 13
 * bytes per cylinder next to the 36 of the LSS gallery, plus 16 bytes per
 * distinct direction. The LSS gallery (mcc_soa) has no minutiae, so the
 * caller keeps, next to its mcc_soa, an mcc_gpu_geom filled from the same
 * template views, and attaches it after each upload or append.
 *
 * HOW THE ENGINE CALLS THIS (eng_refine_candidates):
 *   1. Next to the cache's mcc_soa keep an mcc_gpu_geom: mcc_gpu_geom_init
 *      with the soa; mcc_gpu_geom_append(geo, view) right after every
 *      mcc_soa_append(soa, view, ...) (same order, so template k of the soa
 *      is template k of geo); mcc_gpu_geom_copy(dst, src, k) next to
 *      eng_soa_copy_template on compaction; mcc_gpu_geom_clear with
 *      mcc_soa_clear; mcc_gpu_geom_free with mcc_soa_free.
 *   2. After mcc_gpu_upload(g, soa): mcc_gpu_refine_attach(g, soa, geo, 0,
 *      soa->n_tpl). After mcc_gpu_append(g, soa, t0, t1):
 *      mcc_gpu_refine_attach(g, soa, geo, t0, t1). mcc_gpu_remove needs
 *      nothing more (a removed template scores -1). A failed attach leaves
 *      the LSS gallery as it was; once it has changed the unit-vector
 *      table it also drops every template's refinement data (MCC_GPU_INVALID
 *      for their pairs: refined on the CPU) and the next attach must start
 *      at template 0 (0 .. n_tpl sends it all again).
 *   3. Per GPU pass (all candidates of all probes of a batch of concurrent
 *      queries in one call): probes[] = the batch's probe views, pairs[] =
 *      (probe q, gallery index of a shortlisted hit, MCC_GPU_FROM_GALLERY)
 *      or (probe q, index into cands[], MCC_GPU_FROM_VIEW) for candidates
 *      sent as templates; method = the request's (MCC_METHOD_BEST by
 *      default); mp = NULL for mcc_match_params_std().
 *      scores[i] receives the score of pairs[i].
 *   4. Outcomes: MCC_GPU_OK; MCC_GPU_UNSUPPORTED (method not on the GPU,
 *      or another profile) and MCC_GPU_INVALID (bad argument, or a gallery
 *      template without refinement data: err says which): this request on
 *      the CPU threads; MCC_GPU_OOM / MCC_GPU_CUDA: this request on the
 *      CPU, the context stays usable; MCC_GPU_STICKY: close the context,
 *      CPU for the rest of the process (as for mcc_gpu_search).
 *   Like every call on a context, one thread at a time (the engine's GPU
 *   lock); a refinement may run between searches of the same context.
 */
#ifndef MCC_GPU_REFINE_H
#define MCC_GPU_REFINE_H

#include <stddef.h>
#include <stdint.h>

#include "mcc_gpu.h"

#ifdef __cplusplus
extern "C"
{
#endif

#include "mcc_match.h"

/*
 * Geometry of gallery templates, kept by the caller next to its mcc_soa
 * (host memory, 9 bytes per cylinder). Template k's records are
 * [first[k], first[k + 1]), one per cylinder in the order of the
 * minutiae (the order of mcc_match.c's sides): the cylinder's index in the
 * template's stored order (the soa's), and its minutia's position and
 * direction as stored.
 */
typedef struct mcc_gpu_geom
{
	uint32_t	n_tpl;
	uint32_t	n_cyl;
	uint32_t	cap_tpl;
	uint32_t	cap_cyl;
	uint32_t   *first;			/* cap_tpl + 1 */
	uint8_t    *perm;			/* cap_cyl: stored cylinder of minutia rank k */
	uint32_t   *xy;				/* cap_cyl: (uint16) x | (uint16) y << 16 */
	float	   *theta;			/* cap_cyl: radians, as stored */
} mcc_gpu_geom;

/* An empty geometry with initial capacities. */
mcc_status	mcc_gpu_geom_init(mcc_gpu_geom *geo, uint32_t cap_tpl, uint32_t cap_cyl,
							  mcc_error *err);

/* Release the arrays (safe on a zeroed struct). */
void		mcc_gpu_geom_free(mcc_gpu_geom *geo);

/* Forget all templates, keep the capacity. */
void		mcc_gpu_geom_clear(mcc_gpu_geom *geo);

/* Append the geometry of a template (call right after mcc_soa_append). */
mcc_status	mcc_gpu_geom_append(mcc_gpu_geom *geo, const mcc_template_view *t,
								mcc_error *err);

/*
 * The same from a template's parts: its n_min minutiae records as stored
 * in the template (12 bytes each) and each cylinder's minutia index, one
 * byte per cylinder (a cache that keeps them need not rebuild the template).
 */
mcc_status	mcc_gpu_geom_append_parts(mcc_gpu_geom *geo, int n_min, const uint8_t *minutiae,
									  int n_cyl, const uint8_t *cyl_minutia, mcc_error *err);

/* Append template k of src to dst (compaction, next to eng_soa_copy_template). */
mcc_status	mcc_gpu_geom_copy(mcc_gpu_geom *dst, const mcc_gpu_geom *src, uint32_t k,
							  mcc_error *err);

/*
 * Upload the refinement data of gallery templates [t0, t1) (already given
 * with mcc_gpu_upload / mcc_gpu_append from s; geo describes the same
 * templates as s). A full mcc_gpu_upload drops all refinement data.
 * MCC_GPU_INVALID if the range is not in the gallery or geo disagrees with
 * s on a template's cylinder count.
 */
mcc_gpu_code mcc_gpu_refine_attach(struct mcc_gpu *g, const mcc_soa *s,
								   const mcc_gpu_geom *geo, uint32_t t0, uint32_t t1,
								   mcc_error *err);

/*
 * An attach queues its copies (from pinned buffers) on the streams that
 * mcc_gpu_refine also uses, so every later call sees the data; this waits
 * until they are done and reports their errors (a caller that timed the
 * attaches calls it after the last; a failed attach already waited).
 */
mcc_gpu_code mcc_gpu_refine_attach_wait(struct mcc_gpu *g, mcc_error *err);

/*
 * Milliseconds the attaches so far spent packing records on the host,
 * waiting for a staging buffer's copies, allocating and queuing copies,
 * and in mcc_gpu_refine_attach_wait (summed over the context's life).
 */
typedef struct mcc_gpu_attach_timing
{
	double		pack_ms;
	double		wait_ms;
	double		copy_ms;
	double		sync_ms;
} mcc_gpu_attach_timing;

void		mcc_gpu_refine_attach_timing(const struct mcc_gpu *g, mcc_gpu_attach_timing *t);

/* Where a pair's candidate comes from. */
#define MCC_GPU_FROM_GALLERY	0	/* cand = gallery index of the context */
#define MCC_GPU_FROM_VIEW		1	/* cand = index into the call's cands[] */

typedef struct mcc_gpu_pair
{
	uint32_t	probe;			/* index into probes[] */
	uint32_t	cand;			/* gallery index or index into cands[] */
	uint32_t	from;			/* MCC_GPU_FROM_GALLERY or MCC_GPU_FROM_VIEW */
} mcc_gpu_pair;

/* Does mcc_gpu_refine() run this method (an mcc_method)? */
int			mcc_gpu_refine_supported(int method);

/*
 * Score pairs[0 .. npairs): scores[i] = mcc_match_candidate() of candidate
 * pairs[i].cand against probe pairs[i].probe with method and mp (NULL:
 * mcc_match_params_std()), bit for bit; -1 for a removed gallery template.
 * probes and cands are validated views (mcc_template_open) of the context's
 * profile; cands may be NULL when ncand = 0.
 */
mcc_gpu_code mcc_gpu_refine(struct mcc_gpu *g, const mcc_template_view *probes, int nq,
							const mcc_template_view *cands, uint32_t ncand,
							const mcc_gpu_pair *pairs, size_t npairs, int method,
							const mcc_match_params *mp, float *scores, mcc_error *err);

/* Stage times of the last mcc_gpu_refine(), milliseconds. */
typedef struct mcc_gpu_refine_timing
{
	double		prep_ms;		/* host: sides in minutia order, pair lists */
	double		h2d_ms;			/* sides and pairs to the device (partition 0) */
	double		kernel_ms;		/* the refinement kernels (partition 0) */
	double		d2h_ms;			/* scores back (partition 0) */
	double		total_ms;		/* wall clock of the call */
	size_t		pairs;			/* pairs scored on the devices */
	int			launches;		/* kernel launches (size classes x partitions) */
	int			blocks_per_sm;	/* occupancy of the first class launched on partition 0 */
} mcc_gpu_refine_timing;

void		mcc_gpu_refine_last_timing(const struct mcc_gpu *g, mcc_gpu_refine_timing *t);

/*
 * Tests and benchmarks: threads per block of the kernel (64, 128 or 256;
 * 0 = 128) and the capacity of the shared-memory key buffer (a power of
 * two from 64 to 8192; 0 = the defaults per size class). A small capacity
 * sends ordinary templates through the paths that big ones take (Gamma and
 * rho in global memory, ranking in rounds).
 */
mcc_gpu_code mcc_gpu_refine_tune(struct mcc_gpu *g, int threads, int kcap, mcc_error *err);

/*
 * Test hook: every later mcc_gpu_refine() also writes, for pair i, the
 * unrounded (double) score of the method's last pair set into last[i]
 * (fused: LGS-DTR's; lss: the float score), so that a check can compare
 * doubles where the float rounding would hide a last-bit difference. NULL
 * turns it off.
 */
void		mcc_gpu_refine_debug(struct mcc_gpu *g, double *last);

#ifdef __cplusplus
}
#endif

#endif							/* MCC_GPU_REFINE_H */
