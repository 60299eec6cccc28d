/*
 * mcc_relax.c: the relaxation of TPAMI 2010 (mcc-spec §5.5) and its
 * distortion-tolerant variant of [11] (§5.6), the sigmoid tables, and the
 * matching parameters.
 *
 * For candidate pairs t = (a_t, b_t) and k, the compatibility is
 * rho(t, k) = Z(d1) Z(d2) Z(d3) with
 *   d1 = |dA - dB|, or divided by the sum or the mean of dA and dB (DTR),
 *        dA = |a_k - a_t|, dB = |b_k - b_t|;
 *   d2 = |dphi(dphi(theta_a_t, theta_a_k), dphi(theta_b_t, theta_b_k))|;
 *   d3 = |dphi(d_R(a_t, a_k), d_R(b_t, b_k))|, d_R(m1, m2) the angle from
 *        m1's direction to the segment m1 -> m2 (0 for a segment of length
 *        0, as atan2(0, 0) = 0).
 * Both angle terms are rotations, so they are computed as complex products
 * of unit vectors, without atan2: with phi_t = u(a_t) conj(u(b_t)),
 *   d2 = |arg(phi_t conj(phi_k))|,
 *   d3 = |arg(phi_t conj(a_k - a_t) (b_k - b_t))|,
 * and the sigmoid of an angle d is tabulated against sin(d / 2) =
 * sqrt((1 - cos d) / 2), which needs only the real part (linear
 * interpolation; the tables are accurate to about 1e-5). Then, synchronously,
 *   lambda_i(t) = w_R lambda_{i-1}(t)
 *                 + (1 - w_R) / (n_R - 1) sum_{k != t} rho(t, k) lambda_{i-1}(k)
 * for n_rel iterations; the n_P pairs of largest efficiency
 * lambda_final / lambda_0 (ties by pair order) give the score, the mean of
 * their lambda_final over n_P.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "mcc_match_int.h"
#include "mcc_relax_hd.h"

#define PI 3.14159265358979323846

double
mcc_sigmoid(double v, double mu, double tau)
{
	return 1.0 / (1.0 + exp(-tau * (v - mu)));
}

/* Tabulate Z(f(x); mu, tau) for x in [0, hi], f = identity or 2 asin. */
static void
tab_build(mcc_sigmoid_tab *t, double hi, double mu, double tau, int angular)
{
	t->hi = hi;
	t->scale = MCC_SIG_SEGS / hi;
	for (int i = 0; i <= MCC_SIG_SEGS + 1; i++)
	{
		double		x = (i > MCC_SIG_SEGS ? MCC_SIG_SEGS : i) * (hi / MCC_SIG_SEGS);
		double		v = angular ? 2.0 * asin(x > 1.0 ? 1.0 : x) : x;

		t->z[i] = (float) mcc_sigmoid(v, mu, tau);
	}
}

/* Table range of the distance term. */
static double
d1_range(const mcc_relax_params *rp)
{
	double		at = fabs(rp->tau[0]);

	if (rp->d1 == MCC_D1_SUM)
		return 1.0;
	if (rp->d1 == MCC_D1_MEAN)
		return 2.0;
	/* pixels: up to where the sigmoid has settled to e^-40 of its limit */
	return (rp->mu[0] > 0.0 ? rp->mu[0] : 0.0) + 40.0 / (at > 1e-6 ? at : 1e-6);
}

void
mcc_match_params_prepare(mcc_match_params *mp)
{
	const mcc_relax_params *sets[2] = {&mp->relax, &mp->dtr};

	for (int s = 0; s < 2; s++)
	{
		const mcc_relax_params *rp = sets[s];

		tab_build(&mp->tab[s][0], d1_range(rp), rp->mu[0], rp->tau[0], 0);
		tab_build(&mp->tab[s][1], 1.0, rp->mu[1], rp->tau[1], 1);
		tab_build(&mp->tab[s][2], 1.0, rp->mu[2], rp->tau[2], 1);
	}
	for (int v = 0; v <= MCC_MAX_CYL; v++)
	{
		const mcc_np_params *q = &mp->fused_dtr_np;

		mp->fused_dtr_np_tab[v] = (uint8_t) (q->min_np +
											 lround((q->max_np - q->min_np) *
													mcc_sigmoid(v, q->mu_p, q->tau_p)));
	}
	mp->prepared = 1;
}

void
mcc_match_params_default(mcc_match_params *mp)
{
	memset(mp, 0, sizeof(*mp));
	/* TPAMI 2010 (mcc-spec §2, first column); mu and tau of d1, d2, d3 */
	mp->relax = (mcc_relax_params) {
		.w_r = 0.5, .n_rel = 5,
		.mu = {5.0, PI / 12.0, PI / 12.0}, .tau = {-8.0 / 5.0, -30.0, -30.0},
		.d1 = MCC_D1_ABS, .max_nr = -1
	};
	/* [11], the ICARCV 2010 / FVC-onGoing set (mcc-spec §5.6) */
	mp->dtr = (mcc_relax_params) {
		.w_r = 0.3, .n_rel = 3,
		.mu = {1.0 / 30.0, PI / 4.0, PI / 18.0}, .tau = {-150.0, -15.0, -40.0},
		.d1 = MCC_D1_SUM, .max_nr = -1
	};
	/* the fused method's LGS-DTR averages over [11]'s n_P (mcc-spec §2) */
	mp->fused_dtr_np = (mcc_np_params) {3, 10, 30.0, 0.4};
	/* paper 001, Sec. 5.1.1 and 6 */
	mp->cons.n_sel = 32;
	mp->cons.t_s = 12.0;
	mp->cons.t_theta = PI / 6.0;
	mp->cons.score = MCC_CONS_SIM;	/* docs/accuracy.md: better than the count */
	mcc_match_params_prepare(mp);
}

static mcc_match_params std_params;
static pthread_once_t std_once = PTHREAD_ONCE_INIT;

/* Build the shared default parameters. */
static void
std_build(void)
{
	mcc_match_params_default(&std_params);
}

const mcc_match_params *
mcc_match_params_std(void)
{
	pthread_once(&std_once, std_build);
	return &std_params;
}

double
mcc_relax_term(const mcc_match_params *mp, int set, int term, double v)
{
	const mcc_sigmoid_tab *t = &mp->tab[set ? 1 : 0][term];

	if (term == 0)
		return mcc_tab_get(t, v < 0.0 ? 0.0 : v);
	return mcc_tab_get(t, fabs(sin(0.5 * v)));
}

/*
 * The scalar kernel: rho into w->rho (rho[t][k]), both triangles from one
 * shared part per pair t < k (mcc_rho_shared: the bits of mcc_rho() both
 * ways, a third less time than each entry on its own), then the
 * iterations; every SIMD kernel reproduces these operations lane by lane.
 */
double *
mcc_relax_generic(mcc_match_work *w, const relax_pairs *rx,
				  const mcc_relax_params *rp, const mcc_sigmoid_tab *tab)
{
	int			n = rx->n;
	const double *ax = rx->ax;
	const double *ay = rx->ay;
	const double *bx = rx->bx;
	const double *by = rx->by;
	const double *fx = rx->fx;
	const double *fy = rx->fy;
	double	   *lam = w->lam[0];
	double	   *nxt = w->lam[1];
	double		coef = (1.0 - rp->w_r) / (double) (n - 1);

	for (int t = 0; t < n; t++)
	{
		w->rho[(size_t) t * n + t] = 0.0;
		for (int k = t + 1; k < n; k++)
		{
			mcc_rho_sym s = mcc_rho_shared(tab, rp->d1, ax[t], ay[t], bx[t], by[t], fx[t], fy[t],
										   ax[k], ay[k], bx[k], by[k], fx[k], fy[k]);

			w->rho[(size_t) t * n + k] = mcc_rho_tk(tab, &s, fx[t], fy[t]);
			w->rho[(size_t) k * n + t] = mcc_rho_kt(tab, &s, fx[k], fy[k]);
		}
	}
	for (int it = 0; it < rp->n_rel; it++)
	{
		double	   *tmp;

		for (int t = 0; t < n; t++)
		{
			const double *row = w->rho + (size_t) t * n;
			double		acc = 0.0;

			for (int k = 0; k < n; k++)
				acc += row[k] * lam[k];
			nxt[t] = rp->w_r * lam[t] + coef * acc;
		}
		tmp = lam;
		lam = nxt;
		nxt = tmp;
	}
	return lam;
}

double
mcc_relax_score(mcc_match_work *w, const mcc_relax_params *rp,
				const mcc_sigmoid_tab *tab, int np)
{
	int			n = w->npairs;
	relax_pairs rx;
	double	   *lam = w->lam[0];
	double		eff[MCC_MAX_CYL];
	int			best[MCC_MAX_CYL];
	int			nbest = 0;
	double		sum = 0.0;

	if (n == 0 || np <= 0)
		return 0.0;
	rx.n = n;
	for (int t = 0; t < n; t++)
	{
		int			r = w->pairs[t].r;
		int			c = w->pairs[t].c;

		rx.ax[t] = w->a.px[r];
		rx.ay[t] = w->a.py[r];
		rx.bx[t] = w->b.px[c];
		rx.by[t] = w->b.py[c];
		rx.fx[t] = w->a.ux[r] * w->b.ux[c] + w->a.uy[r] * w->b.uy[c];
		rx.fy[t] = w->a.uy[r] * w->b.ux[c] - w->a.ux[r] * w->b.uy[c];
		lam[t] = w->pairs[t].lambda0;
	}
	for (int t = n; t < n + MCC_MATCH_PAD; t++)
	{
		rx.ax[t] = rx.ay[t] = rx.bx[t] = rx.by[t] = rx.fx[t] = rx.fy[t] = 0.0;
		if (t < MCC_MAX_CYL)
			lam[t] = 0.0;
	}
	if (n > 1)
		lam = mcc_match_kernel()->relax(w, &rx, rp, tab);

	/* the n_P pairs of largest efficiency, ties by pair order */
	for (int t = 0; t < n; t++)
	{
		int			pos = nbest;

		eff[t] = lam[t] / w->pairs[t].lambda0;
		while (pos > 0 && eff[best[pos - 1]] < eff[t])
			pos--;
		if (pos >= np)
			continue;
		if (nbest < np)
			nbest++;
		for (int i = nbest - 1; i > pos; i--)
			best[i] = best[i - 1];
		best[pos] = t;
	}
	for (int i = 0; i < nbest; i++)
	{
		sum += lam[best[i]];
		mcc_match_note(w, i, w->pairs[best[i]].r, w->pairs[best[i]].c, lam[best[i]]);
	}
	return sum / np;
}
