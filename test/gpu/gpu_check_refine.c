/*
 * gpu_check_refine.c: correctness of refinement on the GPU
 * (kernels/mcc_gpu_refine.h; part of make gpu-check), TAP output.
 *
 * Every score of every GPU method must equal mcc_match_candidate()'s bit
 * for bit, and the unrounded double of the last relaxed pair set must equal
 * the CPU's (from mcc_match_last_pairs: the float rounding would hide a
 * last-bit difference), for thousands of pairs: synthetic fingers,
 * templates of 0 .. 256 cylinders (the size classes' limits 32/33,
 * 45/46, 64/65 and 128/129 included), FVC2002 (all four DBs, mindtct xyt and FingerJetFX ISO, when
 * ../shared/data is present). Candidates come from the device gallery
 * (uploaded, then appended in pieces: tiles rebuilt; one partition and
 * three) and as templates; with the default kernel shape and with small
 * key buffers (the paths of big templates) and other block sizes. Removed
 * templates score -1; errors come back as codes.
 *
 *   gpu_check_refine               all checks (without a GPU: probe and open fail cleanly, the rest skips)
 *   gpu_check_refine --no-device   run with CUDA_VISIBLE_DEVICES= : clean failure
 *   gpu_check_refine --quick       fewer synthetic pairs
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../unit/refine_testdata.h"
#include "../unit/unit.h"
#include "gpu_data.h"
#include "gpu_devices.h"
#include "mcc_gpu.h"
#include "mcc_gpu_refine.h"
#include "mcc_job.h"
#include "mcc_soa.h"

static const int methods[] = {MCC_FUSED, MCC_LSS_DTR, MCC_LSS_R, MCC_LGS, MCC_LGS_R, MCC_LGS_DTR, MCC_LSS};
#define NMETH ((int) (sizeof(methods) / sizeof(methods[0])))

static const mcc_profile *prof;

/* CPU reference of every pair and method: the score, and the last set's double. */
typedef struct ref
{
	const rt_set *s;
	float	   *sc[NMETH];
	double	   *dv[NMETH];		/* NaN where there is no relaxed or averaged set (lss) */
	int			next;
	pthread_mutex_t lock;
} ref;

/* Unrounded score of the last pair set, from the pairs the CPU reports. */
static double
last_double(mcc_match_work *w, int method, int m)
{
	static __thread int r[MCC_MAX_CYL];
	static __thread int c[MCC_MAX_CYL];
	static __thread double v[MCC_MAX_CYL];
	int			n = mcc_match_last_pairs(w, r, c, v, MCC_MAX_CYL);
	int			nps[2];
	int			np;
	double		sum = 0.0;

	if (method == MCC_LSS)
		return 0.0 / 0.0;
	mcc_match_set_np(mcc_match_params_std(), method, prof, m, nps);
	np = method == MCC_FUSED ? nps[1] : nps[0];	/* fused reports LGS-DTR's pairs */
	for (int i = 0; i < n; i++)
		sum += v[i];
	return np > 0 && n > 0 ? sum / np : 0.0;
}

static void *
ref_worker(void *arg)
{
	ref		   *R = (ref *) arg;
	mcc_match_work *w = malloc(mcc_match_work_size());
	mcc_error	err;

	mcc_match_work_init(w);
	for (;;)
	{
		int			i0;

		pthread_mutex_lock(&R->lock);
		i0 = R->next;
		R->next += 16;
		pthread_mutex_unlock(&R->lock);
		if (i0 >= R->s->npairs)
			break;
		for (int i = i0; i < i0 + 16 && i < R->s->npairs; i++)
		{
			const mcc_template_view *a = &R->s->v[R->s->pa[i]];
			const mcc_template_view *b = &R->s->v[R->s->pb[i]];
			int			m = a->n_cyl < b->n_cyl ? a->n_cyl : b->n_cyl;

			mcc_match_set_probe(w, a);
			for (int k = 0; k < NMETH; k++)
			{
				if (mcc_match_candidate(w, b, methods[k], NULL, &R->sc[k][i], &err) != MCC_OK)
					R->sc[k][i] = -3.0f;
				R->dv[k][i] = a->n_cyl && b->n_cyl ? last_double(w, methods[k], m) : 0.0;
			}
		}
	}
	free(w);
	return NULL;
}

static void
ref_compute(ref *R, const rt_set *s)
{
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int			nth = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int) ncpu;

	memset(R, 0, sizeof(*R));
	R->s = s;
	pthread_mutex_init(&R->lock, NULL);
	for (int k = 0; k < NMETH; k++)
	{
		R->sc[k] = malloc(sizeof(float) * (s->npairs + 1));
		R->dv[k] = malloc(sizeof(double) * (s->npairs + 1));
	}
	mcc_job_run_shared(nth, ref_worker, R);
}

static void
ref_free(ref *R)
{
	for (int k = 0; k < NMETH; k++)
	{
		free(R->sc[k]);
		free(R->dv[k]);
	}
}

/* The set's templates as a device gallery (and its geometry), built in pieces. */
typedef struct gal
{
	mcc_soa		soa;
	mcc_gpu_geom geo;
} gal;

static int
gal_build(gal *G, const rt_set *s)
{
	mcc_error	err;

	if (mcc_soa_init(&G->soa, prof, 1024, 65536, &err) != MCC_OK ||
		mcc_gpu_geom_init(&G->geo, 1024, 65536, &err) != MCC_OK)
		return -1;
	for (int t = 0; t < s->n; t++)
		if (mcc_soa_append(&G->soa, &s->v[t], 1000 + t, &err) != MCC_OK ||
			mcc_gpu_geom_append(&G->geo, &s->v[t], &err) != MCC_OK)
			return -1;
	return 0;
}

/* Open a context on ndev partitions of the given devices, upload + appends + attaches. */
static mcc_gpu *
open_gallery(const int *dev, int ndev, const gal *G, int pieces, mcc_error *err)
{
	mcc_gpu    *c = NULL;
	uint32_t	n = G->soa.n_tpl;
	uint32_t	t0 = 0;

	if (mcc_gpu_open(dev, ndev, prof, NULL, &c, err) != MCC_GPU_OK)
		return NULL;
	for (int k = 1; k <= pieces; k++)
	{
		/* uneven pieces, so that tiles are rebuilt by the appends */
		uint32_t	t1 = k == pieces ? n : (uint32_t) ((uint64_t) n * (2 * k - 1) / (2 * pieces)) + 5u * k;
		mcc_soa		p = gd_prefix(&G->soa, t1 < n ? t1 : n);
		mcc_gpu_code rc;

		if (t1 > n)
			t1 = n;
		rc = k == 1 ? mcc_gpu_upload(c, &p, err) : mcc_gpu_append(c, &G->soa, t0, t1, err);
		if (rc == MCC_GPU_OK)
			rc = mcc_gpu_refine_attach(c, &G->soa, &G->geo, t0, t1, err);
		if (rc != MCC_GPU_OK)
		{
			mcc_gpu_close(c);
			return NULL;
		}
		t0 = t1;
	}
	return c;
}

/* The pairs of s, as gallery pairs or as template pairs; probes = every template (views). */
static mcc_gpu_pair *
make_pairs(const rt_set *s, int from, int max_side, int *sel, int *n)
{
	mcc_gpu_pair *p = malloc(sizeof(mcc_gpu_pair) * (s->npairs + 1));

	*n = 0;
	for (int i = 0; i < s->npairs; i++)
	{
		int			a = s->v[s->pa[i]].n_cyl;
		int			b = s->v[s->pb[i]].n_cyl;

		if ((a > b ? a : b) > max_side)
			continue;
		p[*n].probe = (uint32_t) s->pa[i];
		p[*n].cand = (uint32_t) s->pb[i];
		p[*n].from = (uint32_t) from;
		sel[*n] = i;
		(*n)++;
	}
	return p;
}

/*
 * Refine the pairs of s with every method on context c and compare with
 * the reference; one check per method.
 */
static void
check_refine(mcc_gpu *c, const rt_set *s, const ref *R, int from, int max_side, const char *what)
{
	int		   *sel = malloc(sizeof(int) * (s->npairs + 1));
	int			n;
	mcc_gpu_pair *pairs = make_pairs(s, from, max_side, sel, &n);
	float	   *sc = malloc(sizeof(float) * (n + 1));
	double	   *dv = malloc(sizeof(double) * (n + 1));
	mcc_error	err;

	mcc_gpu_refine_debug(c, dv);
	for (int k = 0; k < NMETH; k++)
	{
		mcc_gpu_code rc;
		long		bad = 0;
		long		badd = 0;
		mcc_gpu_refine_timing t;

		for (int i = 0; i < n; i++)
		{
			sc[i] = 12345.0f;	/* poison: every score must be written */
			dv[i] = -7.0;
		}
		rc = mcc_gpu_refine(c, s->v, s->n, s->v, (uint32_t) s->n, pairs, (size_t) n, methods[k], NULL, sc, &err);
		if (!UNIT_CHECK(rc == MCC_GPU_OK, "%s, %s: refine returns ok%s%s", what, mcc_method_name(methods[k]),
						rc ? ": " : "", rc ? err.message : ""))
			continue;
		mcc_gpu_refine_last_timing(c, &t);
		for (int i = 0; i < n; i++)
		{
			int			r = sel[i];
			int			host = s->v[s->pa[r]].n_cyl == 0 || s->v[s->pb[r]].n_cyl == 0;

			if (memcmp(&sc[i], &R->sc[k][r], 4) != 0)
			{
				if (bad < 5)
					printf("#   %s, %s: pair %d (%d x %d cylinders): GPU %.9g, CPU %.9g\n", what,
						   mcc_method_name(methods[k]), r, s->v[s->pa[r]].n_cyl, s->v[s->pb[r]].n_cyl,
						   sc[i], R->sc[k][r]);
				bad++;
			}
			if (!host && methods[k] != MCC_LSS && memcmp(&dv[i], &R->dv[k][r], 8) != 0)
			{
				if (badd < 5)
					printf("#   %s, %s: pair %d (%d x %d cylinders): last set GPU %.17g, CPU %.17g\n", what,
						   mcc_method_name(methods[k]), r, s->v[s->pa[r]].n_cyl, s->v[s->pb[r]].n_cyl,
						   dv[i], R->dv[k][r]);
				badd++;
			}
		}
		UNIT_CHECK(bad == 0 && badd == 0,
				   "%s, %s: %d scores equal mcc_match_candidate's, and the last set's doubles (%zu on the GPU, %d launches, kernel %.3f ms)",
				   what, mcc_method_name(methods[k]), n, t.pairs, t.launches, t.kernel_ms);
	}
	mcc_gpu_refine_debug(c, NULL);
	free(sel);
	free(pairs);
	free(sc);
	free(dv);
}

/* Removed gallery templates score -1; the others keep their scores. */
static void
check_removed(mcc_gpu *c, const rt_set *s, const ref *R)
{
	int		   *sel = malloc(sizeof(int) * (s->npairs + 1));
	int			n;
	mcc_gpu_pair *pairs = make_pairs(s, MCC_GPU_FROM_GALLERY, 256, sel, &n);
	float	   *sc = malloc(sizeof(float) * (n + 1));
	uint8_t    *gone = calloc((size_t) s->n + 1, 1);
	mcc_error	err;
	int			ok = 1;
	int			ngone = 0;

	for (int i = 0; i < n && ngone < 6; i += n / 7 + 1)
		if (!gone[pairs[i].cand])
		{
			ok &= mcc_gpu_remove(c, pairs[i].cand, &err) == MCC_GPU_OK;
			gone[pairs[i].cand] = 1;
			ngone++;
		}
	ok &= mcc_gpu_refine(c, s->v, s->n, NULL, 0, pairs, (size_t) n, MCC_FUSED, NULL, sc, &err) == MCC_GPU_OK;
	for (int i = 0; ok && i < n; i++)
		ok &= gone[pairs[i].cand] ? sc[i] == -1.0f : memcmp(&sc[i], &R->sc[0][sel[i]], 4) == 0;
	UNIT_CHECK(ok, "after %d removals: removed templates score -1, the others are unchanged", ngone);
	free(sel);
	free(pairs);
	free(sc);
	free(gone);
}

/* Errors come back as codes; the context stays usable until a fault. */
static void
check_errors(const int *dev, const gal *G, const rt_set *s)
{
	mcc_error	err;
	mcc_gpu    *c = NULL;
	mcc_gpu_pair p = {0, 1, MCC_GPU_FROM_GALLERY};
	mcc_gpu_pair pv = {0, 1, MCC_GPU_FROM_VIEW};
	float		sc = 0;
	mcc_soa		half = gd_prefix(&G->soa, 10);
	mcc_gpu_code rc;

	UNIT_CHECK(!mcc_gpu_refine_supported(MCC_LSA) && !mcc_gpu_refine_supported(MCC_LSA_DTR) &&
			   !mcc_gpu_refine_supported(MCC_CONSOLIDATION) && mcc_gpu_refine_supported(MCC_FUSED),
			   "lsa, lsa-r, lsa-dtr and consolidation are CPU-only; fused is on the GPU");
	if (mcc_gpu_open(dev, 1, prof, NULL, &c, &err) != MCC_GPU_OK)
	{
		UNIT_CHECK(0, "open: %s", err.message);
		return;
	}
	UNIT_CHECK(mcc_gpu_upload(c, &half, &err) == MCC_GPU_OK, "upload without refinement data");
	rc = mcc_gpu_refine(c, s->v, 1, NULL, 0, &p, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_INVALID, "a gallery template without refinement data is refused: %s", err.message);
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_OK, "candidates given as templates need no gallery data%s%s", rc ? ": " : "",
			   rc ? err.message : "");
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_LSA, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_UNSUPPORTED, "method lsa is refused as unsupported: %s", err.message);
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_CONSOLIDATION, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_UNSUPPORTED, "method consolidation is refused as unsupported: %s", err.message);
	pv.probe = 5;
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_INVALID, "a pair naming a missing probe is refused: %s", err.message);
	pv.probe = 0;
	pv.cand = 2;
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_INVALID, "a pair naming a missing candidate is refused: %s", err.message);
	pv.cand = 1;
	p.cand = 10;
	rc = mcc_gpu_refine(c, s->v, 1, NULL, 0, &p, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_INVALID, "a pair naming a missing gallery template is refused: %s", err.message);
	rc = mcc_gpu_refine_attach(c, &G->soa, &G->geo, 5, 11, &err);
	UNIT_CHECK(rc == MCC_GPU_INVALID, "attaching beyond the gallery is refused: %s", err.message);
	{
		mcc_gpu_geom bad;

		memset(&bad, 0, sizeof(bad));
		mcc_gpu_geom_init(&bad, 4, 64, &err);
		mcc_gpu_geom_append(&bad, &s->v[1], &err);	/* template 1 where the gallery has template 0 */
		rc = s->v[0].n_cyl != s->v[1].n_cyl ? mcc_gpu_refine_attach(c, &half, &bad, 0, 1, &err) : MCC_GPU_INVALID;
		UNIT_CHECK(rc == MCC_GPU_INVALID, "a geometry that disagrees with the gallery is refused: %s", err.message);
		mcc_gpu_geom_free(&bad);
	}
	UNIT_CHECK(mcc_gpu_refine_tune(c, 100, 0, &err) == MCC_GPU_INVALID &&
			   mcc_gpu_refine_tune(c, 128, 1000, &err) == MCC_GPU_INVALID &&
			   mcc_gpu_refine_tune(c, 128, 0, &err) == MCC_GPU_OK, "tuning values are checked");
	/* last: a fault corrupts the context; every call then says so */
	UNIT_CHECK(mcc_gpu_debug_fault(c, &err) == MCC_GPU_OK, "fault armed");
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_STICKY, "a refinement kernel fault is reported as sticky: %s", err.message);
	rc = mcc_gpu_refine(c, s->v, 1, s->v, 2, &pv, 1, MCC_FUSED, NULL, &sc, &err);
	UNIT_CHECK(rc == MCC_GPU_STICKY, "and stays sticky: %s", err.message);
	rc = mcc_gpu_refine_attach(c, &G->soa, &G->geo, 0, 1, &err);
	UNIT_CHECK(rc == MCC_GPU_STICKY, "attach after the fault is sticky too: %s", err.message);
	mcc_gpu_close(c);
}

/*
 * A gallery with more distinct directions than the unit-vector table's
 * hash takes (continuous synthetic angles, about 75,000 cylinders): the
 * entries given once it is full are held by the device of their record
 * only, at indexes of its own (kernels/impl/mcc_gpu_refine_data.cu,
 * attach_copies); scores equal to the CPU's on one and three partitions,
 * attached in pieces.
 */
static void
check_past_hash(const int *devs3)
{
	rt_set		s;
	ref			R;
	gal			G;
	mcc_error	err;
	mcc_gpu    *c;

	memset(&s, 0, sizeof(s));
	rt_add_synth(&s, 700, 1, 977);
	ref_compute(&R, &s);
	if (UNIT_CHECK(gal_build(&G, &s) == 0 && G.soa.n_cyl > 65536 + 4096,
				   "a gallery of %d templates, %u cylinders: past the hash of 65,536 directions",
				   s.n, G.soa.n_cyl))
		for (int np = 1; np <= 3; np += 2)
		{
			if ((c = open_gallery(devs3, np, &G, 5, &err)) == NULL)
			{
				UNIT_CHECK(0, "past the hash, %d partitions: %s", np, err.message);
				continue;
			}
			check_refine(c, &s, &R, MCC_GPU_FROM_GALLERY, 256,
						 np == 1 ? "past the hash, 1 partition" : "past the hash, 3 partitions");
			mcc_gpu_close(c);
		}
	ref_free(&R);
	mcc_soa_free(&G.soa);
	mcc_gpu_geom_free(&G.geo);
	rt_free(&s);
}

int
main(int argc, char **argv)
{
	mcc_error	err;
	int			count;
	int			dev0 = 0;
	int			quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	mcc_gpu    *c = NULL;
	rt_set		s;
	ref			R;
	gal			G;
	const char *data = unit_shared_data();
	int			nfvc = 0;

	prof = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_lss_init();
	if ((count = gdev_probe(argc, argv, prof)) < 0)
		UNIT_CHECK(mcc_gpu_refine_supported(MCC_FUSED) && mcc_gpu_refine_supported(MCC_LSS_DTR),
				   "fused and lss-dtr are GPU methods (the caller asks before opening)");
	if (count <= 0)
		return unit_done();

	/* data */
	memset(&s, 0, sizeof(s));
	rt_add_synth(&s, quick ? 60 : 240, 14, 4242);
	rt_add_sizes(&s, 77, 1);
	if (data)
		for (int db = 1; db <= 4; db++)
		{
			nfvc += rt_add_fvc(&s, data, db, "xyt", 1);
			nfvc += rt_add_fvc(&s, data, db, "ist", 1);
		}
	if (!data || nfvc == 0)
		UNIT_SKIP("FVC2002: ../shared/data is absent (synthetic data only)");
	printf("# %d templates (largest %d cylinders; %d FVC2002 records), %d pairs, %d with a side of 200 or more\n",
		   s.n, rt_max_cyl(&s), nfvc, s.npairs, rt_count_pairs(&s, 200));
	{
		double		t0 = (double) clock();

		ref_compute(&R, &s);
		printf("# CPU reference: %.1f s of CPU time\n", ((double) clock() - t0) / CLOCKS_PER_SEC);
	}
	if (!UNIT_CHECK(gal_build(&G, &s) == 0, "gallery of %d templates with geometry", s.n))
		return unit_done();

	/* one partition: upload + 3 appends, each attached */
	if ((c = open_gallery(&dev0, 1, &G, 4, &err)) != NULL)
	{
		UNIT_CHECK(1, "one partition: upload, 3 appends, 4 attaches");
		check_refine(c, &s, &R, MCC_GPU_FROM_GALLERY, 256, "gallery, 1 partition");
		check_refine(c, &s, &R, MCC_GPU_FROM_VIEW, 256, "templates");
		if (mcc_gpu_refine_tune(c, 64, 64, &err) == MCC_GPU_OK)
		{
			check_refine(c, &s, &R, MCC_GPU_FROM_GALLERY, 129, "gallery, 64 threads, 64 keys in shared memory");
			check_refine(c, &s, &R, MCC_GPU_FROM_VIEW, 129, "templates, 64 threads, 64 keys in shared memory");
		}
		if (mcc_gpu_refine_tune(c, 256, 1024, &err) == MCC_GPU_OK)
			check_refine(c, &s, &R, MCC_GPU_FROM_GALLERY, 256, "gallery, 256 threads, 1024 keys in shared memory");
		mcc_gpu_refine_tune(c, 0, 0, &err);
		check_removed(c, &s, &R);
		{
			mcc_gpu_meminfo mi;
			int			nm = 0;

			if (mcc_gpu_memory(c, &mi, 1, &nm, &err) == MCC_GPU_OK && nm == 1)
				printf("# partition 0: %u templates, %u cylinder slots, gallery %zu B (%.1f B per cylinder with refinement data), scratch %zu B\n",
					   mi.n_tpl, mi.n_cyl, mi.gallery_bytes, (double) mi.gallery_bytes / G.soa.n_cyl, mi.scratch_bytes);
		}
		mcc_gpu_close(c);
	}
	else
		UNIT_CHECK(0, "one partition: %s", err.message);

	/* three partitions (on every device present, or three on device 0) */
	{
		int			devs[3];

		for (int i = 0; i < 3; i++)
			devs[i] = count > 1 ? i % count : 0;
		if ((c = open_gallery(devs, 3, &G, 2, &err)) != NULL)
		{
			check_refine(c, &s, &R, MCC_GPU_FROM_GALLERY, 256, "gallery, 3 partitions");
			check_refine(c, &s, &R, MCC_GPU_FROM_VIEW, 256, "templates, 3 partitions");
			mcc_gpu_close(c);
		}
		else
			UNIT_CHECK(0, "three partitions: %s", err.message);
		check_past_hash(devs);
	}

	check_errors(&dev0, &G, &s);
	ref_free(&R);
	mcc_soa_free(&G.soa);
	mcc_gpu_geom_free(&G.geo);
	rt_free(&s);
	return unit_done();
}
