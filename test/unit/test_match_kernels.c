/*
 * test_match_kernels.c: the CPU kernels of the comparisons (mcc_match.h:
 * "avx512", "avx2", "popcnt", "generic", forced in turn with
 * mcc_match_set_kernel) give the same bits as the scalar code: every
 * method's score, every entry of Gamma and the pairs each score used, on
 * thousands of synthetic pairs of both profiles (templates from minutiae,
 * some with more than 64 cylinders or with minutiae on the same spot, and
 * from random cylinders, some of them empty), under every rounding mode, and
 * on the real FVC2002 records (DB1_B, skipped when ../shared/data is
 * absent: 1,560 pairs of each of two encodings). The pair rankings (LSS's n_R largest entries, LGS's greedy
 * pairs) are checked against a plain sort of the entries on hand-made
 * matrices full of ties.
 */
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testfvc.h"
#include "testgen.h"
#include "../tools/record_file.h"
#include "mcc_iso.h"
#include "mcc_match.h"
#include "mcc_xyt.h"

static const char *const kernel_names[] = {"avx512", "avx2", "popcnt"};

#define NKERNELS ((int) (sizeof(kernel_names) / sizeof(kernel_names[0])))

/* What a comparison gives, reduced to bits. */
typedef struct outcome
{
	uint32_t	score[MCC_NMETHODS];
	uint64_t	pairs[MCC_NMETHODS];	/* hash of mcc_match_last_pairs */
	uint64_t	gamma;			/* hash of the matrix */
} outcome;

/* A list of templates and the pairs (i, j) to compare. */
typedef struct pair_set
{
	const char *name;
	int			n;
	mcc_template_view v[128];
	uint8_t    *blob[128];
	int			npairs;
	int		   *pi;
	int		   *pj;
} pair_set;

static mcc_match_work *w;

/* FNV-1a over bytes, continuing from h. */
static uint64_t
hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
	{
		h ^= b[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* Every method of one pair: the matrix by mcc_match_pair, then each method. */
static void
compare(const mcc_template_view *a, const mcc_template_view *b, int first, outcome *o)
{
	float		s;
	mcc_error	err;
	int			na;
	int			nb;
	int			np;

	memset(o, 0, sizeof(*o));
	mcc_match_pair(w, a, b, (mcc_method) first, NULL, &s, &err);
	memcpy(&o->score[first], &s, sizeof(s));
	mcc_match_dims(w, &na, &nb, &np);
	o->gamma = hash_bytes(UINT64_C(1469598103934665603), &np, sizeof(np));
	for (int r = 0; r < na; r++)
		for (int c = 0; c < nb; c++)
		{
			float		g = mcc_match_gamma(w, r, c);

			o->gamma = hash_bytes(o->gamma, &g, sizeof(g));
		}
	for (int k = 0; k < MCC_NMETHODS; k++)
	{
		int			m = (first + k) % MCC_NMETHODS;
		int			pr[MCC_MAX_CYL];
		int			pc[MCC_MAX_CYL];
		double		pv[MCC_MAX_CYL];
		int			n;

		if (k > 0)
		{
			s = mcc_match_rescore(w, (mcc_method) m, NULL);
			memcpy(&o->score[m], &s, sizeof(s));
		}
		n = mcc_match_last_pairs(w, pr, pc, pv, MCC_MAX_CYL);
		o->pairs[m] = hash_bytes(UINT64_C(1469598103934665603), &n, sizeof(n));
		for (int i = 0; i < n && i < MCC_MAX_CYL; i++)
		{
			o->pairs[m] = hash_bytes(o->pairs[m], &pr[i], sizeof(int));
			o->pairs[m] = hash_bytes(o->pairs[m], &pc[i], sizeof(int));
			o->pairs[m] = hash_bytes(o->pairs[m], &pv[i], sizeof(double));
		}
	}
}

/* All pairs of the set with the kernel in use. */
static void
compare_all(const pair_set *ps, outcome *out)
{
	for (int k = 0; k < ps->npairs; k++)
		compare(&ps->v[ps->pi[k]], &ps->v[ps->pj[k]], k % MCC_NMETHODS, &out[k]);
}

/*
 * Each kernel this CPU runs against the generic one on a set, in the
 * rounding mode now set: the number of pairs with any difference.
 */
static void
check_kernels(const pair_set *ps, const char *mode)
{
	outcome    *ref = malloc(sizeof(outcome) * ps->npairs);
	outcome    *got = malloc(sizeof(outcome) * ps->npairs);
	long		scored = 0;

	mcc_match_set_kernel("generic");
	compare_all(ps, ref);
	for (int k = 0; k < ps->npairs; k++)
		for (int m = 0; m < MCC_NMETHODS; m++)
			scored += ref[k].score[m] != 0;
	for (int kn = 0; kn < NKERNELS; kn++)
	{
		int			diff[3] = {0, 0, 0};

		if (mcc_match_set_kernel(kernel_names[kn]) != 0)
		{
			UNIT_SKIP("%s%s: kernel %s is not supported by this CPU", ps->name, mode, kernel_names[kn]);
			continue;
		}
		compare_all(ps, got);
		for (int k = 0; k < ps->npairs; k++)
		{
			diff[0] += memcmp(ref[k].score, got[k].score, sizeof(ref[k].score)) != 0;
			diff[1] += ref[k].gamma != got[k].gamma;
			diff[2] += memcmp(ref[k].pairs, got[k].pairs, sizeof(ref[k].pairs)) != 0;
		}
		UNIT_CHECK(diff[0] == 0 && diff[1] == 0 && diff[2] == 0,
				   "%s%s, kernel %s: %d pairs x %d methods (%ld scores > 0) equal the generic kernel's "
				   "bit for bit (pairs differing in scores %d, Gamma %d, pairs used %d)",
				   ps->name, mode, kernel_names[kn], ps->npairs, MCC_NMETHODS, scored,
				   diff[0], diff[1], diff[2]);
	}
	mcc_match_set_kernel(NULL);
	free(ref);
	free(got);
}

/* Add a template built from minutiae; 0 if the build fails. */
static int
add_minutiae(pair_set *ps, const mcc_minutiae *ms, const mcc_profile *p)
{
	mcc_error	err;
	size_t		size;
	uint8_t    *b;

	if (ps->n >= 128 || mcc_template_build(ms, p, NULL, &size, &err) != MCC_OK)
		return 0;
	b = malloc(size);
	if (mcc_template_build(ms, p, b, &size, &err) != MCC_OK ||
		mcc_template_open(b, size, &ps->v[ps->n], &err) != MCC_OK)
	{
		free(b);
		return 0;
	}
	ps->blob[ps->n++] = b;
	return 1;
}

/* Every pair i < j of the set's templates. */
static void
all_pairs(pair_set *ps)
{
	int			k = 0;

	ps->npairs = ps->n * (ps->n - 1) / 2;
	ps->pi = malloc(sizeof(int) * ps->npairs);
	ps->pj = malloc(sizeof(int) * ps->npairs);
	for (int i = 0; i < ps->n; i++)
		for (int j = i + 1; j < ps->n; j++)
		{
			ps->pi[k] = i;
			ps->pj[k++] = j;
		}
}

static void
free_set(pair_set *ps)
{
	for (int i = 0; i < ps->n; i++)
		free(ps->blob[i]);
	free(ps->pi);
	free(ps->pj);
}

/*
 * Templates from minutiae: fingers of 20-60 minutiae with 3 impressions
 * each, 4 big fingers of 100-150 (n_R past 64 lanes), and impressions with
 * minutiae moved onto others' positions (zero-length segments).
 */
static void
make_minutiae_set(pair_set *ps, const mcc_profile *p, int fingers, tg_rng *r)
{
	mcc_minutiae ma;
	mcc_minutiae mb;

	memset(ps, 0, sizeof(*ps));
	for (int f = 0; f < fingers; f++)
	{
		tg_minutiae(r, &ma, 20, 60, 8.0);
		add_minutiae(ps, &ma, p);
		for (int i = 0; i < 2; i++)
		{
			tg_impression(r, &ma, &mb, 0.8, 4, 0.15, 6);
			add_minutiae(ps, &mb, p);
		}
	}
	for (int f = 0; f < 4; f++)
	{
		tg_minutiae(r, &ma, 100, 150, 5.0);
		add_minutiae(ps, &ma, p);
		tg_impression(r, &ma, &mb, 0.9, 3, 0.1, 4);
		add_minutiae(ps, &mb, p);
	}
	for (int f = 0; f < 4; f++)
	{
		tg_minutiae(r, &ma, 30, 50, 8.0);
		/* a third of the minutiae on another's spot, with their own directions */
		for (int i = 0; i + 1 < ma.count; i += 3)
		{
			ma.m[i].x = ma.m[i + 1].x;
			ma.m[i].y = ma.m[i + 1].y;
		}
		add_minutiae(ps, &ma, p);
		tg_impression(r, &ma, &mb, 0.9, 0, 0.1, 0);
		add_minutiae(ps, &mb, p);
	}
	all_pairs(ps);
}

/*
 * Templates from random cylinders (tg_blob): 1 to 80 cylinders of varied
 * density, some empty (popcount 0: den = 0 in the matrix), some full, and,
 * with masks, masks around the min_ME threshold.
 */
static void
make_blob_set(pair_set *ps, const mcc_profile *p, int n, tg_rng *r)
{
	static uint64_t words[MCC_MAX_CYL][2 * MCC_MAX_WORDS];
	uint8_t		angle[MCC_MAX_CYL];
	mcc_error	err;

	memset(ps, 0, sizeof(*ps));
	for (int t = 0; t < n; t++)
	{
		int			nc = t < 4 ? 1 + t : tg_int(r, 5, 80);
		size_t		size;

		for (int c = 0; c < nc; c++)
		{
			int			kind = tg_int(r, 0, 9);
			double		density = kind == 0 ? 0.0 : kind == 1 ? 1.0 : 0.05 + 0.5 * tg_unit(r);

			/* masks of 75-100 %: two of them share 56-100 %, around min_ME's 60 % */
			tg_cylinder_words(r, p, density, 0.75 + 0.25 * tg_unit(r), words[c]);
			angle[c] = (uint8_t) tg_int(r, 0, 255);
		}
		ps->blob[t] = tg_blob(p, nc, (const uint64_t (*)[2 * MCC_MAX_WORDS]) words, angle, &size);
		if (mcc_template_open(ps->blob[t], size, &ps->v[t], &err) != MCC_OK)
		{
			UNIT_CHECK(0, "a random-cylinder template opens: %s", err.message);
			free(ps->blob[t]);
			break;
		}
		ps->n = t + 1;
	}
	all_pairs(ps);
}

/* ------------------------------------------------------------------ */
/* the rankings against a plain sort                                   */

typedef struct entry
{
	float		g;
	int			r;
	int			c;
} entry;

/* Descending Gamma, then smaller r, then smaller c: the order of mcc_match.h. */
static int
entry_cmp(const void *pa, const void *pb)
{
	const entry *a = pa;
	const entry *b = pb;

	if (a->g != b->g)
		return a->g > b->g ? -1 : 1;
	if (a->r != b->r)
		return a->r - b->r;
	return a->c - b->c;
}

/*
 * Random hand-made matrices with few distinct values (ties everywhere) and
 * many zeros: method lss (no votes: the n_P largest entries) and lgs with
 * n_P = min(n_A, n_B) (the greedy pairs) report exactly the pairs of a
 * sorted list of the entries, with every kernel.
 */
static void
check_rankings(tg_rng *r)
{
	static float gamma[MCC_MAX_CYL * MCC_MAX_CYL];
	static entry e[MCC_MAX_CYL * MCC_MAX_CYL];
	static mcc_minutia ma[MCC_MAX_CYL];
	static mcc_minutia mb[MCC_MAX_CYL];
	const char *const all[] = {"generic", "popcnt", "avx2", "avx512"};
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);

	for (int i = 0; i < MCC_MAX_CYL; i++)
	{
		ma[i].x = mb[i].x = (int16_t) (i % 16 * 10);
		ma[i].y = mb[i].y = (int16_t) (i / 16 * 10);
		ma[i].theta = mb[i].theta = 0.0f;
	}
	for (int kn = 0; kn < 4; kn++)
	{
		int			cases = 0;
		int			lss_ok = 0;
		int			lgs_ok = 0;

		if (mcc_match_set_kernel(all[kn]) != 0)
		{
			UNIT_SKIP("rankings: kernel %s is not supported by this CPU", all[kn]);
			continue;
		}
		for (int k = 0; k < 300; k++)
		{
			int			na = k % 10 == 0 ? tg_int(r, 65, 256) : tg_int(r, 1, 70);
			int			nb = k % 10 == 1 ? tg_int(r, 65, 256) : tg_int(r, 1, 70);
			int			levels = tg_int(r, 1, 6);
			int			m = na < nb ? na : nb;
			int			np = k % 3 == 0 ? tg_int(r, 1, 12) : m;
			int			ne = 0;
			int			pr[MCC_MAX_CYL];
			int			pc[MCC_MAX_CYL];
			double		pv[MCC_MAX_CYL];
			int			n;
			int			ok;
			mcc_error	err;
			uint8_t		used_r[MCC_MAX_CYL] = {0};
			uint8_t		used_c[MCC_MAX_CYL] = {0};
			int			taken = 0;

			for (int i = 0; i < na * nb; i++)
				gamma[i] = tg_int(r, 0, 2) == 0 ? 0.0f : (float) tg_int(r, 1, levels) / (float) levels;
			for (int i = 0; i < na; i++)
				for (int j = 0; j < nb; j++)
					if (gamma[i * nb + j] > 0.0f)
						e[ne++] = (entry) {gamma[i * nb + j], i, j};
			qsort(e, ne, sizeof(entry), entry_cmp);
			if (mcc_match_load(w, p, na, ma, NULL, nb, mb, NULL, gamma, np, &err) != MCC_OK)
				continue;
			cases++;

			/* lss: the first n_P entries of the sorted list */
			mcc_match_rescore(w, MCC_LSS, NULL);
			n = mcc_match_last_pairs(w, pr, pc, pv, MCC_MAX_CYL);
			ok = n == (ne < np ? ne : np);
			for (int i = 0; i < n && ok; i++)
				ok = pr[i] == e[i].r && pc[i] == e[i].c && pv[i] == e[i].g;
			lss_ok += ok;

			/* lgs: down the sorted list, each entry whose row and column are free */
			mcc_match_rescore(w, MCC_LGS, NULL);
			n = mcc_match_last_pairs(w, pr, pc, pv, MCC_MAX_CYL);
			ok = 1;
			for (int i = 0; i < ne && taken < np; i++)
			{
				if (used_r[e[i].r] || used_c[e[i].c])
					continue;
				used_r[e[i].r] = used_c[e[i].c] = 1;
				ok &= taken < n && pr[taken] == e[i].r && pc[taken] == e[i].c && pv[taken] == e[i].g;
				taken++;
			}
			lgs_ok += ok && n == taken;
		}
		UNIT_CHECK(cases == 300 && lss_ok == cases,
				   "kernel %s: lss takes the n_P largest entries in sorted order (%d of %d matrices)",
				   all[kn], lss_ok, cases);
		UNIT_CHECK(lgs_ok == cases, "kernel %s: lgs takes the greedy pairs of the sorted entries (%d of %d)",
				   all[kn], lgs_ok, cases);
	}
	mcc_match_set_kernel(NULL);
}

/* ------------------------------------------------------------------ */
/* real records                                                        */

/* The 80 records of one encoding of FVC2002 DB1_B; 0 if absent. */
static int
load_db1(pair_set *ps, const char *data, const char *dir, const char *ext)
{
	mcc_minutiae *ms = malloc(sizeof(mcc_minutiae));
	int			ok = 1;

	memset(ps, 0, sizeof(*ps));
	for (int k = 0; k < 80 && ok; k++)
	{
		mcc_error	err;

		ok = rf_read_print(data, dir, &tfvc_dbs[0], 101 + k / 8, 1 + k % 8, ext, ms, &err) == MCC_OK &&
			add_minutiae(ps, ms, mcc_profile_by_id(MCC_PROFILE_GPU2015));
	}
	free(ms);
	if (ok)
	{
		/* every other pair: i + j even (genuine pairs of both parities included) */
		int			k = 0;

		all_pairs(ps);
		for (int i = 0; i < ps->npairs; i++)
			if ((ps->pi[i] + ps->pj[i]) % 2 == 0)
			{
				ps->pi[k] = ps->pi[i];
				ps->pj[k++] = ps->pj[i];
			}
		ps->npairs = k;
	}
	return ok;
}

/* Every kernel on the set ps named name, in the default rounding; the set freed. */
static void
check_set(pair_set *ps, const char *name)
{
	ps->name = name;
	check_kernels(ps, "");
	free_set(ps);
}

int
main(void)
{
	static const struct
	{
		const char *dir;
		const char *ext;
		const char *name;
	}			fvc[] = {
		{"fingerjetfx-iso19794-2-2005", "ist", "FingerJetFX"},
		{"nbis-mindtct-xyt", "xyt", "mindtct"},
	};
	tg_rng		r = {20240611};
	const char *data;
	const int	modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
	const char *const mode_names[] = {", rounding upward", ", rounding downward", ", rounding toward zero"};
	pair_set	ps;

	w = malloc(mcc_match_work_size());
	mcc_match_work_init(w);
	UNIT_CHECK(mcc_match_set_kernel("generic") == 0 && strcmp(mcc_match_kernel_name(), "generic") == 0,
			   "the generic kernel can always be forced");
	UNIT_CHECK(mcc_match_set_kernel("no-such-kernel") == -1, "an unknown kernel name is refused");
	UNIT_CHECK(mcc_match_set_kernel(NULL) == 0, "back to the automatic choice");
	printf("# automatic kernel on this CPU: %s\n", mcc_match_kernel_name());

	check_rankings(&r);

	make_minutiae_set(&ps, mcc_profile_by_id(MCC_PROFILE_GPU2015), 16, &r);
	ps.name = "gpu2015 synthetic";
	check_kernels(&ps, "");
	/* the same arithmetic in every rounding mode: a few hundred pairs each */
	ps.npairs = 300;
	for (int i = 0; i < 3; i++)
	{
		fesetround(modes[i]);
		check_kernels(&ps, mode_names[i]);
		fesetround(FE_TONEAREST);
	}
	free_set(&ps);

	make_minutiae_set(&ps, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), 5, &r);
	check_set(&ps, "tpami2010 synthetic");
	make_blob_set(&ps, mcc_profile_by_id(MCC_PROFILE_GPU2015), 48, &r);
	check_set(&ps, "gpu2015 random cylinders");
	make_blob_set(&ps, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), 20, &r);
	check_set(&ps, "tpami2010 random cylinders");

	data = unit_shared_data_or_skip("FVC2002 records not matched");
	for (size_t e = 0; data != NULL && e < sizeof(fvc) / sizeof(fvc[0]); e++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "FVC2002 DB1_B %s", fvc[e].name);
		if (load_db1(&ps, data, fvc[e].dir, fvc[e].ext))
			check_set(&ps, name);
		else
			UNIT_SKIP("%s records missing or unreadable", name);
	}
	free(w);
	return unit_done();
}
