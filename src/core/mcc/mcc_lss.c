/*
 * mcc_lss.c: Local Similarity Sort, the fixed-point arithmetic of mcc_lss.h
 * (paper 000, Fig. 3), the prepared probe, and the floating-point reference
 * of paper 000, Fig. 2.
 */
#include "mcc_lss.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_clamp.h"
#include "mcc_cmp.h"
#include "mcc_probe_int.h"

uint32_t	mcc_lss_sqrt_tab[MCC_MAX_BITS + 1];

/* LUT_p per profile id (ids are small), for min(n_A, n_B) = 0..MaxC. */
#define MAX_PROFILE_ID 8
static uint8_t np_tab[MAX_PROFILE_ID][MCC_MAX_CYL + 1];
static int	lss_ready = 0;		/* set with release once the tables are full */

/* n_p of paper 000 eq. 2, in double precision, for the tables. */
static int
np_formula(const mcc_profile *p, int v)
{
	double		z = 1.0 / (1.0 + exp(-p->tau_p * (v - p->mu_p)));

	return p->min_np + (int) lround((p->max_np - p->min_np) * z);
}

/* Fill LUT_sqrt and LUT_p; idempotent, call once before threads start. */
void
mcc_lss_init(void)
{
	if (__atomic_load_n(&lss_ready, __ATOMIC_ACQUIRE))
		return;
	/* sqrt(p) is irrational or an integer, so rounding never meets a tie */
	for (int i = 0; i <= MCC_MAX_BITS; i++)
		mcc_lss_sqrt_tab[i] = (uint32_t) lround(sqrt((double) i) * (1 << MCC_SQRT_SHIFT));
	for (int id = 0; id < MAX_PROFILE_ID; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);

		for (int v = 0; p != NULL && v <= MCC_MAX_CYL; v++)
			np_tab[id][v] = (uint8_t) np_formula(p, v);
	}
	__atomic_store_n(&lss_ready, 1, __ATOMIC_RELEASE);
}

/* LUT_sqrt[popcount], 0 outside 0..MCC_MAX_BITS. */
uint32_t
mcc_lss_sqrt_fx(int popcount)
{
	if (popcount < 0 || popcount > MCC_MAX_BITS)
		return 0;
	return mcc_lss_sqrt_tab[popcount];
}

/* LUT_p[min(n_A, n_B)] of profile p, the count clamped to 0..MaxC. */
int
mcc_lss_np(const mcc_profile *p, int min_cyl)
{
	min_cyl = MCC_CLAMP(min_cyl, 0, MCC_MAX_CYL);
	if (p->id >= MAX_PROFILE_ID)
		return np_formula(p, min_cyl);
	return np_tab[p->id][min_cyl];
}

/* ------------------------------------------------------------------ */
/* the prepared probe                                                  */

/* Bytes to allocate for a prepared probe (fixed, about 730 kB). */
size_t
mcc_probe_size(void)
{
	return sizeof(mcc_probe);
}

/*
 * LUT_theta as runs: for every byte angle, the probe cylinders that pass the
 * gate. They are sorted by angle, so the passing ones are one cyclic run of
 * the sorted order; find where it starts.
 */
static void
probe_lut_theta(mcc_probe *q)
{
	int			n = q->n;
	int			dt = q->profile->delta_theta;

	for (int a = 0; a < MCC_Z; a++)
	{
		int			count = 0;
		int			start = 0;

		for (int i = 0; i < n; i++)
			count += mcc_lss_gate(q->angle[i], a, dt);
		if (count > 0 && count < n)
			for (int i = 0; i < n; i++)
				if (mcc_lss_gate(q->angle[i], a, dt) &&
					!mcc_lss_gate(q->angle[(i + n - 1) % n], a, dt))
				{
					start = i;
					break;
				}
		q->lt_start[a] = (uint16_t) start;
		q->lt_count[a] = (uint16_t) count;
	}
}

/* Order probe cylinder indices by angle, ties by stored order (insertion sort). */
static void
probe_order(const mcc_template_view *t, int *order)
{
	for (int c = 0; c < t->n_cyl; c++)
	{
		int			a = mcc_template_cyl_angle(t, c);
		int			i = c;

		while (i > 0 && mcc_template_cyl_angle(t, order[i - 1]) > a)
		{
			order[i] = order[i - 1];
			i--;
		}
		order[i] = c;
	}
}

/* Prepare probe q from an opened template (tables described in mcc_probe_int.h). */
void
mcc_probe_init(mcc_probe *q, const mcc_template_view *t)
{
	const mcc_profile *p = t->profile;
	int			order[MCC_MAX_CYL];
	int			n = t->n_cyl;

	mcc_lss_init();
	q->profile = p;
	q->n = n;
	q->vwords = p->words;
	q->cwords = mcc_profile_cyl_words(p);
	q->zero_pc = 0;
	probe_order(t, order);
	for (int i = 0; i < n; i++)
	{
		int			c = order[i];

		q->angle[i] = (uint8_t) mcc_template_cyl_angle(t, c);
		q->pc[i] = (uint16_t) mcc_template_cyl_popcount(t, c);
		q->eta[i] = mcc_lss_sqrt_tab[q->pc[i]];
		q->zero_pc |= q->pc[i] == 0;
		mcc_template_cyl_bits(t, c, q->bits[i]);
	}
	/* the doubled order, plus zeroed lanes that SIMD loads may read */
	for (int l = n; l < 2 * n; l++)
	{
		q->pc[l] = q->pc[l - n];
		q->eta[l] = q->eta[l - n];
		memcpy(q->bits[l], q->bits[l - n], sizeof(uint64_t) * q->cwords);
	}
	for (int l = 2 * n; l < 2 * n + 16; l++)
	{
		q->pc[l] = 0;
		q->eta[l] = 0;
	}
	probe_lut_theta(q);
	for (int m = 0; m <= MCC_MAX_CYL; m++)
		q->np[m] = (uint8_t) mcc_lss_np(p, m < n ? m : n);

	q->rcp_stride = 0;
	if (p->masks || p->nbits >= MCC_PROBE_RCP_ROWS || p->words > 4)
		return;
	for (int w = 0; w < 4; w++)
		for (int l = 0; l < 2 * n + 16; l++)
			q->soa[w][l] = (l < 2 * n && w < p->words) ? q->bits[l][w] : 0;
	q->rcp_stride = (2 * n + 8 + 15) & ~15;
	for (int pc = 0; pc <= p->nbits; pc++)
	{
		uint32_t   *row = q->rcp + (size_t) pc * q->rcp_stride;

		for (int l = 0; l < n; l++)
			row[l] = mcc_lss_rcp(q->eta[l] + mcc_lss_sqrt_tab[pc]);
		memcpy(row + n, row, sizeof(uint32_t) * n);		/* the doubled order */
		memset(row + 2 * n, 0, sizeof(uint32_t) * (q->rcp_stride - 2 * n));
	}
}

/* The profile of a prepared probe. */
const mcc_profile *
mcc_probe_profile(const mcc_probe *q)
{
	return q->profile;
}

/* The number of cylinders of a prepared probe. */
int
mcc_probe_cylinders(const mcc_probe *q)
{
	return q->n;
}

/* LSS of a prepared probe against one template, by the generic vote loop. */
float
mcc_lss_score(const mcc_probe *q, const mcc_template_view *t)
{
	uint32_t	hist[MCC_HIST_LEN] = {0};

	if (q->n == 0 || t->n_cyl == 0 || t->profile != q->profile)
		return 0.0f;
	for (int c = 0; c < t->n_cyl; c++)
	{
		uint64_t	g[2 * MCC_MAX_WORDS];
		int			pc = mcc_template_cyl_popcount(t, c);
		int			a = mcc_template_cyl_angle(t, c);

		mcc_template_cyl_bits(t, c, g);
		MCC_VOTES_GENERIC(q, g, pc, a, hist, mcc_popcount64_swar);
	}
	return mcc_lss_finish(hist, q->np[t->n_cyl]);
}

/* ------------------------------------------------------------------ */
/* 1:1 without a prepared probe                                        */

/* One vote of the fixed-point arithmetic, or -1 for none (gate already passed). */
static int
pair_vote(const mcc_profile *p, const uint64_t *a, const uint64_t *b)
{
	int			vw = p->words;
	int			x = 0;
	uint32_t	den;
	uint32_t	d;

	if (!p->masks)
	{
		int			pa = 0;
		int			pb = 0;

		for (int w = 0; w < vw; w++)
		{
			pa += mcc_popcount64_swar(a[w]);
			pb += mcc_popcount64_swar(b[w]);
			x += mcc_popcount64_swar(a[w] ^ b[w]);
		}
		den = mcc_lss_sqrt_tab[pa] + mcc_lss_sqrt_tab[pb];
	}
	else
	{
		int			pw = 0;
		int			pa = 0;
		int			pb = 0;

		for (int w = 0; w < vw; w++)
		{
			uint64_t	m = a[vw + w] & b[vw + w];

			pw += mcc_popcount64_swar(m);
			pa += mcc_popcount64_swar(a[w] & m);
			pb += mcc_popcount64_swar(b[w] & m);
			x += mcc_popcount64_swar((a[w] ^ b[w]) & m);
		}
		if (pw < p->min_me_cells)
			return -1;
		den = mcc_lss_sqrt_tab[pa] + mcc_lss_sqrt_tab[pb];
	}
	if (den == 0)
		return -1;
	d = mcc_lss_dist(mcc_lss_sqrt_tab[x], mcc_lss_rcp(den));
	return d < MCC_W ? (int) d : -1;
}

/* 1:1 LSS straight from two views, no prepared probe. */
mcc_status
mcc_lss_pair(const mcc_template_view *a, const mcc_template_view *b,
			 float *score, mcc_error *err)
{
	const mcc_profile *p = a->profile;
	uint32_t	hist[MCC_HIST_LEN] = {0};
	uint64_t	(*bb)[2 * MCC_MAX_WORDS];

	*score = 0.0f;
	if (a->profile != b->profile)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "cannot compare templates of different profiles"),
			mcc_error_detail(err, "The templates use profiles \"%s\" and \"%s\".",
							 a->profile->name, b->profile->name);
	if (a->n_cyl == 0 || b->n_cyl == 0)
		return MCC_OK;
	mcc_lss_init();
	bb = malloc(sizeof(*bb) * b->n_cyl);
	if (bb == NULL)
		return mcc_error_set(err, MCC_ERR_MEMORY, "out of memory");
	for (int j = 0; j < b->n_cyl; j++)
		mcc_template_cyl_bits(b, j, bb[j]);
	for (int i = 0; i < a->n_cyl; i++)
	{
		uint64_t	va[2 * MCC_MAX_WORDS];
		int			qa = mcc_template_cyl_angle(a, i);

		mcc_template_cyl_bits(a, i, va);
		for (int j = 0; j < b->n_cyl; j++)
		{
			int			d;

			if (!mcc_lss_gate(qa, mcc_template_cyl_angle(b, j), p->delta_theta))
				continue;
			d = pair_vote(p, va, bb[j]);
			if (d >= 0)
				hist[d]++;
		}
	}
	free(bb);
	*score = mcc_lss_finish(hist, mcc_lss_np(p, a->n_cyl < b->n_cyl ? a->n_cyl : b->n_cyl));
	return MCC_OK;
}

/* ------------------------------------------------------------------ */
/* floating-point reference                                            */

/*
 * Local similarity in double precision, or -1 if not matchable: paper 000
 * eq. 1 without masks, the TPAMI bit form (mcc-spec §4.2) with them.
 */
static double
float_similarity(const mcc_profile *p, const uint64_t *a, const uint64_t *b)
{
	int			vw = p->words;
	int			pa = 0;
	int			pb = 0;
	int			px = 0;
	int			pw = 0;
	double		den;

	for (int w = 0; w < vw; w++)
	{
		uint64_t	m = p->masks ? a[vw + w] & b[vw + w] : ~UINT64_C(0);

		pw += __builtin_popcountll(m);
		pa += __builtin_popcountll(a[w] & m);
		pb += __builtin_popcountll(b[w] & m);
		px += __builtin_popcountll((a[w] ^ b[w]) & m);
	}
	if (p->masks && pw < p->min_me * p->nbits)
		return -1.0;
	den = sqrt((double) pa) + sqrt((double) pb);
	if (den == 0.0)
		return -1.0;
	return 1.0 - sqrt((double) px) / den;
}

/* Paper 000 Fig. 2 in double precision: the test reference. */
double
mcc_lss_float(const mcc_template_view *a, const mcc_template_view *b)
{
	const mcc_profile *p = a->profile;
	double	   *list;
	int			nl = 0;
	int			np;
	double		sum = 0.0;
	int			mn = a->n_cyl < b->n_cyl ? a->n_cyl : b->n_cyl;

	if (a->profile != b->profile || mn == 0)
		return 0.0;
	list = malloc(sizeof(double) * (size_t) a->n_cyl * b->n_cyl);
	if (list == NULL)
		return -1.0;
	for (int i = 0; i < a->n_cyl; i++)
	{
		uint64_t	va[2 * MCC_MAX_WORDS];

		mcc_template_cyl_bits(a, i, va);
		for (int j = 0; j < b->n_cyl; j++)
		{
			uint64_t	vb[2 * MCC_MAX_WORDS];
			double		s;

			if (!mcc_lss_gate(mcc_template_cyl_angle(a, i),
							  mcc_template_cyl_angle(b, j), p->delta_theta))
				continue;
			mcc_template_cyl_bits(b, j, vb);
			s = float_similarity(p, va, vb);
			if (s >= 0.0)
				list[nl++] = s;
		}
	}
	qsort(list, nl, sizeof(double), mcc_cmp_double_desc);
	np = p->min_np + (int) lround((p->max_np - p->min_np) /
								  (1.0 + exp(-p->tau_p * (mn - p->mu_p))));
	for (int i = 0; i < np && i < nl; i++)
		sum += list[i];
	free(list);
	return sum / np;
}
