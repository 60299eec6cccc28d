/*
 * mcc_refine_driver.h: the driver of a GPU refinement block, rb_pair():
 * the phases of mcc_refine_body.h in their order, with the block barriers
 * between them. Compiled where the includer defines RB_DRIVER, RB_PHASE
 * (a phase, then a block barrier) and RB_WSTEP (a step, then a warp
 * barrier: only where every shared value a step reads was written by its
 * own warp) (kernels/impl/mcc_gpu_refine.cu as CUDA: every thread runs it;
 * test/unit/test_refine_gpu_emu.c as C: one driver, phases and steps
 * looped over tid); mcc_refine_body.h includes it then, once.
 */
#ifndef MCC_REFINE_DRIVER_DONE
#define MCC_REFINE_DRIVER_DONE

#include "mcc_refine_body.h"

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
 * Sort keys[0 .. m) in descending order (the bitonic network, padded with
 * zero keys to p = rb_pow2(m)). The steps of distance jj >= 32 exchange
 * keys across warps and each ends at a block barrier; those of distance 16
 * down to 1 stay inside aligned runs of 32 keys, which one warp owns for
 * every such step (the pairs i of a run are 16 consecutive tids of the
 * block, as nt is a multiple of 32 on the GPU), so they follow each other
 * at warp barriers (RB_WSTEP) and one block barrier closes them.
 */
RB_DRIVER void
rb_sort_round(const rb_ws *ws, uint32_t m, int nt)
{
	uint32_t	p = rb_pow2(m);
	int			warp_steps = 0;	/* since the last block barrier */

	if (p > m)
		RB_PHASE(rb_ph_pad(ws, m, p, tid, nt));
	for (uint32_t k = 2; k <= p; k <<= 1)
		for (uint32_t jj = k >> 1; jj > 0; jj >>= 1)
		{
			if (jj < 32)
			{
				RB_WSTEP(rb_ph_bitonic(ws, p, k, jj, tid, nt));
				warp_steps = 1;
				continue;
			}
			if (warp_steps)
				RB_PHASE((void) tid);
			warp_steps = 0;
			RB_PHASE(rb_ph_bitonic(ws, p, k, jj, tid, nt));
		}
	if (warp_steps)
		RB_PHASE((void) tid);
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
		rb_sort_round(ws, m, nt);
		RB_PHASE(rb_ph_consume(ws, a, j, m, got, tid, nt));
		for (int s = 0; s < a->plan.nsets; s++)
		{
			if (a->plan.kind[s] == RB_PAIRS_LSS)
				got[s] += j->nr[s] - got[s] < m ? j->nr[s] - got[s] : m;
			else if (got[s] < j->nr[s])
			{
				RB_PHASE(rb_ph_lgs_walk(ws, j, s, m, tid));
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
					 a->out[j.d.out] = mcc_lss_finish(ws->hist, j.d.np[0]);
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

#endif							/* MCC_REFINE_DRIVER_DONE */
