/*
 * gpu_check.c: correctness of the GPU engine (make gpu-check), TAP output.
 *
 * Every score of every kernel variant must equal, bit for bit, the
 * reference LSS written from mcc_lss.h (gpu_data.c), for random and mated
 * probes, empty and 256-cylinder templates, empty cylinders (den = 0) and
 * ties. Batches must equal single queries, append + remove must equal a
 * full reload, several partitions must equal one, and errors (no device,
 * out of memory, bad arguments, a corrupt context) must come back as codes.
 *
 *   gpu_check               all checks (the GPU part skips without a GPU)
 *   gpu_check --no-device   run with CUDA_VISIBLE_DEVICES= : the probe and
 *                           open must fail cleanly
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/unit.h"
#include "gpu_data.h"
#include "gpu_devices.h"
#include "mcc_gpu.h"

#define NQ 16
#define K 20

static const mcc_profile *prof;

/* Append a copy of template k to g (same cylinders, a new id). */
static void
dup_template(mcc_soa *g, uint32_t k)
{
	uint32_t	t = g->n_tpl;
	uint32_t	j0 = g->n_cyl;
	uint32_t	n = g->first[k + 1] - g->first[k];

	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	j = g->first[k] + i;

		for (int w = 0; w < 4; w++)
			g->bits[(size_t) w * g->cap_cyl + j0 + i] = g->bits[(size_t) w * g->cap_cyl + j];
		g->angle[j0 + i] = g->angle[j];
		g->pc[j0 + i] = g->pc[j];
	}
	g->first[t] = j0;
	g->ncyl[t] = (uint16_t) n;
	g->id[t] = -(int64_t) t;	/* ids descending: ties must sort by id */
	g->n_cyl = j0 + n;
	g->n_tpl = t + 1;
	g->first[t + 1] = g->n_cyl;
}

/* Reference scores of probes vs g (removed[] -> -1). */
static float *
ref_scores(const gd_probe *pr, int nq, const mcc_soa *g, const uint8_t *removed)
{
	float	   *r = malloc(sizeof(float) * (size_t) nq * g->n_tpl);

	for (int q = 0; q < nq; q++)
		for (uint32_t k = 0; k < g->n_tpl; k++)
			r[(size_t) q * g->n_tpl + k] = removed && removed[k] ? -1.0f :
				gd_ref_score(&pr[q].v, g, k);
	return r;
}

/* Count differing floats (bitwise); print the first few. */
static long
diff_scores(const char *what, const float *a, const float *b, int nq, uint32_t n)
{
	long		bad = 0;

	for (int q = 0; q < nq; q++)
		for (uint32_t k = 0; k < n; k++)
		{
			size_t		i = (size_t) q * n + k;

			if (memcmp(&a[i], &b[i], 4) != 0)
			{
				if (bad < 5)
					printf("#   %s: probe %d template %u: %.9g vs %.9g\n", what, q, k, a[i], b[i]);
				bad++;
			}
		}
	return bad;
}

/* Reference top-k of one probe from reference scores. */
static int
ref_topk(const float *sc, const mcc_soa *g, int k, mcc_gpu_hit *out)
{
	int			n = 0;

	for (uint32_t i = 0; i < g->n_tpl; i++)
	{
		int			pos;

		if (sc[i] < 0)
			continue;
		/* insertion into a sorted array of at most k */
		pos = n < k ? n : k;
		while (pos > 0 && (out[pos - 1].score < sc[i] ||
						   (out[pos - 1].score == sc[i] && out[pos - 1].id > g->id[i])))
		{
			if (pos < k)
				out[pos] = out[pos - 1];
			pos--;
		}
		if (pos < k)
		{
			out[pos].score = sc[i];
			out[pos].index = i;
			out[pos].id = g->id[i];
			if (n < k)
				n++;
		}
	}
	return n;
}

/* Do GPU hits equal the reference top-k for every probe? */
static int
same_hits(const mcc_gpu_hit *h, const int *nh, const float *ref, const mcc_soa *g, int nq, int k)
{
	mcc_gpu_hit *r = malloc(sizeof(mcc_gpu_hit) * k);
	int			ok = 1;

	for (int q = 0; q < nq && ok; q++)
	{
		int			n = ref_topk(ref + (size_t) q * g->n_tpl, g, k, r);

		if (n != nh[q])
		{
			printf("#   probe %d: %d hits, expected %d\n", q, nh[q], n);
			ok = 0;
		}
		for (int i = 0; ok && i < n; i++)
			if (memcmp(&r[i].score, &h[(size_t) q * k + i].score, 4) != 0 ||
				r[i].id != h[(size_t) q * k + i].id || r[i].index != h[(size_t) q * k + i].index)
			{
				printf("#   probe %d rank %d: (%.9g, %lld) expected (%.9g, %lld)\n", q, i,
					   h[(size_t) q * k + i].score, (long long) h[(size_t) q * k + i].id,
					   r[i].score, (long long) r[i].id);
				ok = 0;
			}
	}
	free(r);
	return ok;
}

/*
 * The largest d = (sqrt_fx[p] * rcp(sqrt_fx[x] + sqrt_fx[y])) >> 32 over
 * popcounts x, y <= 255 and every xor popcount p they allow (|x - y| <= p
 * <= min(x + y, 255), p of the parity of x + y).
 */
static uint32_t
max_dist(void)
{
	uint32_t	mx = 0;

	for (int x = 0; x <= 255; x++)
		for (int y = 0; y <= 255; y++)
		{
			uint32_t	R = mcc_lss_rcp(mcc_lss_sqrt_fx(x) + mcc_lss_sqrt_fx(y));
			int			hi = x + y > 255 ? 255 : x + y;

			for (int p = x > y ? x - y : y - x; p <= hi; p += 2)
			{
				uint32_t	d = mcc_lss_dist(mcc_lss_sqrt_fx(p), R);

				if (d > mx)
					mx = d;
			}
		}
	return mx;
}

/* Open a context, upload g; NULL (and a failed check) on error. */
static int	pc_window = 0;

static mcc_gpu *
open_up(const int *dev, int ndev, int variant, size_t limit, int batch, const mcc_soa *g)
{
	mcc_gpu_options o;
	mcc_error	err;
	mcc_gpu    *c = NULL;
	mcc_gpu_code rc;

	memset(&o, 0, sizeof(o));
	o.variant = variant;
	o.mem_limit = limit;
	o.max_batch = batch;
	o.pc_window = pc_window;
	rc = mcc_gpu_open(dev, ndev, prof, &o, &c, &err);
	if (rc != MCC_GPU_OK)
	{
		UNIT_CHECK(0, "open (variant %s, %d partitions): %s", mcc_gpu_variant_name(variant), ndev, err.message);
		return NULL;
	}
	if (g && (rc = mcc_gpu_upload(c, g, &err)) != MCC_GPU_OK)
	{
		UNIT_CHECK(0, "upload: %s", err.message);
		mcc_gpu_close(c);
		return NULL;
	}
	return c;
}

/* Score all and compare with a reference; returns the scores (caller frees). */
static float *
check_all(mcc_gpu *c, const gd_probe *pr, int nq, const float *ref, uint32_t n, const char *what)
{
	mcc_error	err;
	float	   *s = malloc(sizeof(float) * (size_t) nq * n);
	mcc_gpu_code rc;
	mcc_template_view v[NQ * 2];

	for (int q = 0; q < nq; q++)
		v[q] = pr[q].v;
	for (size_t i = 0; i < (size_t) nq * n; i++)
		s[i] = 12345.0f;		/* poison: every score must be written */
	rc = mcc_gpu_score_all(c, v, nq, s, &err);
	if (!UNIT_CHECK(rc == MCC_GPU_OK, "%s: score_all returns ok%s%s", what, rc ? ": " : "", rc ? err.message : ""))
		return s;
	UNIT_CHECK(diff_scores(what, s, ref, nq, n) == 0, "%s: all %d x %u scores equal the reference", what, nq, n);
	return s;
}

/* Search and compare with the reference top-k. */
static void
check_search_k(mcc_gpu *c, const gd_probe *pr, int nq, const float *ref, const mcc_soa *g, int k,
			   const char *what)
{
	mcc_error	err;
	mcc_gpu_hit *h = malloc(sizeof(mcc_gpu_hit) * nq * k);
	int			nh[NQ * 2];
	mcc_template_view v[NQ * 2];
	mcc_gpu_code rc;

	for (int q = 0; q < nq; q++)
		v[q] = pr[q].v;
	rc = mcc_gpu_search(c, v, nq, k, h, nh, &err);
	if (UNIT_CHECK(rc == MCC_GPU_OK, "%s: search returns ok%s%s", what, rc ? ": " : "", rc ? err.message : ""))
		UNIT_CHECK(same_hits(h, nh, ref, g, nq, k), "%s: top-%d (score desc, id asc) equals the reference", what, k);
	free(h);
}

/*
 * A search with a floor per probe against the reference top-k of the
 * templates at or above it. The floors, one per probe in turn: the
 * unfloored list's first score, its score at rank k / 3 (a cut inside
 * the list), just above its k-th score (float's next value), the last
 * score's tie (so exactly the run of equal scores decides), 0, above
 * every score, and negative; each probe its own, so a batch mixes them.
 */
static void
check_search_min(mcc_gpu *c, const gd_probe *pr, int nq, const float *ref, const mcc_soa *g, int k,
				 const char *what)
{
	mcc_error	err;
	mcc_gpu_hit *h = malloc(sizeof(mcc_gpu_hit) * nq * k);
	mcc_gpu_hit *top = malloc(sizeof(mcc_gpu_hit) * k);
	float	   *cut = malloc(sizeof(float) * (size_t) nq * g->n_tpl);
	float		fl[NQ * 2];
	int			nh[NQ * 2];
	mcc_template_view v[NQ * 2];
	mcc_gpu_code rc;

	for (int q = 0; q < nq; q++)
	{
		int			n = ref_topk(ref + (size_t) q * g->n_tpl, g, k, top);
		float		last = n > 0 ? top[n - 1].score : 0.5f;

		v[q] = pr[q].v;
		switch (q % 7)
		{
			case 0:
				fl[q] = n > 0 ? top[0].score : 0.5f;
				break;
			case 1:
				fl[q] = n > 0 ? top[n / 3].score : 0.5f;
				break;
			case 2:
				fl[q] = nextafterf(last, 2.0f);
				break;
			case 3:
				fl[q] = last;
				break;
			case 4:
				fl[q] = 0.0f;
				break;
			case 5:
				fl[q] = 1.5f;
				break;
			default:
				fl[q] = -1.0f;
				break;
		}
		/* the reference: scores below the floor are no candidates (ref_topk skips < 0) */
		for (uint32_t i = 0; i < g->n_tpl; i++)
		{
			float		sc = ref[(size_t) q * g->n_tpl + i];

			cut[(size_t) q * g->n_tpl + i] = sc >= fl[q] ? sc : -1.0f;
		}
	}
	rc = mcc_gpu_search_min(c, v, nq, k, fl, h, nh, &err);
	if (UNIT_CHECK(rc == MCC_GPU_OK, "%s: floored search returns ok%s%s", what, rc ? ": " : "", rc ? err.message : ""))
		UNIT_CHECK(same_hits(h, nh, cut, g, nq, k),
				   "%s: top-%d at or above each probe's floor equals the reference", what, k);
	free(h);
	free(top);
	free(cut);
}

static void
check_search(mcc_gpu *c, const gd_probe *pr, int nq, const float *ref, const mcc_soa *g, const char *what)
{
	check_search_k(c, pr, nq, ref, g, K, what);
}

/* Probes: random, mated, empty, one cylinder, 256 cylinders. */
static void
make_probes(gd_probe *pr, const mcc_soa *g, const gd_params *gp, uint64_t seed)
{
	gd_rng		r = {seed};

	for (int q = 0; q < NQ; q++)
	{
		switch (q)
		{
			case 0:
				gd_probe_random(&pr[q], 0, gp, &r);
				break;
			case 1:
				gd_probe_random(&pr[q], 1, gp, &r);
				break;
			case 2:
				gd_probe_random(&pr[q], MCC_MAX_CYL, gp, &r);
				break;
			case 3:
			case 4:
			case 5:
			case 6:
			case 7:
			case 8:
				gd_probe_mated(&pr[q], g, (uint32_t) (q == 3 ? 7 : q == 4 ? 5 : gd_below(&r, g->n_tpl)), gp, &r);
				break;
			default:
				gd_probe_random(&pr[q], 10 + (int) gd_below(&r, 50), gp, &r);
				break;
		}
	}
}

int
main(int argc, char **argv)
{
	mcc_error	err;
	int			count;
	int			dev0 = 0;
	mcc_gpu_code rc;
	mcc_gpu    *c = NULL;
	gd_params	gp = {10, 50, 0, 0, 1};
	gd_params	gz = {10, 50, 1, 60, 0};
	mcc_soa		g1, g2;
	static gd_probe pr[NQ], pz[NQ];
	float	   *r1, *r2, *s, *s2;
	int			devs[MCC_GPU_MAX_DEVICES];
	int			ndev;

	prof = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_lss_init();
	UNIT_CHECK(gd_check_rcp_fp64() == 0, "FP64 rcp of the kernels equals floor(2^38/den) for every den <= 2^17");
	UNIT_CHECK(max_dist() <= 64, "d <= 64 for every pair of popcounts and xor popcount that can occur "
			   "(tc-lean votes d without a clamp)");

	if ((count = gdev_probe(argc, argv, prof)) <= 0)
		return unit_done();

	/* data: gallery with edge cases and 40 copies of template 7 (ties) */
	if (gd_gallery(&g1, 3000, &gp, 42) != 0 || gd_gallery(&g2, 600, &gz, 43) != 0)
	{
		UNIT_CHECK(0, "test data");
		return unit_done();
	}
	for (int i = 0; i < 40; i++)
		dup_template(&g1, 7);
	make_probes(pr, &g1, &gp, 7);
	make_probes(pz, &g2, &gz, 8);
	r1 = ref_scores(pr, NQ, &g1, NULL);
	r2 = ref_scores(pz, NQ, &g2, NULL);
	printf("# gallery 1: %u templates, %u cylinders; gallery 2 (empty cylinders): %u, %u\n",
		   g1.n_tpl, g1.n_cyl, g2.n_tpl, g2.n_cyl);
	{
		float	   *c1 = gd_core_scores(pr, NQ, &g1, NULL);
		float	   *c2 = gd_core_scores(pz, NQ, &g2, NULL);

		UNIT_CHECK(c1 && diff_scores("reference vs src/core", r1, c1, NQ, g1.n_tpl) == 0,
				   "the test reference equals src/core's mcc_soa_scan (%s kernel), gallery 1",
				   mcc_soa_kernel_name());
		UNIT_CHECK(c2 && diff_scores("reference vs src/core", r2, c2, NQ, g2.n_tpl) == 0,
				   "the test reference equals src/core's mcc_soa_scan, empty cylinders");
		free(c1);
		free(c2);
	}

	/* synthetic fingers through src/core (mcc_synth + mcc_template_build) vs src/core's scan */
	{
		mcc_soa		gs;
		static gd_probe ps[8];
		float	   *cs;
		static const int vs[] = {0, MCC_GPU_VARIANT_FP64_CSA2, MCC_GPU_VARIANT_BLK_TABLE_CSA2,
		MCC_GPU_VARIANT_TC_FP64, MCC_GPU_VARIANT_TC_TABLE_W10_SP, MCC_GPU_VARIANT_TC_LEAN,
		MCC_GPU_VARIANT_TC_LEAN_U4};

		if (gd_gallery_synth(&gs, 3000, 1500, 77, ps, 8) == 0 && (cs = gd_core_scores(ps, 8, &gs, NULL)))
		{
			printf("# synthetic gallery: %u templates, %u cylinders (%.1f per template)\n",
				   gs.n_tpl, gs.n_cyl, (double) gs.n_cyl / gs.n_tpl);
			for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
			{
				char		what[64];

				snprintf(what, sizeof(what), "%s, synthetic fingers vs src/core", mcc_gpu_variant_name(vs[i]));
				if ((c = open_up(&dev0, 1, vs[i], 0, 0, &gs)) != NULL)
				{
					free(check_all(c, ps, 8, cs, gs.n_tpl, what));
					check_search(c, ps, 8, cs, &gs, what);
					mcc_gpu_close(c);
				}
			}
			free(cs);
			mcc_soa_free(&gs);
		}
		else
			UNIT_CHECK(0, "synthetic gallery through src/core");
	}

	/* every variant: exact scores and top-k, on both galleries */
	for (int v = 0; v < MCC_GPU_VARIANT_COUNT; v++)
	{
		char		what[64];

		snprintf(what, sizeof(what), "%s, gallery 1", mcc_gpu_variant_name(v));
		if ((c = open_up(&dev0, 1, v, 0, 0, &g1)) != NULL)
		{
			free(check_all(c, pr, NQ, r1, g1.n_tpl, what));
			check_search(c, pr, NQ, r1, &g1, what);
			mcc_gpu_close(c);
		}
		snprintf(what, sizeof(what), "%s, empty cylinders", mcc_gpu_variant_name(v));
		if ((c = open_up(&dev0, 1, v, 0, 0, &g2)) != NULL)
		{
			free(check_all(c, pz, NQ, r2, g2.n_tpl, what));
			check_search(c, pz, NQ, r2, &g2, what);
			mcc_gpu_close(c);
		}
	}

	/* tiles in popcount order inside angle windows (groups not angle sorted) */
	for (int w = 64; w <= 256; w *= 2)
	{
		int			v = w == 128 ? MCC_GPU_VARIANT_BLK_TABLE_CSA2_X2 : w == 64 ? MCC_GPU_VARIANT_BLK_FP64_CSA4 : 0;
		char		what[64];

		pc_window = w;
		snprintf(what, sizeof(what), "%s, popcount window %d", mcc_gpu_variant_name(v), w);
		if ((c = open_up(&dev0, 1, v, 0, 0, &g1)) != NULL)
		{
			free(check_all(c, pr, NQ, r1, g1.n_tpl, what));
			check_search(c, pr, NQ, r1, &g1, what);
			mcc_gpu_close(c);
		}
		if ((c = open_up(&dev0, 1, v, 0, 0, &g2)) != NULL)
		{
			free(check_all(c, pz, NQ, r2, g2.n_tpl, what));
			mcc_gpu_close(c);
		}
	}
	pc_window = 0;

	/* a batch equals single queries */
	if ((c = open_up(&dev0, 1, 0, 0, 0, &g1)) != NULL)
	{
		mcc_template_view v[NQ];
		mcc_gpu_hit *hb = calloc(NQ * K, sizeof(mcc_gpu_hit)), *h1 = calloc(NQ * K, sizeof(mcc_gpu_hit));
		int			nb[NQ], n1[NQ];
		int			ok = 1;

		s = malloc(sizeof(float) * NQ * g1.n_tpl);
		s2 = malloc(sizeof(float) * NQ * g1.n_tpl);
		for (int q = 0; q < NQ; q++)
			v[q] = pr[q].v;
		ok &= mcc_gpu_score_all(c, v, NQ, s, &err) == MCC_GPU_OK;
		ok &= mcc_gpu_search(c, v, NQ, K, hb, nb, &err) == MCC_GPU_OK;
		for (int q = 0; q < NQ; q++)
		{
			ok &= mcc_gpu_score_all(c, &v[q], 1, s2 + (size_t) q * g1.n_tpl, &err) == MCC_GPU_OK;
			ok &= mcc_gpu_search(c, &v[q], 1, K, h1 + (size_t) q * K, &n1[q], &err) == MCC_GPU_OK;
		}
		UNIT_CHECK(ok, "batch and single queries run");
		UNIT_CHECK(diff_scores("batch vs single", s, s2, NQ, g1.n_tpl) == 0, "a batch of %d gives the scores of %d single queries", NQ, NQ);
		UNIT_CHECK(memcmp(nb, n1, sizeof(nb)) == 0 && memcmp(hb, h1, sizeof(mcc_gpu_hit) * NQ * K) == 0,
				   "a batch of %d gives the hits of %d single queries", NQ, NQ);
		free(s);
		free(s2);
		free(hb);
		free(h1);
		mcc_gpu_close(c);
	}

	/* append + remove on 3 partitions equal a full reload + remove on 1 */
	{
		const uint32_t cuts[] = {1000, 1001, 1008, 2000, 2777, g1.n_tpl};
		const uint32_t gone[] = {3, 500, 1001, 1500, 2999, 3010};
		int			d3[3] = {0, 0, 0};
		mcc_gpu    *ca = open_up(d3, 3, 0, 0, 0, NULL);
		mcc_gpu    *cb = open_up(&dev0, 1, 0, 0, 0, &g1);
		uint8_t    *removed = calloc(g1.n_tpl, 1);
		int			ok = ca && cb;
		float	   *ra;

		if (ok)
		{
			mcc_soa		p = gd_prefix(&g1, cuts[0]);

			ok &= mcc_gpu_upload(ca, &p, &err) == MCC_GPU_OK;
			for (int i = 1; ok && i < 6; i++)
				ok &= mcc_gpu_append(ca, &g1, cuts[i - 1], cuts[i], &err) == MCC_GPU_OK;
			for (int i = 0; ok && i < 6; i++)
			{
				ok &= mcc_gpu_remove(ca, gone[i], &err) == MCC_GPU_OK;
				ok &= mcc_gpu_remove(cb, gone[i], &err) == MCC_GPU_OK;
				removed[gone[i]] = 1;
			}
			UNIT_CHECK(ok, "upload, 5 appends and 6 removals run%s%s", ok ? "" : ": ", ok ? "" : err.message);
			UNIT_CHECK(mcc_gpu_size(ca) == g1.n_tpl, "size after appends is %u", mcc_gpu_size(ca));
			ra = ref_scores(pr, NQ, &g1, removed);
			s = check_all(ca, pr, NQ, ra, g1.n_tpl, "appended + removed, 3 partitions");
			s2 = check_all(cb, pr, NQ, ra, g1.n_tpl, "reloaded + removed, 1 partition");
			UNIT_CHECK(diff_scores("append vs reload", s, s2, NQ, g1.n_tpl) == 0,
					   "incremental gallery equals a full reload");
			check_search(ca, pr, NQ, ra, &g1, "appended + removed, 3 partitions");
			check_search(cb, pr, NQ, ra, &g1, "reloaded + removed, 1 partition");
			free(s);
			free(s2);
			free(ra);
		}
		else
			UNIT_CHECK(0, "contexts for the append test");
		{
			mcc_gpu_meminfo mi[4];
			int			nm = 0;

			if (ca && mcc_gpu_memory(ca, mi, 4, &nm, &err) == MCC_GPU_OK)
			{
				uint32_t	tot = 0;

				for (int i = 0; i < nm; i++)
				{
					printf("# partition %d: GPU %d, %u templates, %u cylinder slots, gallery %zu B, scratch %zu B\n",
						   i, mi[i].ordinal, mi[i].n_tpl, mi[i].n_cyl, mi[i].gallery_bytes, mi[i].scratch_bytes);
					tot += mi[i].n_tpl;
				}
				UNIT_CHECK(nm == 3 && tot == g1.n_tpl && mi[0].gallery_bytes >= 36ull * mi[0].n_cyl,
						   "memory accounting covers 3 partitions and every template");
			}
			else
				UNIT_CHECK(0, "memory accounting");
		}
		free(removed);
		mcc_gpu_close(ca);
		mcc_gpu_close(cb);
	}

	/* every device present (or 2 partitions on one) equals one partition */
	ndev = count > 1 ? count : 2;
	for (int i = 0; i < ndev; i++)
		devs[i] = count > 1 ? i : 0;
	if ((c = open_up(devs, ndev, 0, 0, 0, &g1)) != NULL)
	{
		char		what[64];

		snprintf(what, sizeof(what), "%d partitions on %d GPU(s)", ndev, count > 1 ? count : 1);
		free(check_all(c, pr, NQ, r1, g1.n_tpl, what));
		check_search(c, pr, NQ, r1, &g1, what);
		check_search_min(c, pr, NQ, r1, &g1, K, what);
		check_search_min(c, pr, NQ, r1, &g1, 1500, what);
		/* a shortlist's k whose floor leaves the list short: the host's way */
		check_search_min(c, pr, 1, r1, &g1, 1500, what);
		mcc_gpu_close(c);
	}

	/* more exact ties than the fast selection path holds (4116 for k = 20) */
	{
		mcc_soa		g3;
		float	   *r3;
		gd_probe	p3[2];
		gd_rng		rr = {11};

		if (gd_gallery(&g3, 4300, &gp, 44) == 0)
		{
			for (int i = 0; i < 4300; i++)
				dup_template(&g3, 0);
			gd_probe_mated(&p3[0], &g3, 0, &gp, &rr);
			gd_probe_random(&p3[1], 30, &gp, &rr);
			r3 = ref_scores(p3, 2, &g3, NULL);
			if ((c = open_up(&dev0, 1, 0, 0, 0, &g3)) != NULL)
			{
				free(check_all(c, p3, 2, r3, g3.n_tpl, "4301 ties"));
				check_search(c, p3, 2, r3, &g3, "4301 ties");
				mcc_gpu_close(c);
			}
			/*
			 * a shortlist's k (>= MCC_GPU_ORDER_MIN): the hits of every
			 * candidate made and ordered on the device, past the copied
			 * window (4301 ties for k = 3000; ids descending, so the
			 * order by id is the reverse of the partitions' order), on
			 * one partition and on three
			 */
			for (int np = 1; np <= 3; np += 2)
			{
				int			d3[3] = {0, count > 1 ? 1 : 0, count > 2 ? 2 : 0};
				char		what[64];

				snprintf(what, sizeof(what), "4301 ties, k = 3000, %d partition(s)", np);
				if ((c = open_up(d3, np, 0, 0, 0, &g3)) != NULL)
				{
					mcc_gpu_timing tm;

					/*
					 * a shortlist's selection has room for every
					 * template; k = 20 on one partition has more ties
					 * than its fast path holds and selects again
					 */
					check_search_k(c, p3, 2, r3, &g3, 3000, what);
					mcc_gpu_last_timing(c, &tm);
					UNIT_CHECK(tm.reselects == 0, "%s: no selection again (%d)", what, tm.reselects);
					check_search_k(c, p3, 2, r3, &g3, 20, what);
					mcc_gpu_last_timing(c, &tm);
					UNIT_CHECK(np > 1 || tm.reselects > 0, "%s: k = 20: selected again (%d)", what,
							   tm.reselects);
					/* floors inside and at the edge of the run of ties */
					check_search_min(c, p3, 2, r3, &g3, 3000, what);
					check_search_min(c, p3, 2, r3, &g3, 20, what);
					mcc_gpu_close(c);
				}
			}
			free(r3);
			gd_gallery_free(&g3);
		}
		else
			UNIT_CHECK(0, "tie gallery");
	}

	/* errors: unsupported profile, bad arguments, out of memory */
	rc = mcc_gpu_open(&dev0, 1, mcc_profile_by_id(MCC_PROFILE_TPAMI2010), NULL, &c, &err);
	UNIT_CHECK(rc == MCC_GPU_UNSUPPORTED && c == NULL, "profile tpami2010 is refused: %s", err.message);
	{
		int			bad = 99;

		rc = mcc_gpu_open(&bad, 1, prof, NULL, &c, &err);
		UNIT_CHECK(rc == MCC_GPU_INVALID && c == NULL, "a missing device is refused: %s", err.message);
	}
	if ((c = open_up(&dev0, 1, 0, (size_t) 1 << 20, 4, NULL)) != NULL)
	{
		mcc_soa		small = gd_prefix(&g1, 10);
		mcc_gpu_hit h[NQ * K];
		int			nh[NQ];
		mcc_template_view v = pr[5].v;

		rc = mcc_gpu_upload(c, &g1, &err);
		UNIT_CHECK(rc == MCC_GPU_OOM && err.status == MCC_ERR_MEMORY,
				   "a gallery over the memory limit fails with out of memory: %s", err.message);
		rc = mcc_gpu_upload(c, &small, &err);
		UNIT_CHECK(rc == MCC_GPU_OK, "after out of memory, a small gallery uploads%s%s", rc ? ": " : "", rc ? err.message : "");
		rc = mcc_gpu_search(c, &v, 1, K, h, nh, &err);
		UNIT_CHECK(rc == MCC_GPU_OK && nh[0] == 10, "and searches (%d hits)%s%s", nh[0], rc ? ": " : "", rc ? err.message : "");
		UNIT_CHECK(mcc_gpu_append(c, &g1, 11, 20, &err) == MCC_GPU_INVALID, "append with a gap is refused: %s", err.message);
		UNIT_CHECK(mcc_gpu_remove(c, 10, &err) == MCC_GPU_INVALID, "removal out of range is refused: %s", err.message);
		UNIT_CHECK(mcc_gpu_search(c, &v, 1, 0, h, nh, &err) == MCC_GPU_INVALID, "k = 0 is refused: %s", err.message);
		{
			gd_probe	bad = pr[5];

			gd_probe_fix(&bad);
			bad.bits[4 * 1 + 3] |= 1ull << 63;
			UNIT_CHECK(mcc_gpu_search(c, &bad.v, 1, K, h, nh, &err) == MCC_GPU_INVALID,
					   "a probe cylinder with bit 255 set is refused: %s", err.message);
			bad = pr[5];
			gd_probe_fix(&bad);
			bad.meta[4 * 1] ^= 1;	/* stored popcount off by one */
			UNIT_CHECK(mcc_gpu_search(c, &bad.v, 1, K, h, nh, &err) == MCC_GPU_INVALID,
					   "a probe cylinder whose popcount differs from its bits is refused: %s", err.message);
		}

		/* last: a fault corrupts the context; every call then says so */
		UNIT_CHECK(mcc_gpu_debug_fault(c, &err) == MCC_GPU_OK, "fault armed");
		rc = mcc_gpu_search(c, &v, 1, K, h, nh, &err);
		UNIT_CHECK(rc == MCC_GPU_STICKY, "a kernel fault is reported as sticky: %s", err.message);
		rc = mcc_gpu_search(c, &v, 1, K, h, nh, &err);
		UNIT_CHECK(rc == MCC_GPU_STICKY, "and stays sticky: %s", err.message);
		mcc_gpu_close(c);
		UNIT_CHECK(1, "close after a sticky error returns");
	}
	free(r1);
	free(r2);
	gd_gallery_free(&g1);
	gd_gallery_free(&g2);
	return unit_done();
}
