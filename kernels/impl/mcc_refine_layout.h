/*
 * mcc_refine_layout.h: the data of the GPU refinement kernel's blocks
 * (mcc_refine_body.h says what a block computes): its constants, the
 * records of a pair's sides, the arguments, the shared-memory workspace
 * of a block and how it is carved, and the keys. C and CUDA, as the body.
 */
#ifndef MCC_REFINE_LAYOUT_H
#define MCC_REFINE_LAYOUT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C"
{
#endif
#include "mcc_match.h"
#include "mcc_lss.h"
#ifdef __cplusplus
}
#endif
#include "mcc_hd.h"
#include "mcc_relax_hd.h"

/* Values of the kernel's arithmetic */
#define RB_LUT			264		/* LUT_sqrt entries copied to shared memory (popcounts 0..255) */
#define RB_HIST			256		/* votes (64) or radix digits (256) */
#define RB_NSC			16		/* 32-bit scalars */
#define RB_NSC64		4		/* 64-bit scalars */

/* 32-bit scalars */
#define RB_SC_E			0		/* positive entries of Gamma */
#define RB_SC_CNT		1		/* keys collected in a round */
#define RB_SC_DIG		2		/* radix select: digit */
#define RB_SC_WANT		3		/* radix select: rank still wanted */
#define RB_SC_NG0		4		/* LGS pairs found, set 0 and 1 */
/* 64-bit scalars */
#define RB_SC64_HI		0		/* smallest key of the last round */
#define RB_SC64_S0		1		/* score of set 0 and 1 (double bits) */

/* Pair sets. */
#define RB_PAIRS_LSS	1		/* the n_R largest entries, not one-to-one */
#define RB_PAIRS_LGS	2		/* greedy one-to-one in key order */

/* One cylinder of a side prepared on the host (probe, or candidate given as a template). */
typedef struct rb_cyl
{
	uint64_t	bits[4];
	double		ux;				/* mcc_dm_sincos of the minutia's direction */
	double		uy;
	int16_t		x;				/* the minutia's position as stored */
	int16_t		y;
	uint16_t	pc;				/* popcount */
	uint8_t		angle;			/* byte angle */
	uint8_t		pad;
} rb_cyl;						/* 56 bytes */

/* A side: cylinders cyl[off .. off + n), in minutia order. */
typedef struct rb_side
{
	uint32_t	off;
	uint32_t	n;
} rb_side;

/* A pair as the kernel reads it. */
typedef struct rb_pair_desc
{
	uint32_t	a;				/* probe: index into sides */
	uint32_t	b;				/* candidate: index into sides, or local gallery template */
	uint32_t	out;			/* index into out */
	uint8_t		np[2];			/* n_P of the score of set 0 and set 1 */
	uint8_t		bside;			/* 1: b is a side; 0: a gallery template */
	uint8_t		pad;
} rb_pair_desc;					/* 16 bytes */

/*
 * A gallery partition as the kernel reads it (mcc_gpu_int.h): cylinder
 * slots (bits in lo/hi, 4 words each, meta = angle | tloc << 8 | pc << 16
 * | valid << 31), and per local template its first template-major record
 * tcoff[lt] and cylinder count; per template-major record: sslot (the slot
 * of the template's stored cylinder s), and in minutia order rperm (stored
 * index of rank k), rxy (position) and ruix (unit vector index into utab).
 */
typedef struct rb_gallery
{
	const uint32_t *lo;
	const uint32_t *hi;
	const uint32_t *meta;
	const uint32_t *tcoff;
	const uint16_t *tncyl;
	const uint32_t *sslot;
	const uint8_t *rperm;
	const uint32_t *rxy;
	const uint32_t *ruix;
	const double *utab;			/* (ux, uy) pairs */
} rb_gallery;

/* One relaxation (mcc_relax_params). */
typedef struct rb_relax
{
	double		w_r;
	int			n_rel;
	int			d1;				/* mcc_d1_norm */
	int			max_nr;
	int			tab;			/* sigmoid table set: 0 TPAMI, 1 [11] */
} rb_relax;

/* What a method computes: its pair sets, and how each is scored. */
typedef struct rb_plan
{
	int			votes;			/* lss: the LSS of the votes, nothing else */
	int			nsets;			/* 1, or 2 (fused: the mean of two scores) */
	int			kind[2];		/* RB_PAIRS_LSS or RB_PAIRS_LGS */
	int			relax[2];		/* 1: relaxation rx[i]; 0: mean of the first n_P Gamma */
	rb_relax	rx[2];
} rb_plan;

/* Everything a launch shares. */
typedef struct rb_args
{
	const rb_pair_desc *pairs;
	uint32_t	npairs;
	const rb_cyl *cyl;
	const rb_side *sides;
	rb_gallery	gal;
	const mcc_sigmoid_tab *tabs;	/* [2][3]: mcc_match_params.tab */
	const uint32_t *sqrt_tab;	/* LUT_sqrt, RB_LUT entries */
	rb_plan		plan;
	int			delta;			/* the profile's delta_theta */
	uint32_t	nmax;			/* cylinders per side this launch holds */
	uint32_t	kcap;			/* keys in shared memory (a power of two) */
	float	   *gscr;			/* per block: Gamma, gstride floats (or NULL) */
	uint64_t	gstride;
	double	   *rscr;			/* per block: rho, rstride doubles (or NULL) */
	uint64_t	rstride;
	float	   *out;
	double	   *dbg;			/* test hook: the last set's unrounded score, or NULL */
	int			fault;			/* test hook: fault on purpose */
} rb_args;

/* Shared memory of a block (rb_ws_carve). */
typedef struct rb_ws
{
	uint64_t   *abits;			/* [4][nmax], word-major */
	uint64_t   *bbits;
	double	   *aux;
	double	   *auy;
	double	   *bux;
	double	   *buy;
	double	   *pl0[2];			/* lambda_0 of the pairs of each set */
	double	   *fx;				/* phi_t */
	double	   *fy;
	double	   *lam;			/* lambda, two buffers */
	double	   *nxt;
	double	   *eff;
	uint64_t   *keys;			/* [kcap]; rho while relaxing, when it fits */
	uint64_t   *sc64;
	uint32_t   *sqrt_tab;
	uint32_t   *hist;
	uint32_t   *sc;
	int16_t    *ax;
	int16_t    *ay;
	int16_t    *bx;
	int16_t    *by;
	uint16_t   *apc;
	uint16_t   *bpc;
	uint16_t   *sel;			/* pair of each rank */
	uint8_t    *aang;
	uint8_t    *bang;
	uint8_t    *pr[2];			/* pairs of each set: row (A) ... */
	uint8_t    *pcc[2];			/* ... and column (B) */
	uint8_t    *used_r;
	uint8_t    *used_c;
} rb_ws;

/* Per-pair values every thread computes alike. */
typedef struct rb_job
{
	rb_pair_desc d;
	uint32_t	na;
	uint32_t	nb;
	uint32_t	nr[2];			/* pairs wanted in each set */
	float	   *gbuf;			/* Gamma in global memory, or NULL */
	double	   *rscr;			/* rho in global memory, or NULL */
} rb_job;

/* ------------------------------------------------------------------ */
/* primitives                                                          */

#ifdef __CUDA_ARCH__
#define RB_ATOMIC_INC(p) atomicAdd((p), 1u)
#define RB_ATOMIC_OR(p, v) atomicOr((p), (v))
#define RB_ATOMIC_AND(p, v) atomicAnd((p), (v))
#define RB_POPC64(x) __popcll(x)
#define RB_FFS(x) __ffs(x)
#else
#define RB_ATOMIC_INC(p) ((*(p))++)
#define RB_ATOMIC_OR(p, v) (*(p) |= (v))
#define RB_ATOMIC_AND(p, v) (*(p) &= (v))
#define RB_POPC64(x) __builtin_popcountll(x)
#define RB_FFS(x) __builtin_ffs(x)
#endif

/* Shared memory layout for nmax cylinders per side and kcap keys; returns the bytes. */
MCC_HD size_t
rb_ws_carve(rb_ws *ws, unsigned char *base, uint32_t nmax, uint32_t kcap)
{
	size_t		off = 0;
	size_t		n8 = 8 * (size_t) nmax;

#define RB_TAKE(field, type, bytes) \
	do { if (base) ws->field = (type *) (base + off); off += ((bytes) + 15) & ~(size_t) 15; } while (0)
	RB_TAKE(abits, uint64_t, 4 * n8);
	RB_TAKE(bbits, uint64_t, 4 * n8);
	RB_TAKE(aux, double, n8);
	RB_TAKE(auy, double, n8);
	RB_TAKE(bux, double, n8);
	RB_TAKE(buy, double, n8);
	RB_TAKE(pl0[0], double, n8);
	RB_TAKE(pl0[1], double, n8);
	RB_TAKE(fx, double, n8);
	RB_TAKE(fy, double, n8);
	RB_TAKE(lam, double, n8);
	RB_TAKE(nxt, double, n8);
	RB_TAKE(eff, double, n8);
	RB_TAKE(keys, uint64_t, 8 * (size_t) kcap);
	RB_TAKE(sc64, uint64_t, 8 * RB_NSC64);
	RB_TAKE(sqrt_tab, uint32_t, 4 * RB_LUT);
	RB_TAKE(hist, uint32_t, 4 * RB_HIST);
	RB_TAKE(sc, uint32_t, 4 * RB_NSC);
	RB_TAKE(ax, int16_t, 2 * (size_t) nmax);
	RB_TAKE(ay, int16_t, 2 * (size_t) nmax);
	RB_TAKE(bx, int16_t, 2 * (size_t) nmax);
	RB_TAKE(by, int16_t, 2 * (size_t) nmax);
	RB_TAKE(apc, uint16_t, 2 * (size_t) nmax);
	RB_TAKE(bpc, uint16_t, 2 * (size_t) nmax);
	RB_TAKE(sel, uint16_t, 2 * (size_t) nmax);
	RB_TAKE(aang, uint8_t, nmax);
	RB_TAKE(bang, uint8_t, nmax);
	RB_TAKE(pr[0], uint8_t, nmax);
	RB_TAKE(pr[1], uint8_t, nmax);
	RB_TAKE(pcc[0], uint8_t, nmax);
	RB_TAKE(pcc[1], uint8_t, nmax);
	RB_TAKE(used_r, uint8_t, nmax);
	RB_TAKE(used_c, uint8_t, nmax);
#undef RB_TAKE
	return off;
}

#endif							/* MCC_REFINE_LAYOUT_H */
