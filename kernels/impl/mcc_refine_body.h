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
 * rb_pair() (mcc_refine_driver.h, compiled only where the includer
 * defines RB_DRIVER, RB_PHASE and RB_SYNC) reads shared values only right
 * after a barrier and writes shared memory only inside phases: so it runs
 * identically as CUDA (every thread runs the driver, RB_PHASE = call,
 * then __syncthreads) and as C (one driver, RB_PHASE = loop over tid).
 *
 * The steps mirror src/core/mcc/mcc_match.c and mcc_relax.c line by line, and
 * share their arithmetic (keys, sigmoid tables, rho) through
 * src/core/mcc/mcc_relax_hd.h:
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
 *   relax     per pair set: phi_t, rho (n x n doubles, transposed, in the
 *             key buffer when it fits, else in global memory; one thread
 *             per unordered pair of pairs), n_rel synchronous
 *             iterations with each sum over k in pair order, efficiencies,
 *             the n_P best by the CPU's tie rule, their sum in rank order;
 *   final     the mean of the two relaxed scores (fused) or the one score,
 *             as float.
 */
#ifndef MCC_REFINE_BODY_H
#define MCC_REFINE_BODY_H

#include "mcc_refine_layout.h"

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

/*
 * A packed side's n cylinders (records cyl) into one side's arrays of the
 * workspace (side A's, or side B's when B is a packed side too).
 */
MCC_HD void
rb_load_side(const rb_cyl *cyl, uint32_t n, uint32_t nmax, int tid, int nt, uint64_t *bits, double *ux,
			 double *uy, int16_t *x, int16_t *y, uint16_t *pc, uint8_t *ang)
{
	for (uint32_t k = tid; k < n; k += nt)
	{
		const rb_cyl *cy = &cyl[k];

		for (int w = 0; w < 4; w++)
			bits[w * nmax + k] = cy->bits[w];
		ux[k] = cy->ux;
		uy[k] = cy->uy;
		x[k] = cy->x;
		y[k] = cy->y;
		pc[k] = cy->pc;
		ang[k] = cy->angle;
	}
}

/* Load both sides; clear the counters and flags of the pair. */
MCC_HD void
rb_ph_load(const rb_ws *ws, const rb_args *a, const rb_job *j, int tid, int nt)
{
	uint32_t	nmax = a->nmax;

	rb_load_side(&a->cyl[a->sides[j->d.a].off], j->na, nmax, tid, nt, ws->abits, ws->aux, ws->auy, ws->ax,
				 ws->ay, ws->apc, ws->aang);
	if (j->d.bside)
		rb_load_side(&a->cyl[a->sides[j->d.b].off], j->nb, nmax, tid, nt, ws->bbits, ws->bux, ws->buy,
					 ws->bx, ws->by, ws->bpc, ws->bang);
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

	uint32_t	r = (uint32_t) tid / nb;	/* entry e = r nb + c, stepped without dividing */
	uint32_t	c = (uint32_t) tid - r * nb;
	uint32_t	dr = (uint32_t) nt / nb;
	uint32_t	dc = (uint32_t) nt - dr * nb;

	for (uint32_t e = tid; e < ne; e += nt, r += dr, c += dc, r += c >= nb, c -= c >= nb ? nb : 0)
	{
		float		g = 0.0f;

		if (mcc_lss_gate(ws->aang[r], ws->bang[c], a->delta))
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
		/* (i / jj) * 2 jj + i % jj, jj a power of two */
		uint32_t	l = ((i & ~(jj - 1)) << 1) | (i & (jj - 1));
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

				ws->pr[s][got[s] + i] = (uint8_t) mcc_key_row(key);
				ws->pcc[s][got[s] + i] = (uint8_t) mcc_key_col(key);
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

/* The LGS walk: key `key` becomes pair n of set s; its row and column are used. */
MCC_HD void
rb_lgs_accept(const rb_ws *ws, int s, uint32_t n, uint64_t key)
{
	uint32_t	r = mcc_key_row(key);
	uint32_t	c = mcc_key_col(key);

	ws->used_r[r] = ws->used_c[c] = 1;
	ws->pr[s][n] = (uint8_t) r;
	ws->pcc[s][n] = (uint8_t) c;
	ws->pl0[s][n] = (double) mcc_key_gamma(key);
}

/*
 * The LGS walk of set s (pairs_lgs: greedy one-to-one in key order) over
 * the sorted round keys[0 .. m): a key whose row and column are both free
 * is taken, until the set has j->nr[s] pairs. One phase: on the GPU the
 * first warp walks 32 keys at a time (a ballot of the free lanes; the
 * lowest is taken and the lanes sharing its row or column are dropped,
 * which is the sequential greedy's order) with no block barrier; as C,
 * thread 0 walks the keys one by one.
 */
MCC_HD void
rb_ph_lgs_walk(const rb_ws *ws, const rb_job *j, int s, uint32_t m, int tid)
{
	uint32_t	n = ws->sc[RB_SC_NG0 + s];
	uint32_t	want = j->nr[s];

#ifdef __CUDA_ARCH__
	if (tid >= 32)
		return;
	for (uint32_t base = 0; base < m && n < want; base += 32)
	{
		uint32_t	i = base + (uint32_t) tid;
		uint64_t	key = i < m ? ws->keys[i] : 0;
		uint32_t	r = mcc_key_row(key);
		uint32_t	c = mcc_key_col(key);
		uint32_t	mask = __ballot_sync(0xFFFFFFFFu, i < m && !ws->used_r[r] && !ws->used_c[c]);

		while (mask != 0 && n < want)
		{
			int			w = __ffs(mask) - 1;
			uint32_t	wr = __shfl_sync(0xFFFFFFFFu, r, w);
			uint32_t	wc = __shfl_sync(0xFFFFFFFFu, c, w);

			if (tid == w)
				rb_lgs_accept(ws, s, n, key);
			n++;
			mask &= ~__ballot_sync(0xFFFFFFFFu, r == wr || c == wc);
		}
		__syncwarp();			/* the used rows and columns, for the next keys */
	}
	if (tid == 0)
		ws->sc[RB_SC_NG0 + s] = n;
#else
	if (tid != 0)
		return;
	for (uint32_t i = 0; i < m && n < want; i++)
		if (!ws->used_r[mcc_key_row(ws->keys[i])] && !ws->used_c[mcc_key_col(ws->keys[i])])
			rb_lgs_accept(ws, s, n++, ws->keys[i]);
	ws->sc[RB_SC_NG0 + s] = n;
#endif
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

/*
 * Relaxation, set s: the compatibilities, stored transposed: rho(t, k) at
 * rho[k * n + t], so that an iteration's threads (one per t) read
 * consecutive doubles at each k. Items e = d n + t for d = 0 .. n / 2:
 * d = 0 the diagonal (0.0), else the unordered pair of t and k = t + d
 * (mod n), whose shared part (mcc_rho_shared) gives both rho(t, k) and
 * rho(k, t); for even n, d = n / 2 meets each pair twice and only t < d
 * takes it. (d, t) step without dividing.
 */
MCC_HD void
rb_ph_rho(const rb_ws *ws, const rb_args *a, int s, uint32_t n, double *rho, int tid, int nt)
{
	const rb_relax *rx = &a->plan.rx[s];
	const mcc_sigmoid_tab *tab = a->tabs + 3 * rx->tab;
	uint32_t	ne = n * (n / 2 + 1);
	uint32_t	d = (uint32_t) tid / n;
	uint32_t	t = (uint32_t) tid - d * n;
	uint32_t	dd = (uint32_t) nt / n;
	uint32_t	dt = (uint32_t) nt - dd * n;

	for (uint32_t e = tid; e < ne; e += nt, d += dd, t += dt, d += t >= n, t -= t >= n ? n : 0)
	{
		uint32_t	k = t + d >= n ? t + d - n : t + d;
		uint32_t	rt;
		uint32_t	ct;
		uint32_t	rk;
		uint32_t	ck;
		mcc_rho_sym sy;

		if (d == 0)
		{
			rho[t * n + t] = 0.0;
			continue;
		}
		if (2 * d == n && t >= d)
			continue;			/* the pair of t - d and t, taken by t - d */
		rt = ws->pr[s][t];
		ct = ws->pcc[s][t];
		rk = ws->pr[s][k];
		ck = ws->pcc[s][k];
		sy = mcc_rho_shared(tab, (mcc_d1_norm) rx->d1,
							(double) ws->ax[rt], -(double) ws->ay[rt],
							(double) ws->bx[ct], -(double) ws->by[ct], ws->fx[t], ws->fy[t],
							(double) ws->ax[rk], -(double) ws->ay[rk],
							(double) ws->bx[ck], -(double) ws->by[ck], ws->fx[k], ws->fy[k]);
		rho[t * n + k] = mcc_rho_kt(tab, &sy, ws->fx[k], ws->fy[k]);
		rho[k * n + t] = mcc_rho_tk(tab, &sy, ws->fx[t], ws->fy[t]);
	}
}

/*
 * Relaxation: one synchronous iteration, lam -> nxt, each sum over k in
 * order (rho transposed: rho(t, k) at rho[k * n + t]).
 */
MCC_HD void
rb_ph_iter(const double *rho, const double *lam, double *nxt, uint32_t n, double w_r,
		   double coef, int tid, int nt)
{
	for (uint32_t t = tid; t < n; t += nt)
	{
		double		acc = 0.0;

		for (uint32_t k = 0; k < n; k++)
			acc += rho[(size_t) k * n + t] * lam[k];
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

/* the driver, once per includer that defines RB_DRIVER */
#if defined(RB_DRIVER) && !defined(MCC_REFINE_DRIVER_DONE)
#include "mcc_refine_driver.h"
#endif
