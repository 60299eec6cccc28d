/*
 * mcc_match.c: the local similarity matrix of two templates, the one-to-one
 * pairings (LSA, LGS) and the choice of pairs for the relaxations, and the
 * method dispatch of mcc_match.h. The relaxations are in mcc_relax.c, the
 * consolidation in mcc_consolidate.c, the assignment in mcc_assign.c.
 */
#include "mcc_match.h"

#include <string.h>

#include "mcc_clamp.h"
#include "mcc_detmath.h"
#include "mcc_match_int.h"
#include "mcc_probe_int.h"
#include "mcc_relax_hd.h"

static const char *const method_names[MCC_NMETHODS] = {
	"lss", "lss-r", "lss-dtr",
	"lsa", "lsa-r", "lsa-dtr",
	"lgs", "lgs-r", "lgs-dtr",
	"consolidation", "fused"
};

const char *
mcc_method_name(int method)
{
	if (method < 0 || method >= MCC_NMETHODS)
		return NULL;
	return method_names[method];
}

int
mcc_method_parse(const char *name, int len)
{
	for (int m = 0; m < MCC_NMETHODS; m++)
		if ((int) strlen(method_names[m]) == len &&
			memcmp(method_names[m], name, (size_t) len) == 0)
			return m;
	return -1;
}

int
mcc_refine_parse(const char *name, int len)
{
	if (len == 4 && memcmp(name, "none", 4) == 0)
		return MCC_LSS;
	if (len == 3 && memcmp(name, "dtr", 3) == 0)
		return MCC_LSS_DTR;
	return mcc_method_parse(name, len);
}

const char *
mcc_method_list(void)
{
	return "fused, lss, lss-r, lss-dtr, lsa, lsa-r, lsa-dtr, lgs, lgs-r, lgs-dtr, consolidation";
}

/* ------------------------------------------------------------------ */
/* workspace and sides                                                 */

size_t
mcc_match_work_size(void)
{
	return sizeof(mcc_match_work);
}

void
mcc_match_work_init(mcc_match_work *w)
{
	w->magic = MCC_MATCH_MAGIC;
	w->profile = NULL;
	w->have_probe = 0;
	w->have_matrix = 0;
	w->have_votes = 0;
	w->np = 0;
	w->a.n = 0;
	w->b.n = 0;
	w->npairs = 0;
	w->n_last = 0;
}

/* Position and direction of a minutia in the counter-clockwise frame. */
static void
side_geometry(match_side *s, int i, const mcc_minutia *m)
{
	s->px[i] = (double) m->x;
	s->py[i] = -(double) m->y;
	mcc_dm_sincos((double) m->theta, &s->uy[i], &s->ux[i]);
}

/*
 * Copy a template's cylinders and their minutiae's geometry into a side, in
 * the order of their minutiae; the bits word-major.
 */
static void
side_load(match_side *s, const mcc_template_view *t)
{
	int16_t		at[MCC_MAX_MINUTIAE];	/* cylinder of each minutia, -1 */
	int			k = 0;
	size_t		nbits = (size_t) t->n_cyl * t->words * 8;

	/*
	 * A gallery candidate is seldom in the cache: ask for all of its bits
	 * at once rather than one miss after another in the loop below.
	 */
	for (size_t o = 0; o < nbits; o += 64)
		__builtin_prefetch(t->bits + o);
	for (int i = 0; i < t->n_min && i < MCC_MAX_MINUTIAE; i++)
		at[i] = -1;
	for (int c = 0; c < t->n_cyl; c++)
		at[mcc_template_cyl_minutia(t, c)] = (int16_t) c;
	for (int i = 0; i < t->n_min && i < MCC_MAX_MINUTIAE; i++)
	{
		int			c = at[i];
		const uint8_t *words = t->bits + (size_t) c * t->words * 8;
		mcc_minutia m;

		if (c < 0)
			continue;
		s->mi[k] = (uint8_t) i;
		s->pc[k] = (uint16_t) mcc_template_cyl_popcount(t, c);
		s->eta[k] = mcc_lss_sqrt_tab[s->pc[k]];
		s->angle[k] = (uint8_t) mcc_template_cyl_angle(t, c);
		/* mcc_template_cyl_bits' words, read in place (one load each) */
		for (int j = 0; j < t->words; j++)
			memcpy(&s->bits[j][k], words + 8 * j, 8);
		mcc_template_minutia(t, i, &m);
		side_geometry(s, k, &m);
		k++;
	}
	s->n = k;
	/* the lanes a SIMD kernel reads past the last cylinder */
	for (int j = 0; j < t->words; j++)
		memset(&s->bits[j][k], 0, sizeof(uint64_t) * MCC_MATCH_PAD);
	memset(&s->angle[k], 0, MCC_MATCH_PAD);
	memset(&s->eta[k], 0, sizeof(uint32_t) * MCC_MATCH_PAD);
}

void
mcc_match_set_probe(mcc_match_work *w, const mcc_template_view *probe)
{
	if (w->magic != MCC_MATCH_MAGIC)
		mcc_match_work_init(w);
	mcc_lss_init();
	w->profile = probe->profile;
	side_load(&w->a, probe);
	w->have_probe = 1;
	w->have_matrix = 0;
}

/* ------------------------------------------------------------------ */
/* the local similarity matrix                                         */

/*
 * Gamma and the LSS votes of sides a and b with popcount POPCOUNT: the
 * body of the generic and POPCNT kernels below. The gate, den and vote are
 * those of mcc_lss.c (pair_vote), so the votes give mcc_lss_pair's score.
 */
#define MATRIX_BODY(w, POPCOUNT) \
	do { \
		const mcc_profile *p_ = (w)->profile; \
		const match_side *a_ = &(w)->a; \
		const match_side *b_ = &(w)->b; \
		int			vw_ = p_->words; \
		for (int r_ = 0; r_ < a_->n; r_++) \
		{ \
			float	   *row_ = (w)->gamma + (size_t) r_ * b_->n; \
			uint8_t    *vrow_ = (w)->vote + (size_t) r_ * b_->n; \
			for (int c_ = 0; c_ < b_->n; c_++) \
			{ \
				int			x_ = 0; \
				uint32_t	den_; \
				uint32_t	d_; \
				row_[c_] = 0.0f; \
				vrow_[c_] = MCC_W; \
				if (!mcc_lss_gate(a_->angle[r_], b_->angle[c_], p_->delta_theta)) \
					continue; \
				if (!p_->masks) \
				{ \
					for (int k_ = 0; k_ < vw_; k_++) \
						x_ += POPCOUNT(a_->bits[k_][r_] ^ b_->bits[k_][c_]); \
					den_ = a_->eta[r_] + b_->eta[c_]; \
				} \
				else \
				{ \
					int			pw_ = 0, pa_ = 0, pb_ = 0; \
					for (int k_ = 0; k_ < vw_; k_++) \
					{ \
						uint64_t	va_ = a_->bits[k_][r_]; \
						uint64_t	vb_ = b_->bits[k_][c_]; \
						uint64_t	m_ = a_->bits[vw_ + k_][r_] & b_->bits[vw_ + k_][c_]; \
						pw_ += POPCOUNT(m_); \
						pa_ += POPCOUNT(va_ & m_); \
						pb_ += POPCOUNT(vb_ & m_); \
						x_ += POPCOUNT((va_ ^ vb_) & m_); \
					} \
					if (pw_ < p_->min_me_cells) \
						continue; \
					den_ = mcc_lss_sqrt_tab[pa_] + mcc_lss_sqrt_tab[pb_]; \
				} \
				if (den_ == 0) \
					continue; \
				row_[c_] = 1.0f - (float) mcc_lss_sqrt_tab[x_] / (float) den_; \
				d_ = mcc_lss_dist(mcc_lss_sqrt_tab[x_], mcc_lss_rcp(den_)); \
				if (d_ < MCC_W) \
					vrow_[c_] = (uint8_t) d_; \
			} \
		} \
	} while (0)

/* The matrix with the portable popcount. */
void
mcc_matrix_generic(mcc_match_work *w)
{
	MATRIX_BODY(w, mcc_popcount64_swar);
}

/* The matrix with the POPCNT instruction. */
__attribute__((target("popcnt")))
void
mcc_matrix_popcnt(mcc_match_work *w)
{
	MATRIX_BODY(w, __builtin_popcountll);
}

/* Fill Gamma and the votes of the current sides. */
static void
compute_matrix(mcc_match_work *w)
{
	mcc_match_kernel()->matrix(w);
	w->np = mcc_lss_np(w->profile, w->a.n < w->b.n ? w->a.n : w->b.n);
	w->have_matrix = 1;
	w->have_votes = 1;
}

float
mcc_match_gamma(const mcc_match_work *w, int r, int c)
{
	if (!w->have_matrix || r < 0 || r >= w->a.n || c < 0 || c >= w->b.n)
		return 0.0f;
	return w->gamma[(size_t) r * w->b.n + c];
}

void
mcc_match_dims(const mcc_match_work *w, int *n_a, int *n_b, int *np)
{
	*n_a = w->have_matrix ? w->a.n : 0;
	*n_b = w->have_matrix ? w->b.n : 0;
	*np = w->have_matrix ? w->np : 0;
}

mcc_status
mcc_match_load(mcc_match_work *w, const mcc_profile *p,
			   int n_a, const mcc_minutia *ma, const uint16_t *pc_a,
			   int n_b, const mcc_minutia *mb, const uint16_t *pc_b,
			   const float *gamma, int np, mcc_error *err)
{
	if (w->magic != MCC_MATCH_MAGIC)
		mcc_match_work_init(w);
	mcc_lss_init();
	if (n_a < 0 || n_a > MCC_MAX_CYL || n_b < 0 || n_b > MCC_MAX_CYL)
		return mcc_error_set(err, MCC_ERR_LIMIT, "too many cylinders in a comparison"),
			mcc_error_detail(err, "The sides have %d and %d; the limit is %d.",
							 n_a, n_b, MCC_MAX_CYL);
	for (int i = 0; i < n_a * n_b; i++)
		if (!(gamma[i] >= 0.0f && gamma[i] <= 1.0f))
			return mcc_error_set(err, MCC_ERR_RANGE,
								 "local similarity %d is outside [0, 1]", i);
	w->profile = p;
	w->a.n = n_a;
	w->b.n = n_b;
	for (int i = 0; i < n_a; i++)
	{
		side_geometry(&w->a, i, &ma[i]);
		w->a.mi[i] = (uint8_t) i;
		w->a.pc[i] = pc_a ? pc_a[i] : 1;
		w->a.angle[i] = mcc_angle_to_byte(ma[i].theta);
	}
	for (int i = 0; i < n_b; i++)
	{
		side_geometry(&w->b, i, &mb[i]);
		w->b.mi[i] = (uint8_t) i;
		w->b.pc[i] = pc_b ? pc_b[i] : 1;
		w->b.angle[i] = mcc_angle_to_byte(mb[i].theta);
	}
	memcpy(w->gamma, gamma, sizeof(float) * (size_t) n_a * n_b);
	w->np = np > 0 ? np : mcc_lss_np(p, n_a < n_b ? n_a : n_b);
	w->have_probe = 1;
	w->have_matrix = 1;
	w->have_votes = 0;
	return MCC_OK;
}

/* ------------------------------------------------------------------ */
/* ranking the entries of Gamma                                        */

/* Restore the min-heap property below position i of heap h[0..n). */
static void
heap_down(uint64_t *h, int n, int i)
{
	uint64_t	v = h[i];

	for (;;)
	{
		int			c = 2 * i + 1;
		uint64_t	hc;

		if (c >= n)
			break;
		hc = h[c];
		if (c + 1 < n)
		{
			/* the smaller child without a branch: the choice is a coin toss */
			uint64_t	h1 = h[c + 1];
			int			right = h1 < hc;

			c += right;
			hc = right ? h1 : hc;
		}
		if (hc >= v)
			break;
		h[i] = hc;
		i = c;
	}
	h[i] = v;
}

/*
 * Offer a key to h, a min-heap of the (at most k) largest keys offered so
 * far, holding m; returns the new m.
 */
static inline int
heap_offer(uint64_t *h, int m, int k, uint64_t key)
{
	int			i = m;

	if (m == k)
	{
		if (key > h[0])
		{
			h[0] = key;
			heap_down(h, k, 0);
		}
		return m;
	}
	while (i > 0 && h[(i - 1) / 2] > key)
	{
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = key;
	return m + 1;
}

/*
 * Sort a min-heap of m distinct keys in place into descending order;
 * returns m. Up to 64 keys, each goes to its rank (the number of larger
 * keys): more comparisons than a heap sort, but no branch to mispredict.
 */
static int
heap_sort_desc(uint64_t *h, int m)
{
	if (m <= 64)
	{
		uint64_t	in[64];

		memcpy(in, h, sizeof(uint64_t) * (size_t) m);
		for (int i = 0; i < m; i++)
		{
			int			rank = 0;

			for (int j = 0; j < m; j++)
				rank += in[j] > in[i];
			h[rank] = in[i];
		}
		return m;
	}
	for (int j = m - 1; j > 0; j--)
	{
		uint64_t	top = h[0];

		h[0] = h[j];
		h[j] = top;
		heap_down(h, j, 0);
	}
	return m;
}

/* Bits of a float as an int32. */
static inline int32_t
float_bits(float v)
{
	int32_t		bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

int
mcc_argmax_generic(const float *v, int n, const uint64_t *set, int32_t *max)
{
	int32_t		m = 0;
	int			at = -1;

	for (int i = 0; i < n; i++)
	{
		int32_t		b = float_bits(v[i]);

		if (((set[i / 64] >> (i % 64)) & 1) && b > m)
		{
			m = b;
			at = i;
		}
	}
	*max = m;
	return at;
}

uint64_t
mcc_ge64_generic(const float *v, int n, int32_t thr)
{
	uint64_t	m = 0;

	for (int i = 0; i < n && i < 64; i++)
		m |= (uint64_t) (float_bits(v[i]) >= thr) << i;
	return m;
}

/* A set of the first n indices (n <= MCC_MAX_CYL). */
static void
set_first(uint64_t *set, int n)
{
	for (int j = 0; j < MCC_MAX_CYL / 64; j++)
		set[j] = n >= 64 * (j + 1) ? ~UINT64_C(0) : n > 64 * j ? (UINT64_C(1) << (n - 64 * j)) - 1 : 0;
}

/*
 * The keys of the k largest positive entries of Gamma, in descending order,
 * into out[0..k); returns how many (fewer if fewer are positive). Keys are
 * unique, so this is the start of the full descending order of the keys.
 * Once k keys are held, only entries whose Gamma reaches the smallest held
 * one's can enter: a kernel picks them 64 at a time.
 */
static int
entries_top(const mcc_match_work *w, int k, uint64_t *out)
{
	const match_kernel *kn = mcc_match_kernel();
	int			m = 0;

	if (k <= 0)
		return 0;
	for (int r = 0; r < w->a.n; r++)
	{
		const float *row = w->gamma + (size_t) r * w->b.n;

		for (int c0 = 0; c0 < w->b.n; c0 += 64)
		{
			uint64_t	pick = kn->ge64(row + c0, w->b.n - c0, m == k ? (int32_t) (out[0] >> 16) : 1);

			while (pick)
			{
				int			c = c0 + __builtin_ctzll(pick);

				pick &= pick - 1;
				m = heap_offer(out, m, k, mcc_entry_key(row[c], r, c));
			}
		}
	}
	return heap_sort_desc(out, m);
}

/* n_R of the relaxations: min(n_A, n_B), capped by max_nr. */
static int
relax_nr(const mcc_match_work *w, const mcc_relax_params *rp)
{
	int			nr = w->a.n < w->b.n ? w->a.n : w->b.n;

	if (rp != NULL && rp->max_nr > 0 && nr > rp->max_nr)
		nr = rp->max_nr;
	return nr;
}

/* Append pair (r, c) to the pair list. */
static void
add_pair(mcc_match_work *w, int r, int c)
{
	match_pair *p = &w->pairs[w->npairs++];

	p->r = (uint8_t) r;
	p->c = (uint8_t) c;
	p->lambda0 = w->gamma[(size_t) r * w->b.n + c];
}

/* The pair list: the entries of the n keys top (mcc_entry_key), in order. */
static void
pairs_of_keys(mcc_match_work *w, const uint64_t *top, int n)
{
	w->npairs = 0;
	for (int i = 0; i < n; i++)
	{
		int			r;
		int			c;

		mcc_key_entry(top[i], &r, &c);
		add_pair(w, r, c);
	}
}

/* LSS-R pairs: the n_R largest entries of Gamma, not one-to-one. */
static void
pairs_lss(mcc_match_work *w, int nr)
{
	uint64_t	top[MCC_MAX_CYL];

	pairs_of_keys(w, top, entries_top(w, nr, top));
}

/* Add or remove index i of a set. */
static inline void
set_add(uint64_t *set, int i)
{
	set[i / 64] |= UINT64_C(1) << (i % 64);
}

static inline void
set_del(uint64_t *set, int i)
{
	set[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

/*
 * LGS pairs: greedy one-to-one in descending Gamma (ties by smaller r, then
 * c: the order of the entry keys), at most nr. Going down the sorted
 * entries and taking each whose row and column are both free is the same as
 * taking, again and again, the largest entry whose row and column are free
 * (the first row, then the first column, holding it): the largest of the
 * rows' best free entries. Each free row keeps its best free entry (the
 * first column holding its largest value); each column the set of rows
 * whose best it is, the rows to look at again when a pair takes it.
 */
static void
pairs_lgs(mcc_match_work *w, int nr)
{
	const match_kernel *kn = mcc_match_kernel();
	int			na = w->a.n;
	int			nb = w->b.n;
	uint64_t	free_r[MCC_MAX_CYL / 64];
	uint64_t	free_c[MCC_MAX_CYL / 64];
	uint64_t	owners[MCC_MAX_CYL][MCC_MAX_CYL / 64];
	float		best[MCC_MAX_CYL];	/* each free row's best free entry */
	int			best_c[MCC_MAX_CYL];	/* and its column, -1 for none */

	set_first(free_r, na);
	set_first(free_c, nb);
	memset(owners, 0, sizeof(owners[0]) * (size_t) nb);
	for (int r = 0; r < na; r++)
	{
		int32_t		g;

		best_c[r] = kn->argmax(w->gamma + (size_t) r * nb, nb, free_c, &g);
		memcpy(&best[r], &g, sizeof(g));
		if (best_c[r] >= 0)
			set_add(owners[best_c[r]], r);
	}
	w->npairs = 0;
	while (w->npairs < nr)
	{
		int32_t		g;
		int			r = kn->argmax(best, na, free_r, &g);
		int			c;

		if (r < 0)
			break;
		c = best_c[r];
		add_pair(w, r, c);
		set_del(free_r, r);
		set_del(free_c, c);
		for (int j = 0; j < MCC_MAX_CYL / 64; j++)
		{
			uint64_t	again = owners[c][j] & free_r[j];

			while (again)
			{
				int			i = 64 * j + __builtin_ctzll(again);

				again &= again - 1;
				best_c[i] = kn->argmax(w->gamma + (size_t) i * nb, nb, free_c, &g);
				memcpy(&best[i], &g, sizeof(g));
				if (best_c[i] >= 0)
					set_add(owners[best_c[i]], i);
			}
		}
	}
}

/*
 * LSA pairs: the maximum-weight assignment on Gamma scaled to integers
 * (Gamma * 2^24, exact for Gamma >= 1/2 and rounded to the nearest integer
 * below), keeping pairs with Gamma > 0, in descending Gamma (ties by r),
 * at most nr.
 */
static void
pairs_lsa(mcc_match_work *w, int nr)
{
	int			na = w->a.n;
	int			nb = w->b.n;
	uint64_t	top[MCC_MAX_CYL];
	int			m = 0;

	for (size_t i = 0; i < (size_t) na * nb; i++)
		w->weight[i] = (int64_t) ((double) w->gamma[i] * 16777216.0 + 0.5);
	mcc_assign_max(na, nb, w->weight, w->col_of_row, w->assign_work);
	for (int r = 0; r < na; r++)
	{
		int			c = w->col_of_row[r];

		if (c >= 0 && w->gamma[(size_t) r * nb + c] > 0.0f)
			m = heap_offer(top, m, nr, mcc_entry_key(w->gamma[(size_t) r * nb + c], r, c));
	}
	pairs_of_keys(w, top, heap_sort_desc(top, m));
}

void
mcc_match_note(mcc_match_work *w, int i, int r, int c, double v)
{
	w->last_r[i] = w->a.mi[r];
	w->last_c[i] = w->b.mi[c];
	w->last_v[i] = v;
	w->n_last = i + 1;
}

/* Mean over n_P of the first n_P pairs' Gamma (LSA, LGS). */
static double
pairs_mean(mcc_match_work *w)
{
	double		sum = 0.0;
	int			k = w->npairs < w->np ? w->npairs : w->np;

	for (int i = 0; i < k; i++)
	{
		sum += w->pairs[i].lambda0;
		mcc_match_note(w, i, w->pairs[i].r, w->pairs[i].c, w->pairs[i].lambda0);
	}
	return w->np > 0 ? sum / w->np : 0.0;
}

double
mcc_match_lss(mcc_match_work *w)
{
	double		sum = 0.0;
	uint64_t   *top = w->keys;
	int			n;

	if (w->have_votes)
	{
		uint32_t	hist[MCC_W + 1] = {0};

		for (size_t i = 0; i < (size_t) w->a.n * w->b.n; i++)
			hist[w->vote[i]]++;
		return mcc_lss_finish(hist, w->np);
	}
	/* hand-made matrix: the n_P largest entries in double precision */
	n = entries_top(w, w->np, top);
	for (int i = 0; i < n; i++)
	{
		int			r;
		int			c;

		mcc_key_entry(top[i], &r, &c);
		sum += mcc_key_gamma(top[i]);
		mcc_match_note(w, i, r, c, mcc_key_gamma(top[i]));
	}
	return w->np > 0 ? sum / w->np : 0.0;
}

/* ------------------------------------------------------------------ */
/* dispatch                                                            */

/*
 * A relaxed method's score over np pairs: its pairs (n_R of them), then
 * the relaxation with the -r or the -dtr constants.
 */
static double
relaxed_score(mcc_match_work *w, mcc_method method, const mcc_match_params *mp, int np)
{
	int			dtr = method == MCC_LSS_DTR || method == MCC_LSA_DTR || method == MCC_LGS_DTR;
	const mcc_relax_params *rp = dtr ? &mp->dtr : &mp->relax;
	int			nr = relax_nr(w, rp);

	if (method == MCC_LSS_R || method == MCC_LSS_DTR)
		pairs_lss(w, nr);
	else if (method == MCC_LSA_R || method == MCC_LSA_DTR)
		pairs_lsa(w, nr);
	else
		pairs_lgs(w, nr);
	return mcc_relax_score(w, rp, mp->tab[dtr], np);
}

/*
 * The fused score: LSS-R (exactly method lss-r) and LGS-DTR as [11] defines
 * it (over its own n_P) on the same matrix, averaged. The two pick their
 * pairs differently (LSS's best entries, not one-to-one; LGS's greedy
 * one-to-one pairs) and weigh geometry differently (TPAMI's absolute
 * tolerances; [11]'s relative distance and wider angles), and their errors
 * overlap little: the mean is more accurate than either
 * (docs/accuracy.md, section 2). The last pairs reported are LGS-DTR's.
 */
static double
fused_score(mcc_match_work *w, const mcc_match_params *mp)
{
	int			m = w->a.n < w->b.n ? w->a.n : w->b.n;
	int			np[2];
	double		r;
	double		dtr;

	mcc_match_set_np(mp, MCC_FUSED, w->profile, m, np);
	r = relaxed_score(w, MCC_LSS_R, mp, np[0]);
	dtr = relaxed_score(w, MCC_LGS_DTR, mp, np[1]);
	return 0.5 * (r + dtr);
}

/*
 * n_P of a method's pair sets: what its scores average over (fused_score
 * and mcc_match_rescore take them from here, and so does the GPU port).
 */
void
mcc_match_set_np(const mcc_match_params *mp, int method, const mcc_profile *p, int m, int np[2])
{
	m = MCC_CLAMP(m, 0, MCC_MAX_CYL);
	np[0] = np[1] = mcc_lss_np(p, m);
	if (method == MCC_FUSED)
		np[1] = mp->fused_dtr_np_tab[m];	/* LGS-DTR over [11]'s n_P */
}

float
mcc_match_rescore(mcc_match_work *w, mcc_method method, const mcc_match_params *mp)
{
	double		s;

	if (!w->have_matrix)
		return 0.0f;
	if (mp == NULL)
		mp = mcc_match_params_std();
	w->n_last = 0;
	if (w->a.n == 0 || w->b.n == 0)
		return 0.0f;
	switch (method)
	{
		case MCC_LSS:
			s = mcc_match_lss(w);
			break;
		case MCC_LSA:
			pairs_lsa(w, relax_nr(w, NULL));
			s = pairs_mean(w);
			break;
		case MCC_LGS:
			pairs_lgs(w, w->np);
			s = pairs_mean(w);
			break;
		case MCC_LSS_R:
		case MCC_LSS_DTR:
		case MCC_LSA_R:
		case MCC_LSA_DTR:
		case MCC_LGS_R:
		case MCC_LGS_DTR:
			s = relaxed_score(w, method, mp, w->np);
			break;
		case MCC_CONSOLIDATION:
			s = mcc_consolidate(w, &mp->cons);
			break;
		case MCC_FUSED:
			s = fused_score(w, mp);
			break;
		default:
			s = 0.0;
			break;
	}
	return (float) s;
}

mcc_status
mcc_match_candidate(mcc_match_work *w, const mcc_template_view *cand,
					mcc_method method, const mcc_match_params *mp,
					float *score, mcc_error *err)
{
	*score = 0.0f;
	if (w->magic != MCC_MATCH_MAGIC || !w->have_probe)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "no probe set for matching");
	if ((int) method < 0 || (int) method >= MCC_NMETHODS)
		return mcc_error_set(err, MCC_ERR_VALUE, "unknown matching method %d", (int) method);
	if (mp != NULL && !mp->prepared)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "matching parameters are not prepared");
	if (cand->profile != w->profile)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "cannot compare templates of different profiles"),
			mcc_error_detail(err, "The templates use profiles \"%s\" and \"%s\".",
							 w->profile->name, cand->profile->name);
	side_load(&w->b, cand);
	compute_matrix(w);
	*score = mcc_match_rescore(w, method, mp);
	return MCC_OK;
}

mcc_status
mcc_match_pair(mcc_match_work *w, const mcc_template_view *a,
			   const mcc_template_view *b, mcc_method method,
			   const mcc_match_params *mp, float *score, mcc_error *err)
{
	mcc_match_set_probe(w, a);
	return mcc_match_candidate(w, b, method, mp, score, err);
}

int
mcc_match_last_pairs(const mcc_match_work *w, int *r, int *c, double *value, int max)
{
	int			n = w->n_last < max ? w->n_last : max;

	for (int i = 0; i < n; i++)
	{
		r[i] = w->last_r[i];
		c[i] = w->last_c[i];
		value[i] = w->last_v[i];
	}
	return w->n_last;
}

int64_t
mcc_refine_count(int64_t n, double fraction, int64_t min_count, int64_t k)
{
	double		f = fraction > 0.0 ? fraction * (double) n : 0.0;
	int64_t		m = f >= (double) n ? n : (int64_t) f;

	if ((double) m < f)
		m++;					/* ceil */
	if (k > min_count)
		min_count = k;			/* k at least, too */
	m = MCC_CLAMP(m, min_count, n);	/* n wins: no more rows than there are */
	return m < 0 ? 0 : m;
}
