/*
 * mcc_consolidate.c: the consolidation stage of paper 001 (Le, Nguyen,
 * Nguyen 2017), Sec. 5.1.1, 5.2 and Algorithm 3, and its 32-cylinder
 * selection.
 *
 * Selection: all minutiae build cylinders; then each side keeps the n_sel
 * (32) cylinders with the most set bits (ties: the smaller minutia index;
 * sides hold their cylinders in minutia order, mcc_match_int.h).
 *
 * Algorithm 3 with A the query (probe) and B the database template:
 *   lines 5-14: for each kept cylinder t of B, over the kept cylinders k
 *     of A that pass the angular gate, in the order of their minutiae,
 *     maxValue[t] = max(maxValue[t], sim(t, k)) and maxIndex[t] = k when
 *     sim equals the new maximum (so ties go to the later k; maxValue
 *     starts at 0; no gated k leaves t without a match);
 *   lines 16-21: maxMatching[t] = the number of other kept t' of B
 *     (with a match) such that the pair (t, t') of B matches the pair
 *     (maxIndex[t], maxIndex[t']) of A: align B on A by the rigid motion
 *     taking minutia t onto maxIndex[t] (rotation by the difference of
 *     their directions), then t' must land within t_s pixels of
 *     maxIndex[t'] with a direction within t_theta of it (Sec. 5.2);
 *   lines 23-25: the score is max over t of maxMatching[t], divided by 32.
 * mcc_cons_score selects that formula or a measured variant
 * (docs/accuracy.md).
 */
#include <stdbool.h>

#include "mcc_detmath.h"
#include "mcc_match_int.h"

int
mcc_select_by_popcount(int n, const uint16_t *popcount, int n_sel, int *sel)
{
	int			k = 0;

	for (int i = 0; i < n; i++)
	{
		int			rank = 0;

		/* how many cylinders come before i in (popcount desc, index asc) */
		for (int j = 0; j < n && rank < n_sel; j++)
			if (popcount[j] > popcount[i] || (popcount[j] == popcount[i] && j < i))
				rank++;
		if (rank < n_sel)
			sel[k++] = i;
	}
	return k;
}

/*
 * Does the pair (i, mi) agree with the reference pair (t, m)? B's minutia i
 * is moved by the rigid motion that takes b_t onto a_m (rotation (rx, ry) =
 * u(a_m) conj(u(b_t))); it must land within t_s of a_mi (ts2 = t_s^2) with
 * a direction whose cosine to a_mi's is at least cos_t.
 */
static bool
consistent(const match_side *a, const match_side *b, int m, int t, int mi, int i,
		   double rx, double ry, double ts2, double cos_t)
{
	double		dx = b->px[i] - b->px[t];
	double		dy = b->py[i] - b->py[t];
	double		ex = a->px[m] + (rx * dx - ry * dy) - a->px[mi];
	double		ey = a->py[m] + (ry * dx + rx * dy) - a->py[mi];
	double		vx;
	double		vy;

	if (ex * ex + ey * ey > ts2)
		return false;
	vx = b->ux[i] * rx - b->uy[i] * ry;
	vy = b->ux[i] * ry + b->uy[i] * rx;
	return vx * a->ux[mi] + vy * a->uy[mi] >= cos_t;
}

double
mcc_consolidate(mcc_match_work *w, const mcc_cons_params *cp)
{
	const match_side *a = &w->a;
	const match_side *b = &w->b;
	int			sel_a[MCC_MAX_CYL];
	int			sel_b[MCC_MAX_CYL];
	int			best[MCC_MAX_CYL];	/* maxIndex, by position in sel_b */
	double		bestv[MCC_MAX_CYL];	/* maxValue */
	int			na;
	int			nb;
	int			n_sel = cp->n_sel > 0 ? cp->n_sel : 1;
	double		ts2 = cp->t_s * cp->t_s;
	double		cos_t = mcc_dm_cos(cp->t_theta);
	int			max_count = -1;
	int			ref = -1;		/* the reference with the largest count */
	int			ref_sim = -1;	/* the one with the largest similarity sum */
	double		max_sim = -1.0;
	double		score;

	na = mcc_select_by_popcount(a->n, a->pc, n_sel, sel_a);
	nb = mcc_select_by_popcount(b->n, b->pc, n_sel, sel_b);

	/* local matching: the best query cylinder of each database cylinder */
	for (int ti = 0; ti < nb; ti++)
	{
		int			t = sel_b[ti];

		best[ti] = -1;
		bestv[ti] = 0.0;
		for (int ki = 0; ki < na; ki++)
		{
			int			k = sel_a[ki];
			double		s;

			if (!mcc_lss_gate(a->angle[k], b->angle[t], w->profile->delta_theta))
				continue;
			s = w->gamma[(size_t) k * b->n + t];
			if (s >= bestv[ti])
			{
				bestv[ti] = s;
				best[ti] = k;
			}
		}
	}

	/* consolidation: pairs consistent with each reference pair */
	for (int ti = 0; ti < nb; ti++)
	{
		int			t = sel_b[ti];
		int			m = best[ti];
		double		rx;
		double		ry;
		int			count = 0;
		double		sim;

		if (m < 0)
			continue;
		/* rotation taking B's frame onto A's: u(a_m) conj(u(b_t)) */
		rx = a->ux[m] * b->ux[t] + a->uy[m] * b->uy[t];
		ry = a->uy[m] * b->ux[t] - a->ux[m] * b->uy[t];
		sim = bestv[ti];
		for (int ii = 0; ii < nb; ii++)
		{
			if (ii == ti || best[ii] < 0 ||
				!consistent(a, b, m, t, best[ii], sel_b[ii], rx, ry, ts2, cos_t))
				continue;
			count++;
			sim += bestv[ii];
		}
		if (count > max_count)
		{
			max_count = count;
			ref = ti;
		}
		if (sim > max_sim)
		{
			max_sim = sim;
			ref_sim = ti;
		}
	}
	if (ref < 0)
		return 0.0;

	switch (cp->score)
	{
		case MCC_CONS_SIM:
			score = max_sim / n_sel;
			ref = ref_sim;
			break;
		case MCC_CONS_COUNT_LSS:
			score = (max_count + mcc_match_lss(w)) / n_sel;
			break;
		default:
			score = (double) max_count / n_sel;
			break;
	}

	/* report the reference pair and the pairs consistent with it */
	{
		int			t = sel_b[ref];
		int			m = best[ref];
		double		rx = a->ux[m] * b->ux[t] + a->uy[m] * b->uy[t];
		double		ry = a->uy[m] * b->ux[t] - a->ux[m] * b->uy[t];
		int			k = 0;

		mcc_match_note(w, k++, m, t, bestv[ref]);
		for (int ii = 0; ii < nb; ii++)
			if (ii != ref && best[ii] >= 0 &&
				consistent(a, b, m, t, best[ii], sel_b[ii], rx, ry, ts2, cos_t))
				mcc_match_note(w, k++, best[ii], sel_b[ii], bestv[ii]);
	}
	return score;
}
