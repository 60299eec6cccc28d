/*
 * mcc_refine_body.h: what one block of the GPU refinement kernel
 * (kernels/impl/mcc_gpu_refine.cu) computes for one (probe, candidate) pair,
 * written once for CUDA and for C, so that test/unit/test_refine_gpu_emu.c
 * runs the very same code on the CPU, thread by thread and phase by phase,
 * against mcc_match_candidate() where there is no GPU.
 *
 * A pair is worked in phases separated by block barriers. A phase function
 * takes (tid, nt) and touches only what its tid owns, or is guarded by
 * tid == 0; counters shared by threads go through RB_ATOMIC_INC. The driver
 * rb_pair() (compiled only where the includer defines RB_DRIVER, RB_PHASE
 * and RB_SYNC) reads shared values only right after a barrier and writes
 * shared memory only inside phases: so it runs identically as CUDA (every
 * thread runs the driver, RB_PHASE = call, then __syncthreads) and as C
 * (one driver, RB_PHASE = loop over tid).
 *
 * The steps mirror src/core/mcc_match.c and mcc_relax.c line by line, and
 * share their arithmetic (keys, sigmoid tables, rho) through
 * src/core/mcc_relax_hd.h:
 *   load      side A (the probe) and side B (the candidate) in minutia
 *             order into shared memory: bits, popcount, byte angle,
 *             position, unit vector;
 *   matrix    every (r, c): the gate, popcount of the xor, den, Gamma =
 *             1 - (float) sqrt_fx[x] / (float) den; positive entries as
 *             keys (Gamma bits << 16 | 0xFFFF - (r << 8 | c)), the LSS
 *             votes when the method is lss; Gamma to global memory when
 *             there may be more keys than the shared buffer holds;
 *   ranking   keys in descending order, in rounds of at most kcap keys
 *             (the first round straight from the matrix pass when all fit;
 *             later ones selected below the last round's smallest key by a
 *             radix select on the global Gamma), each round sorted by a
 *             bitonic network: the LSS pairs are the first n_R keys, the
 *             LGS pairs the greedy one-to-one walk in key order, 32 keys
 *             at a time (the lowest key whose row and column are free is
 *             taken, the keys it conflicts with dropped: the sequential
 *             greedy's order);
 *   relax     per pair set: phi_t, rho (n x n doubles, in the key buffer
 *             when it fits, else in global memory), n_rel synchronous
 *             iterations with each sum over k in pair order, efficiencies,
 *             the n_P best by the CPU's tie rule, their sum in rank order;
 *   final     the mean of the two relaxed scores (fused) or the one score,
 *             as float.
 */
#ifndef MCC_REFINE_BODY_H
#define MCC_REFINE_BODY_H

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
#define RB_SC_MASK		6		/* LGS walk: free keys of the chunk (bit per lane) */
#define RB_SC_WIN		7		/* LGS walk: lane accepted, 32 = none */
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

/* The angular gate of mcc_lss_gate. */
MCC_HD int
rb_gate(int qa, int qb, int delta_theta)
{
	int			d = (int8_t) (uint8_t) (qa - qb);

	return (d < 0 ? -d : d) <= delta_theta;
}

/* Row and column of a key (mcc_key_entry). */
MCC_HD uint32_t
rb_key_r(uint64_t key)
{
	int			r;
	int			c;

	mcc_key_entry(key, &r, &c);
	return (uint32_t) r;
}

MCC_HD uint32_t
rb_key_c(uint64_t key)
{
	int			r;
	int			c;

	mcc_key_entry(key, &r, &c);
	return (uint32_t) c;
}

/* ------------------------------------------------------------------ */
/* the job of a pair                                                   */

/* Uniform values of pair pi; slot = the block's scratch slot. */
MCC_HD void
rb_job_init(rb_job *j, const rb_args *a, uint32_t pi, uint32_t slot)
{
	uint32_t	m;

	j->d = a->pairs[pi];
	j->na = a->sides[j->d.a].n;
	j->nb = j->d.bside ? a->sides[j->d.b].n : a->gal.tncyl[j->d.b];
	m = j->na < j->nb ? j->na : j->nb;
	for (int s = 0; s < 2; s++)
	{
		const rb_relax *rx = &a->plan.rx[s];

		if (s >= a->plan.nsets)
			j->nr[s] = 0;
		else if (!a->plan.relax[s])
			j->nr[s] = j->d.np[s];	/* plain LGS: pairs_lgs(w, np) */
		else
			j->nr[s] = rx->max_nr > 0 && m > (uint32_t) rx->max_nr ? (uint32_t) rx->max_nr : m;
	}
	j->gbuf = (uint64_t) j->na * j->nb > a->kcap && a->gscr ? a->gscr + slot * a->gstride : NULL;
	j->rscr = a->rscr ? a->rscr + slot * a->rstride : NULL;
}

/* Once per block: LUT_sqrt into shared memory. */
MCC_HD void
rb_ph_init(const rb_ws *ws, const rb_args *a, int tid, int nt)
{
	for (int i = tid; i < RB_LUT; i += nt)
		ws->sqrt_tab[i] = a->sqrt_tab[i];
}

/* Load both sides; clear the counters and flags of the pair. */
MCC_HD void
rb_ph_load(const rb_ws *ws, const rb_args *a, const rb_job *j, int tid, int nt)
{
	const rb_side *sa = &a->sides[j->d.a];
	uint32_t	nmax = a->nmax;

	for (uint32_t k = tid; k < j->na; k += nt)
	{
		const rb_cyl *cy = &a->cyl[sa->off + k];

		for (int w = 0; w < 4; w++)
			ws->abits[w * nmax + k] = cy->bits[w];
		ws->aux[k] = cy->ux;
		ws->auy[k] = cy->uy;
		ws->ax[k] = cy->x;
		ws->ay[k] = cy->y;
		ws->apc[k] = cy->pc;
		ws->aang[k] = cy->angle;
	}
	if (j->d.bside)
	{
		const rb_side *sb = &a->sides[j->d.b];

		for (uint32_t k = tid; k < j->nb; k += nt)
		{
			const rb_cyl *cy = &a->cyl[sb->off + k];

			for (int w = 0; w < 4; w++)
				ws->bbits[w * nmax + k] = cy->bits[w];
			ws->bux[k] = cy->ux;
			ws->buy[k] = cy->uy;
			ws->bx[k] = cy->x;
			ws->by[k] = cy->y;
			ws->bpc[k] = cy->pc;
			ws->bang[k] = cy->angle;
		}
	}
	else
	{
		const rb_gallery *g = &a->gal;
		uint32_t	base = g->tcoff[j->d.b];

		for (uint32_t k = tid; k < j->nb; k += nt)
		{
			uint32_t	slot = g->sslot[base + g->rperm[base + k]];
			const uint32_t *lo = g->lo + 4 * (size_t) slot;
			const uint32_t *hi = g->hi + 4 * (size_t) slot;
			uint32_t	meta = g->meta[slot];
			uint32_t	xy = g->rxy[base + k];
			uint32_t	u = g->ruix[base + k];

			ws->bbits[0 * nmax + k] = lo[0] | (uint64_t) lo[1] << 32;
			ws->bbits[1 * nmax + k] = lo[2] | (uint64_t) lo[3] << 32;
			ws->bbits[2 * nmax + k] = hi[0] | (uint64_t) hi[1] << 32;
			ws->bbits[3 * nmax + k] = hi[2] | (uint64_t) hi[3] << 32;
			ws->bux[k] = g->utab[2 * (size_t) u];
			ws->buy[k] = g->utab[2 * (size_t) u + 1];
			ws->bx[k] = (int16_t) (uint16_t) (xy & 0xFFFF);
			ws->by[k] = (int16_t) (uint16_t) (xy >> 16);
			ws->bpc[k] = (uint16_t) ((meta >> 16) & 0x7FFF);
			ws->bang[k] = (uint8_t) (meta & 0xFF);
		}
	}
	for (uint32_t i = tid; i < nmax; i += nt)
		ws->used_r[i] = ws->used_c[i] = 0;
	for (int i = tid; i < RB_HIST; i += nt)
		ws->hist[i] = 0;
	if (tid == 0)
	{
		ws->sc[RB_SC_E] = 0;
		ws->sc[RB_SC_CNT] = 0;
		ws->sc[RB_SC_NG0] = 0;
		ws->sc[RB_SC_NG0 + 1] = 0;
		ws->sc[RB_SC_MASK] = 0;
	}
}

/*
 * Gamma (the matrix pass of mcc_match.c, profile without masks): positive
 * entries as keys while they fit, Gamma to gbuf (every entry) when given,
 * the votes when the method is lss.
 */
MCC_HD void
rb_ph_matrix(const rb_ws *ws, const rb_args *a, const rb_job *j, int tid, int nt)
{
	uint32_t	nmax = a->nmax;
	uint32_t	nb = j->nb;
	uint32_t	ne = j->na * nb;
	int			votes = a->plan.votes;
	const uint32_t *sq = ws->sqrt_tab;

	for (uint32_t e = tid; e < ne; e += nt)
	{
		uint32_t	r = e / nb;
		uint32_t	c = e - r * nb;
		float		g = 0.0f;

		if (rb_gate(ws->aang[r], ws->bang[c], a->delta))
		{
			int			x = 0;
			uint32_t	den;

			for (int w = 0; w < 4; w++)
				x += RB_POPC64(ws->abits[w * nmax + r] ^ ws->bbits[w * nmax + c]);
			den = sq[ws->apc[r]] + sq[ws->bpc[c]];
			if (den != 0)
			{
				g = 1.0f - (float) sq[x] / (float) den;
				if (votes)
				{
					uint32_t	rcp = (uint32_t) (((uint64_t) MCC_W << 32) / den);
					uint32_t	d = (uint32_t) (((uint64_t) sq[x] * rcp) >> 32);

					if (d < MCC_W)
						RB_ATOMIC_INC(&ws->hist[d]);
				}
			}
		}
		if (j->gbuf)
			j->gbuf[e] = g;
		if (g > 0.0f && !votes)
		{
			uint32_t	i = RB_ATOMIC_INC(&ws->sc[RB_SC_E]);

			if (i < a->kcap)
				ws->keys[i] = mcc_entry_key(g, (int) r, (int) c);
		}
	}
}

/* mcc_lss_finish of the votes: the lss score. */
MCC_HD float
rb_votes_score(const rb_ws *ws, int np)
{
	uint32_t	sum = 0;
	uint32_t	t = (uint32_t) np;

	if (np <= 0)
		return 0.0f;
	for (int i = 0; i < MCC_W && t > 0; i++)
	{
		uint32_t	take = ws->hist[i] < t ? ws->hist[i] : t;

		sum += take * (uint32_t) i;
		t -= take;
	}
	sum += t * MCC_W;
	return mcc_lss_from_sum(np, sum);
}

/* Radix select: clear the digit histogram. */
MCC_HD void
rb_ph_hclear(const rb_ws *ws, int tid, int nt)
{
	for (int i = tid; i < RB_HIST; i += nt)
		ws->hist[i] = 0;
}

/*
 * Radix select: count the digits at shift of the keys below hi whose
 * bits above the digit equal prefix's.
 */
MCC_HD void
rb_ph_hcount(const rb_ws *ws, const rb_job *j, uint64_t hi, uint64_t prefix, int shift,
			 int tid, int nt)
{
	uint32_t	nb = j->nb;
	uint32_t	ne = j->na * nb;
	uint64_t	above = ~(((uint64_t) 1 << (shift + 8)) - 1);

	for (uint32_t e = tid; e < ne; e += nt)
	{
		float		g = j->gbuf[e];

		if (g > 0.0f)
		{
			uint32_t	r = e / nb;
			uint64_t	key = mcc_entry_key(g, (int) r, (int) (e - r * nb));

			if (key < hi && (key & above) == (prefix & above))
				RB_ATOMIC_INC(&ws->hist[(key >> shift) & 0xFF]);
		}
	}
}

/* Radix select (thread 0): the digit holding the want-th largest key. */
MCC_HD void
rb_pick(const rb_ws *ws, uint32_t want)
{
	for (int d = 0xFF; d >= 0; d--)
	{
		if (ws->hist[d] >= want)
		{
			ws->sc[RB_SC_DIG] = (uint32_t) d;
			ws->sc[RB_SC_WANT] = want;
			return;
		}
		want -= ws->hist[d];
	}
	ws->sc[RB_SC_DIG] = 0;		/* unreachable: the counts hold want keys */
	ws->sc[RB_SC_WANT] = want;
}

/* A round's keys: every key in [lo, hi), from the global Gamma. */
MCC_HD void
rb_ph_collect(const rb_ws *ws, const rb_args *a, const rb_job *j, uint64_t lo, uint64_t hi,
			  int tid, int nt)
{
	uint32_t	nb = j->nb;
	uint32_t	ne = j->na * nb;

	for (uint32_t e = tid; e < ne; e += nt)
	{
		float		g = j->gbuf[e];

		if (g > 0.0f)
		{
			uint32_t	r = e / nb;
			uint64_t	key = mcc_entry_key(g, (int) r, (int) (e - r * nb));

			if (key >= lo && key < hi)
			{
				uint32_t	i = RB_ATOMIC_INC(&ws->sc[RB_SC_CNT]);

				if (i < a->kcap)
					ws->keys[i] = key;
			}
		}
	}
}

/* Pad keys [m, p) with 0 (below every key) for the sort. */
MCC_HD void
rb_ph_pad(const rb_ws *ws, uint32_t m, uint32_t p, int tid, int nt)
{
	for (uint32_t i = m + tid; i < p; i += nt)
		ws->keys[i] = 0;
}

/* One step (k, jj) of a bitonic network sorting keys[0 .. p) in descending order. */
MCC_HD void
rb_ph_bitonic(const rb_ws *ws, uint32_t p, uint32_t k, uint32_t jj, int tid, int nt)
{
	for (uint32_t i = tid; i < p / 2; i += nt)
	{
		uint32_t	l = (i / jj) * 2 * jj + (i % jj);
		uint32_t	r = l + jj;
		uint64_t	x = ws->keys[l];
		uint64_t	y = ws->keys[r];
		int			desc = (l & k) == 0;

		if (desc ? x < y : x > y)
		{
			ws->keys[l] = y;
			ws->keys[r] = x;
		}
	}
}

/*
 * A sorted round of m keys: the LSS sets take the next keys (got[s] so
 * far); thread 0 keeps the round's smallest key and resets the collect
 * counter. (The LGS sets walk the round next: rb_lgs_walk.)
 */
MCC_HD void
rb_ph_consume(const rb_ws *ws, const rb_args *a, const rb_job *j, uint32_t m,
			  const uint32_t *got, int tid, int nt)
{
	for (int s = 0; s < a->plan.nsets; s++)
	{
		if (a->plan.kind[s] == RB_PAIRS_LSS && got[s] < j->nr[s])
		{
			uint32_t	take = j->nr[s] - got[s] < m ? j->nr[s] - got[s] : m;

			for (uint32_t i = tid; i < take; i += nt)
			{
				uint64_t	key = ws->keys[i];

				ws->pr[s][got[s] + i] = (uint8_t) rb_key_r(key);
				ws->pcc[s][got[s] + i] = (uint8_t) rb_key_c(key);
				ws->pl0[s][got[s] + i] = (double) mcc_key_gamma(key);
			}
		}
	}
	if (tid == 0)
	{
		ws->sc64[RB_SC64_HI] = ws->keys[m - 1];
		ws->sc[RB_SC_CNT] = 0;
	}
}

/*
 * The LGS walk (pairs_lgs: greedy one-to-one in key order), 32 keys at a
 * time. Lanes: bit l of the mask for key base + l if its row and column
 * are free.
 */
MCC_HD void
rb_ph_lgs_lanes(const rb_ws *ws, uint32_t base, uint32_t m, int tid, int nt)
{
	for (int l = tid; l < 32; l += nt)
		if (base + l < m)
		{
			uint64_t	key = ws->keys[base + l];

			if (!ws->used_r[rb_key_r(key)] && !ws->used_c[rb_key_c(key)])
				RB_ATOMIC_OR(&ws->sc[RB_SC_MASK], 1u << l);
		}
}

/*
 * The LGS walk (thread 0): the lowest free lane's key is the next greedy
 * pair (every lower key has a used row or column); none when the mask is
 * empty or the set is full (the mask is then left 0 for the next chunk).
 */
MCC_HD void
rb_lgs_take(const rb_ws *ws, const rb_job *j, int s, uint32_t base)
{
	uint32_t	mask = ws->sc[RB_SC_MASK];
	uint32_t	n = ws->sc[RB_SC_NG0 + s];
	uint32_t	w;
	uint64_t	key;
	uint32_t	r;
	uint32_t	c;

	if (mask == 0 || n >= j->nr[s])
	{
		ws->sc[RB_SC_WIN] = 32;
		ws->sc[RB_SC_MASK] = 0;
		return;
	}
	w = (uint32_t) RB_FFS(mask) - 1;
	key = ws->keys[base + w];
	r = rb_key_r(key);
	c = rb_key_c(key);
	ws->used_r[r] = ws->used_c[c] = 1;
	ws->pr[s][n] = (uint8_t) r;
	ws->pcc[s][n] = (uint8_t) c;
	ws->pl0[s][n] = (double) mcc_key_gamma(key);
	ws->sc[RB_SC_NG0 + s] = n + 1;
	ws->sc[RB_SC_WIN] = w;
}

/* The LGS walk. Lanes: drop the keys that share a row or column with the accepted one. */
MCC_HD void
rb_ph_lgs_clear(const rb_ws *ws, uint32_t base, uint32_t m, uint32_t win, int tid, int nt)
{
	uint64_t	wk = ws->keys[base + win];
	uint32_t	wr = rb_key_r(wk);
	uint32_t	wc = rb_key_c(wk);

	for (int l = tid; l < 32; l += nt)
		if (base + l < m && ((ws->sc[RB_SC_MASK] >> l) & 1))
		{
			uint64_t	key = ws->keys[base + l];

			if (rb_key_r(key) == wr || rb_key_c(key) == wc)
				RB_ATOMIC_AND(&ws->sc[RB_SC_MASK], ~(1u << l));
		}
}

/* Relaxation, set s: positions and phi_t of the pairs, lambda_0. */
MCC_HD void
rb_ph_rsetup(const rb_ws *ws, int s, uint32_t n, int tid, int nt)
{
	for (uint32_t t = tid; t < n; t += nt)
	{
		uint32_t	r = ws->pr[s][t];
		uint32_t	c = ws->pcc[s][t];

		ws->fx[t] = ws->aux[r] * ws->bux[c] + ws->auy[r] * ws->buy[c];
		ws->fy[t] = ws->auy[r] * ws->bux[c] - ws->aux[r] * ws->buy[c];
		ws->lam[t] = ws->pl0[s][t];
	}
}

/* Relaxation, set s: the compatibilities rho[t * n + k]. */
MCC_HD void
rb_ph_rho(const rb_ws *ws, const rb_args *a, int s, uint32_t n, double *rho, int tid, int nt)
{
	const rb_relax *rx = &a->plan.rx[s];
	const mcc_sigmoid_tab *tab = a->tabs + 3 * rx->tab;
	uint32_t	ne = n * n;

	for (uint32_t e = tid; e < ne; e += nt)
	{
		uint32_t	t = e / n;
		uint32_t	k = e - t * n;
		uint32_t	rt = ws->pr[s][t];
		uint32_t	ct = ws->pcc[s][t];
		uint32_t	rk = ws->pr[s][k];
		uint32_t	ck = ws->pcc[s][k];

		if (k == t)
		{
			rho[e] = 0.0;
			continue;
		}
		rho[e] = mcc_rho(tab, (mcc_d1_norm) rx->d1,
						(double) ws->ax[rt], -(double) ws->ay[rt],
						(double) ws->bx[ct], -(double) ws->by[ct], ws->fx[t], ws->fy[t],
						(double) ws->ax[rk], -(double) ws->ay[rk],
						(double) ws->bx[ck], -(double) ws->by[ck], ws->fx[k], ws->fy[k]);
	}
}

/* Relaxation: one synchronous iteration, lam -> nxt, each sum over k in order. */
MCC_HD void
rb_ph_iter(const double *rho, const double *lam, double *nxt, uint32_t n, double w_r,
		   double coef, int tid, int nt)
{
	for (uint32_t t = tid; t < n; t += nt)
	{
		const double *row = rho + (size_t) t * n;
		double		acc = 0.0;

		for (uint32_t k = 0; k < n; k++)
			acc += row[k] * lam[k];
		nxt[t] = w_r * lam[t] + coef * acc;
	}
}

/* Relaxation: efficiencies lambda_final / lambda_0. */
MCC_HD void
rb_ph_eff(const rb_ws *ws, int s, const double *lam, uint32_t n, int tid, int nt)
{
	for (uint32_t t = tid; t < n; t += nt)
		ws->eff[t] = lam[t] / ws->pl0[s][t];
}

/*
 * Relaxation: the rank of each pair by efficiency, descending, ties by
 * pair order (the insertion of mcc_relax_score); sel[rank] for the first np.
 */
MCC_HD void
rb_ph_rank(const rb_ws *ws, uint32_t n, uint32_t np, int tid, int nt)
{
	for (uint32_t t = tid; t < n; t += nt)
	{
		double		et = ws->eff[t];
		uint32_t	rank = 0;

		for (uint32_t u = 0; u < n; u++)
			rank += ws->eff[u] > et || (u < t && ws->eff[u] == et);
		if (rank < np)
			ws->sel[rank] = (uint16_t) t;
	}
}

/* Relaxation (thread 0): the mean of the selected lambdas over np, summed in rank order. */
MCC_HD double
rb_relax_sum(const rb_ws *ws, const double *lam, uint32_t n, uint32_t np)
{
	uint32_t	nbest = n < np ? n : np;
	double		sum = 0.0;

	for (uint32_t i = 0; i < nbest; i++)
		sum += lam[ws->sel[i]];
	return sum / (int) np;
}

/* pairs_mean of mcc_match.c (thread 0): the first n_P pairs' Gamma over n_P. */
MCC_HD double
rb_pairs_mean(const rb_ws *ws, int s, uint32_t n, int np)
{
	double		sum = 0.0;
	uint32_t	k = n < (uint32_t) np ? n : (uint32_t) np;

	for (uint32_t i = 0; i < k; i++)
		sum += ws->pl0[s][i];
	return np > 0 ? sum / np : 0.0;
}

MCC_HD void
rb_set_score(const rb_ws *ws, int s, double v)
{
	memcpy(&ws->sc64[RB_SC64_S0 + s], &v, sizeof(v));
}

MCC_HD double
rb_get_score(const rb_ws *ws, int s)
{
	double		v;

	memcpy(&v, &ws->sc64[RB_SC64_S0 + s], sizeof(v));
	return v;
}

/* The final score of the pair (thread 0). */
MCC_HD void
rb_final(const rb_ws *ws, const rb_args *a, const rb_job *j)
{
	double		s = a->plan.nsets == 2 ?
		0.5 * (rb_get_score(ws, 0) + rb_get_score(ws, 1)) : rb_get_score(ws, 0);

	a->out[j->d.out] = (float) s;
	if (a->dbg)
		a->dbg[j->d.out] = rb_get_score(ws, a->plan.nsets - 1);
}

/* Smallest power of two >= m (m >= 1). */
MCC_HD uint32_t
rb_pow2(uint32_t m)
{
	uint32_t	p = 1;

	while (p < m)
		p <<= 1;
	return p;
}

#endif							/* MCC_REFINE_BODY_H */

/* ------------------------------------------------------------------ */
/* the driver (once per includer that defines RB_DRIVER)               */

#if defined(RB_DRIVER) && !defined(MCC_REFINE_DRIVER_DONE)
#define MCC_REFINE_DRIVER_DONE

/*
 * Relax pair set s (n pairs) and leave its score in sc64. Every branch
 * depends on uniform values only.
 */
RB_DRIVER void
rb_relax_set(const rb_ws *ws, const rb_args *a, const rb_job *j, int s, uint32_t n, int nt)
{
	const rb_relax *rx = &a->plan.rx[s];
	uint32_t	np = j->d.np[s];
	double	   *rho;
	double	   *lam = ws->lam;
	double	   *nxt = ws->nxt;

	if (!a->plan.relax[s])
	{
		RB_PHASE(if (tid == 0) rb_set_score(ws, s, rb_pairs_mean(ws, s, n, (int) np)));
		return;
	}
	if (n == 0 || np == 0)
	{
		RB_PHASE(if (tid == 0) rb_set_score(ws, s, 0.0));
		return;
	}
	rho = (uint64_t) n * n <= a->kcap ? (double *) ws->keys : j->rscr;
	RB_PHASE(rb_ph_rsetup(ws, s, n, tid, nt));
	if (n > 1)
	{
		double		coef = (1.0 - rx->w_r) / (double) (n - 1);

		RB_PHASE(rb_ph_rho(ws, a, s, n, rho, tid, nt));
		for (int it = 0; it < rx->n_rel; it++)
		{
			double	   *tmp;

			RB_PHASE(rb_ph_iter(rho, lam, nxt, n, rx->w_r, coef, tid, nt));
			tmp = lam;
			lam = nxt;
			nxt = tmp;
		}
	}
	RB_PHASE(rb_ph_eff(ws, s, lam, n, tid, nt));
	RB_PHASE(rb_ph_rank(ws, n, np, tid, nt));
	RB_PHASE(if (tid == 0) rb_set_score(ws, s, rb_relax_sum(ws, lam, n, np)));
}

/*
 * The LGS walk of set s over the sorted round keys[0 .. m): chunks of 32
 * keys; in each, the lowest free key is accepted and the keys sharing its
 * row or column are dropped, until none is free or the set is full. The
 * order of acceptance is the sequential greedy's.
 */
RB_DRIVER void
rb_lgs_walk(const rb_ws *ws, const rb_job *j, int s, uint32_t m, int nt)
{
	for (uint32_t base = 0; base < m; base += 32)
	{
		RB_PHASE(rb_ph_lgs_lanes(ws, base, m, tid, nt));
		for (;;)
		{
			uint32_t	win;

			RB_PHASE(if (tid == 0) rb_lgs_take(ws, j, s, base));
			win = ws->sc[RB_SC_WIN];
			if (win >= 32)
				break;
			RB_PHASE(rb_ph_lgs_clear(ws, base, m, win, tid, nt));
		}
		if (ws->sc[RB_SC_NG0 + s] >= j->nr[s])
			break;
	}
}

/*
 * The keys of Gamma in descending order, in rounds, handed to the pair
 * sets until each has its pairs or the keys run out; got[] receives the
 * pairs of each set.
 */
RB_DRIVER void
rb_rank_pairs(const rb_ws *ws, const rb_args *a, const rb_job *j, uint32_t e,
			  uint32_t *got, int nt)
{
	uint64_t	hi = ~(uint64_t) 0;
	uint32_t	left = e;
	int			first = 1;

	got[0] = got[1] = 0;
	for (;;)
	{
		uint32_t	m;
		uint32_t	p;
		int			more = 0;

		for (int s = 0; s < a->plan.nsets; s++)
			more |= got[s] < j->nr[s];
		if (left == 0 || !more)
			break;
		if (first && e <= a->kcap)
			m = e;				/* the matrix pass collected them all */
		else
		{
			uint64_t	lo = 0;

			m = left < a->kcap ? left : a->kcap;
			if (m < left)
			{
				/* the m-th largest key below hi, digit by digit */
				uint64_t	prefix = 0;
				uint32_t	want = m;

				for (int shift = 40; shift >= 0; shift -= 8)
				{
					RB_PHASE(rb_ph_hclear(ws, tid, nt));
					RB_PHASE(rb_ph_hcount(ws, j, hi, prefix, shift, tid, nt));
					RB_PHASE(if (tid == 0) rb_pick(ws, want));
					prefix |= (uint64_t) ws->sc[RB_SC_DIG] << shift;
					want = ws->sc[RB_SC_WANT];
				}
				lo = prefix;
			}
			RB_PHASE(rb_ph_collect(ws, a, j, lo, hi, tid, nt));
		}
		first = 0;
		p = rb_pow2(m);
		if (p > m)
			RB_PHASE(rb_ph_pad(ws, m, p, tid, nt));
		for (uint32_t k = 2; k <= p; k <<= 1)
			for (uint32_t jj = k >> 1; jj > 0; jj >>= 1)
				RB_PHASE(rb_ph_bitonic(ws, p, k, jj, tid, nt));
		RB_PHASE(rb_ph_consume(ws, a, j, m, got, tid, nt));
		for (int s = 0; s < a->plan.nsets; s++)
		{
			if (a->plan.kind[s] == RB_PAIRS_LSS)
				got[s] += j->nr[s] - got[s] < m ? j->nr[s] - got[s] : m;
			else if (got[s] < j->nr[s])
			{
				rb_lgs_walk(ws, j, s, m, nt);
				got[s] = ws->sc[RB_SC_NG0 + s];
			}
		}
		hi = ws->sc64[RB_SC64_HI];
		left -= m;
	}
}

/* Score pair pi with the block (scratch slot `slot`). */
RB_DRIVER void
rb_pair(const rb_ws *ws, const rb_args *a, uint32_t pi, uint32_t slot, int nt)
{
	rb_job		j;
	uint32_t	got[2];
	uint32_t	e;

	rb_job_init(&j, a, pi, slot);
	RB_PHASE(rb_ph_load(ws, a, &j, tid, nt));
	RB_PHASE(rb_ph_matrix(ws, a, &j, tid, nt));
	if (a->plan.votes)
	{
		RB_PHASE(if (tid == 0)
				 {
					 a->out[j.d.out] = rb_votes_score(ws, j.d.np[0]);
					 if (a->dbg)
						 a->dbg[j.d.out] = a->out[j.d.out];
				 });
		return;
	}
	e = ws->sc[RB_SC_E];
	rb_rank_pairs(ws, a, &j, e, got, nt);
	for (int s = 0; s < a->plan.nsets; s++)
		rb_relax_set(ws, a, &j, s, got[s], nt);
	RB_PHASE(if (tid == 0) rb_final(ws, a, &j));
}

#endif							/* RB_DRIVER */
