/*
 * mcc_gpu_refine_prep.h: what the host prepares for one mcc_gpu_refine
 * call (mcc_gpu_refine_prep.cu) and hands the device side
 * (mcc_gpu_refine.cu): the pairs checked and classified by partition and
 * size class, the pinned host image of sides and pairs, each partition's
 * share of the device list.
 *
 * A rescoring of a 100 M gallery's shortlist has hundreds of thousands of
 * pairs, each reading its template's record at random in a table of 100 M:
 * the preparation runs on several threads, each over a contiguous share of
 * the pairs, with the results of one thread's loop over them all (the same
 * device list in the same order, the same first error).
 */
#ifndef MCC_GPU_REFINE_PREP_H
#define MCC_GPU_REFINE_PREP_H

#include "mcc_gpu_int.h"

#define A16(x) (((x) + 15) & ~(size_t) 15)

/* Per partition: its pairs [first, first + count) of the device list. */
typedef struct rf_part
{
	size_t		first;
	size_t		count;
	size_t		bytes;			/* device buffer: common + pairs + scores (+ debug) */
	size_t		pairs_off;
	size_t		out_off;
	size_t		dbg_off;
} rf_part;

/* One mcc_gpu_refine call: its arguments and what each step hands the next. */
typedef struct rf_call
{
	const mcc_template_view *probes;
	int			nq;
	const mcc_template_view *cands;
	uint32_t	ncand;
	const mcc_gpu_pair *pairs;
	size_t		npairs;
	int			method;
	const mcc_match_params *mp;
	float	   *scores;
	uint32_t	nsides;			/* probes, then candidates given as templates */
	int			threads;		/* per block */
	/* classified */
	uint8_t    *ppart;			/* per pair: partition * RP_NCLASS + class, or 0xFF when scored on the host */
	uint32_t   *pb;				/* per device pair: its candidate's side (local template, or nq + candidate) ... */
	uint32_t   *pnb;			/* ... and that side's cylinders (placing reads no gallery array again) */
	uint8_t    *used;			/* per side: referenced by a pair scored on a device */
	size_t		ndev;			/* pairs scored on the devices */
	size_t		cnt[MCC_GPU_MAX_DEVICES][RP_NCLASS];	/* their number by partition and class */
	uint64_t	gmax[MCC_GPU_MAX_DEVICES][RP_NCLASS];	/* Gamma floats per block beyond kcap */
	uint64_t	rmax[MCC_GPU_MAX_DEVICES][RP_NCLASS];	/* rho doubles per block beyond kcap */
	/* the pinned host image (sides, pairs, scores) */
	size_t		off_sides;
	size_t		common;			/* cylinders and sides: every partition's */
	rb_side    *hside;
	rb_pair_desc *hpair;
	float	   *hout;
	double	   *hdbg;
	rb_plan		plan;
	/* placed */
	rf_part		rp[MCC_GPU_MAX_DEVICES];
	size_t	   *idx;			/* device list position -> caller's pair */
} rf_call;

/*
 * The host's part of call c (its arguments set): every pair checked and
 * classified (scored on the host when its template was removed, -1, or a
 * side is empty, 0), the host image built, the device pairs placed
 * partition-major and class-minor.
 */
mcc_gpu_code rf_prepare(mcc_gpu *g, rf_call *c, mcc_error *err);

/* Free c and what rf_prepare allocated for it. */
void		rf_call_free(rf_call *c);

#endif							/* MCC_GPU_REFINE_PREP_H */
