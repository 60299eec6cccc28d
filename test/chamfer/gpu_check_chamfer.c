/*
 * gpu_check_chamfer.c: the GPU chamfer evaluator and alignment against the
 * CPU (make gpu-check-chamfer; TAP output). Prints SKIP and succeeds when
 * no CUDA device is usable.
 *
 *   gpu_check_chamfer              compare on device 0
 *   gpu_check_chamfer --no-device  expect a clean "no device" (run with
 *                                  CUDA_VISIBLE_DEVICES= ): no crash, clear codes
 *
 * Tolerances:
 * - evaluation sums, every component of every type, 2D and 3D, with and
 *   without g and H: |gpu - cpu| <= 1e-11 * A, A the sum of the absolute
 *   per-point terms (both are sums of the same bits in different orders);
 *   the inlier count exactly;
 * - alignments, every type, 2D and 3D: the GPU result maps the observed
 *   points within 1e-6 of the extent of the CPU result's, residuals within
 *   1e-6 relative (a rounding difference can move an LM decision, never
 *   far);
 * - pipelined (PGPU) and traditional (TGPU) GPU alignments: the same bits;
 *   two GPU runs: the same bits;
 * - the global search (mcc_chamfer_search.h): the GPU scorer's integer
 *   scores equal the CPU scorer's bit for bit on 4,000 random poses per
 *   pyramid level, and a search with the GPU scorer returns the CPU's
 *   starts bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "chamfer_synth.h"
#include "mcc_chamfer.h"
#include "mcc_chamfer_gpu.h"

#define N_REF		100000
#define N_OBS_STRIDE	1		/* every reference point observed: 100k + outliers */

/* The reference set of a dimension. */
static double *
make_ref(int dim)
{
	return dim == 2 ? cs_roads_2d(3, N_REF) : cs_buildings_3d(3, N_REF);
}

/*
 * CPU and GPU sums for one transform: compare every component against its
 * absolute-term bound. Returns the number of components out of tolerance.
 */
static int
compare_sums(mcc_chamfer_gpu *g, mcc_chamfer_cpu *cpu, const mcc_chamfer_ref *ref,
			 const mcc_chamfer_obs *obs, const mcc_chamfer_xf *xf, int gh, double *worst)
{
	double		c[MCC_CHAMFER_MAX_SUMS];
	double		d[MCC_CHAMFER_MAX_SUMS];
	double		A[MCC_CHAMFER_MAX_SUMS] = {0};
	int			ns = mcc_chamfer_nsums(xf->type, xf->dim);
	int			bad = 0;
	mcc_error	err;

	*worst = HUGE_VAL;
	if (mcc_chamfer_cpu_eval(cpu, xf, gh, c, &err) != MCC_OK ||
		mcc_chamfer_gpu_eval(g, xf, gh, d, &err) != MCC_OK)
	{
		printf("# evaluation failed: %s\n", err.message);
		return ns;
	}
	for (size_t i = 0; i < obs->n; i++)
	{
		double		one[MCC_CHAMFER_MAX_SUMS] = {0};

		mcc_chamfer_point(xf, xf->dim, xf->type, gh, &ref->edt.geom, ref->edt.site, ref->pts,
						  obs->pts + i * obs->dim, one);
		for (int k = 0; k < ns; k++)
			A[k] += fabs(one[k]);
	}
	*worst = 0;
	for (int k = 0; k < ns; k++)
	{
		double		e = fabs(c[k] - d[k]);
		double		rel = A[k] > 0 ? e / A[k] : e;

		if (k == 1 ? c[k] != d[k] : !(e <= 1e-11 * A[k]))
			bad++;
		*worst = fmax(*worst, rel);
	}
	return bad;
}

/* Sums at a few transforms near the truth, every type. */
static void
check_sums(mcc_chamfer_gpu *g, int dim)
{
	double	   *ref = make_ref(dim);
	mcc_chamfer_opts o;
	mcc_chamfer_ref rf;
	mcc_error	err;

	mcc_chamfer_opts_init(&o);
	if (mcc_chamfer_ref_build(ref, N_REF, dim, &o, &rf, &err) != MCC_OK ||
		mcc_chamfer_gpu_set_reference(g, &rf, &err) != MCC_GPU_OK)
	{
		UNIT_CHECK(0, "%dD reference on the GPU: %s", dim, err.message);
		free(ref);
		return;
	}
	for (int type = 0; type < MCC_XFORM_COUNT; type++)
	{
		double		m[16];
		size_t		n_obs;
		size_t		n_clean;
		double	   *obs;
		mcc_chamfer_obs ob;
		mcc_chamfer_cpu *cpu = NULL;

		cs_random_matrix(17 + type, type, dim, m);
		obs = cs_observed(type, ref, N_REF, dim, m, N_OBS_STRIDE, 0, 0.002 * (dim == 2 ? 1000 : 100),
						  N_REF / 20, &n_obs, &n_clean);
		if (mcc_chamfer_obs_prepare(&rf, obs, n_obs, type, &ob, &err) != MCC_OK ||
			mcc_chamfer_gpu_set_observed(g, &ob, &err) != MCC_GPU_OK ||
			mcc_chamfer_cpu_open(&rf, &ob, 1, NULL, &cpu, &err) != MCC_OK)
		{
			UNIT_CHECK(0, "%dD %s: set-up: %s", dim, mcc_xform_name(type), err.message);
			free(obs);
			continue;
		}
		for (int trial = 0; trial < 3; trial++)
			for (int gh = 0; gh <= 1; gh++)
			{
				mcc_chamfer_xf xf;
				double		worst;
				int			bad;
				mcc_rng		r;

				/* the identity of the normalized frames, perturbed */
				memset(&xf, 0, sizeof(xf));
				mcc_rng_seed(&r, mcc_rng_key(5, type, dim, trial));
				xf.type = type;
				xf.dim = dim;
				xf.s = type == MCC_XFORM_SIMILARITY ? mcc_rng_range(&r, 0.95, 1.05) : 1.0;
				xf.tau2 = trial == 2 ? 0.01 : HUGE_VAL;
				for (int i = 0; i <= dim; i++)
					xf.m[i * (dim + 1) + i] = 1.0;
				for (int i = 0; i < dim; i++)
					xf.r[i * dim + i] = 1.0;
				if (dim == 2 && type <= MCC_XFORM_SIMILARITY)
				{
					double		a = mcc_rng_range(&r, -0.1, 0.1);

					xf.r[0] = cos(a);
					xf.r[1] = -sin(a);
					xf.r[2] = sin(a);
					xf.r[3] = cos(a);
				}
				for (int i = 0; i < dim; i++)
				{
					for (int j = 0; j < dim; j++)
						xf.m[i * (dim + 1) + j] = type <= MCC_XFORM_SIMILARITY ? xf.s * xf.r[i * dim + j] :
							xf.m[i * (dim + 1) + j] + mcc_rng_range(&r, -0.05, 0.05);
					xf.m[i * (dim + 1) + dim] = mcc_rng_range(&r, -0.1, 0.1);
				}
				if (type == MCC_XFORM_PROJECTIVE)
					for (int j = 0; j < dim; j++)
						xf.m[dim * (dim + 1) + j] = mcc_rng_range(&r, -0.02, 0.02);
				bad = compare_sums(g, cpu, &rf, &ob, &xf, gh, &worst);
				UNIT_CHECK(bad == 0, "%dD %s, %zu points, %s%s: GPU sums equal the CPU's within "
						   "1e-11 of the absolute terms (worst %.2g; %d components off)",
						   dim, mcc_xform_name(type), ob.n, gh ? "f, g and H" : "f only",
						   trial == 2 ? ", truncated" : "", worst, bad);
			}
		mcc_chamfer_cpu_close(cpu);
		mcc_chamfer_obs_free(&ob);
		free(obs);
	}
	mcc_chamfer_ref_free(&rf);
	free(ref);
}

/* Whole alignments, CPU vs GPU (PGPU and TGPU), every type. */
static void
check_alignments(mcc_chamfer_gpu *g, int dim)
{
	double	   *ref = make_ref(dim);
	double		E = dim == 2 ? CS_EXTENT_2D : CS_EXTENT_3D;

	for (int type = 0; type < MCC_XFORM_COUNT; type++)
	{
		double		m[16];
		size_t		n_obs;
		size_t		n_clean;
		double	   *obs;
		mcc_chamfer_opts o;
		mcc_chamfer_result cpu;
		mcc_chamfer_result pg;
		mcc_chamfer_result pg2;
		mcc_chamfer_result tg;
		mcc_error	err;
		mcc_gpu_code c1;
		mcc_gpu_code c2;
		mcc_gpu_code c3;
		double		tr;

		cs_random_matrix(23 + type, type, dim, m);
		obs = cs_observed(40 + type, ref, N_REF, dim, m, 2, 1, 0.002 * E, N_REF / 40, &n_obs, &n_clean);
		mcc_chamfer_opts_init(&o);
		o.transform = type;
		o.max_distance = 0.01 * E;
		if (mcc_chamfer_align(obs, n_obs, ref, N_REF, dim, &o, &cpu, &err) != MCC_OK)
		{
			UNIT_CHECK(0, "%dD %s: CPU alignment: %s", dim, mcc_xform_name(type), err.message);
			free(obs);
			continue;
		}
		o.pipelined = 1;
		c1 = mcc_chamfer_gpu_align(g, obs, n_obs, ref, N_REF, dim, &o, &pg, &err);
		c2 = mcc_chamfer_gpu_align(g, obs, n_obs, ref, N_REF, dim, &o, &pg2, &err);
		o.pipelined = 0;
		c3 = mcc_chamfer_gpu_align(g, obs, n_obs, ref, N_REF, dim, &o, &tg, &err);
		if (c1 || c2 || c3)
		{
			UNIT_CHECK(0, "%dD %s: GPU alignment: codes %d %d %d: %s", dim, mcc_xform_name(type),
					   c1, c2, c3, err.message);
			free(obs);
			continue;
		}
		tr = cs_transfer_rms(dim, cpu.matrix, pg.matrix, obs, n_obs);
		UNIT_CHECK(tr <= 1e-6 * E && fabs(pg.residual - cpu.residual) <= 1e-6 * cpu.residual,
				   "%dD %s, %zu points: GPU (pipelined) result within %.2g of the CPU's (<= %.0g), "
				   "residual %.9g vs %.9g, %d vs %d iterations, %d vs %d passes", dim,
				   mcc_xform_name(type), n_obs, tr, 1e-6 * E, pg.residual, cpu.residual,
				   pg.iterations, cpu.iterations, pg.evaluations, cpu.evaluations);
		UNIT_CHECK(memcmp(pg.params, tg.params, sizeof(pg.params)) == 0 &&
				   pg.residual == tg.residual && pg.iterations == tg.iterations,
				   "%dD %s: pipelined and traditional GPU LM give the same bits (%d iterations; "
				   "%d vs %d passes)", dim, mcc_xform_name(type), pg.iterations, pg.evaluations,
				   tg.evaluations);
		UNIT_CHECK(memcmp(pg.params, pg2.params, sizeof(pg.params)) == 0 && pg.residual == pg2.residual,
				   "%dD %s: two GPU runs give the same bits", dim, mcc_xform_name(type));
		UNIT_CHECK(cs_transfer_rms(dim, pg.matrix, m, obs, n_clean) <= 0.01 * E,
				   "%dD %s: and the GPU found the truth (transfer error %.3g)", dim,
				   mcc_xform_name(type), cs_transfer_rms(dim, pg.matrix, m, obs, n_clean));
		free(obs);
	}
	free(ref);
}

/*
 * A search with the GPU scorer returns the CPU scorer's starts bit for bit
 * (at least min_starts of them).
 */
static void
same_search(mcc_chamfer_gpu *g, const mcc_chamfer_pyramid *pyr, const double *sample, int ns,
			int min_starts, const char *what)
{
	mcc_chamfer_search_opts so;
	mcc_chamfer_start s1[MCC_CHAMFER_SEARCH_STARTS];
	mcc_chamfer_start s2[MCC_CHAMFER_SEARCH_STARTS];
	mcc_chamfer_search_stats st1;
	mcc_chamfer_search_stats st2;
	mcc_error	err;
	int			n1 = 0;
	int			n2 = 0;

	memset(s1, 0, sizeof(s1));
	memset(s2, 0, sizeof(s2));
	memset(&so, 0, sizeof(so));
	so.min_scale = 0.8;
	so.max_scale = 1.25;
	so.threads = 1;
	mcc_chamfer_search(pyr, sample, ns, &so, s1, &n1, &st1, &err);
	so.score = mcc_chamfer_gpu_score;
	so.score_ctx = g;
	mcc_chamfer_search(pyr, sample, ns, &so, s2, &n2, &st2, &err);
	UNIT_CHECK(n1 >= min_starts && n1 == n2 && memcmp(s1, s2, sizeof(s1)) == 0 && st1.poses == st2.poses,
			   "%s with the GPU scorer returns the CPU's %d starts bit for bit (%ld poses scored)",
			   what, n2, st2.poses);
}

/* The global search's scorer: the CPU's integers, the CPU's starts. */
static void
check_search(mcc_chamfer_gpu *g)
{
	double	   *ref = make_ref(2);
	double		m[16];
	cs_search_case scase;
	mcc_error	err;
	int			np = 4000;
	mcc_chamfer_spose *poses = malloc(sizeof(mcc_chamfer_spose) * np);
	int64_t    *sc = malloc(sizeof(int64_t) * np);
	int64_t    *sg = malloc(sizeof(int64_t) * np);
	mcc_rng		r;

	cs_random_matrix(61, MCC_XFORM_SIMILARITY, 2, m);
	scase.obs = cs_observed(62, ref, N_REF, 2, m, 50, 3, 0.5, 0, &scase.n_obs, &scase.n_clean);
	if (cs_search_case_build(ref, N_REF, &scase, &err) != MCC_OK)
	{
		UNIT_CHECK(0, "search set-up: %s", err.message);
		return;
	}
	mcc_rng_seed(&r, 63);
	for (int i = 0; i < np; i++)
		mcc_chamfer_spose_set(&poses[i], mcc_rng_range(&r, -M_PI, M_PI), mcc_rng_range(&r, -0.3, 0.3),
							  mcc_rng_range(&r, -2, 2), mcc_rng_range(&r, -2, 2));
	for (int l = 0; l < scase.pyr.levels; l++)
	{
		mcc_status	a = mcc_chamfer_score_cpu(NULL, &scase.pyr, l, scase.sample, scase.ns, poses, np, sc, &err);
		mcc_status	b = mcc_chamfer_gpu_score(g, &scase.pyr, l, scase.sample, scase.ns, poses, np, sg, &err);

		UNIT_CHECK(a == MCC_OK && b == MCC_OK && memcmp(sc, sg, sizeof(int64_t) * np) == 0,
				   "search level %d: GPU scores of %d poses x %d points equal the CPU's bit for bit%s%s",
				   l, np, scase.ns, b ? ": " : "", b ? err.message : "");
	}
	same_search(g, &scase.pyr, scase.sample, scase.ns, 1, "a search");
	{
		/* a part (the observed points of one quadrant): the second pass too (mcc_chamfer_search.h) */
		double	   *part = malloc(sizeof(double) * 2 * scase.ob.n);
		double		psample[2 * MCC_CHAMFER_SEARCH_SAMPLE];
		size_t		n_part = 0;

		for (size_t i = 0; part && i < scase.ob.n; i++)
			if (scase.ob.pts[2 * i] < 0 && scase.ob.pts[2 * i + 1] < 0)
			{
				part[2 * n_part] = scase.ob.pts[2 * i];
				part[2 * n_part + 1] = scase.ob.pts[2 * i + 1];
				n_part++;
			}
		same_search(g, &scase.pyr, psample, mcc_chamfer_search_sample(part, n_part, psample),
					MCC_CHAMFER_SEARCH_STARTS_WHOLE + 1,
					"a search of a part (one quadrant of the observed points, both passes)");
		free(part);
	}
	cs_search_case_free(&scase);
	free(ref);
	free(poses);
	free(sc);
	free(sg);
}

/* Bad input and call order through the GPU interface. */
static void
check_errors(mcc_chamfer_gpu *g)
{
	double		sq[] = {0, 0, 10, 0, 10, 10, 0, 10};
	double		bad[] = {0, 0, NAN, 0, 10, 10, 0, 10};
	mcc_chamfer_result res;
	mcc_error	err;
	mcc_gpu_code c;
	mcc_chamfer_xf xf;
	double		sums[MCC_CHAMFER_MAX_SUMS];
	mcc_chamfer_gpu *fresh;

	c = mcc_chamfer_gpu_align(g, bad, 4, sq, 4, 2, NULL, &res, &err);
	UNIT_CHECK(c == MCC_GPU_INVALID && err.status == MCC_ERR_VALUE,
			   "a NaN observed point is INVALID with the core's error: %s", err.message);
	c = mcc_chamfer_gpu_align(g, sq, 4, sq, 4, 4, NULL, &res, &err);
	UNIT_CHECK(c == MCC_GPU_INVALID, "dimension 4 is INVALID: %s", err.message);
	/* earlier checks left sets uploaded in g: a fresh context has none */
	if (mcc_chamfer_gpu_open(0, &fresh, &err) != MCC_GPU_OK)
	{
		UNIT_CHECK(0, "a second context opens: %s", err.message);
		return;
	}
	memset(&xf, 0, sizeof(xf));
	xf.dim = 2;
	mcc_error_clear(&err);
	UNIT_CHECK(mcc_chamfer_gpu_eval(fresh, &xf, 1, sums, &err) != MCC_OK,
			   "evaluating without uploaded sets is refused: %s", err.message);
	mcc_chamfer_gpu_close(fresh);
}

/* --no-device mode, or every comparison on device 0; TAP on stdout. */
int
main(int argc, char **argv)
{
	int			no_device = argc > 1 && strcmp(argv[1], "--no-device") == 0;
	int			count = 0;
	mcc_error	err;
	mcc_gpu_code c = mcc_chamfer_gpu_device_count(&count, &err);
	mcc_chamfer_gpu *g = NULL;

	if (no_device)
	{
		UNIT_CHECK((c == MCC_GPU_NO_DEVICE || c == MCC_GPU_NO_DRIVER) && count == 0,
				   "no visible device: device_count says %s (%s)",
				   c == MCC_GPU_NO_DRIVER ? "no driver" : c == MCC_GPU_NO_DEVICE ?
				   "no device" : "something else", err.message);
		c = mcc_chamfer_gpu_open(0, &g, &err);
		UNIT_CHECK((c == MCC_GPU_NO_DEVICE || c == MCC_GPU_NO_DRIVER) && g == NULL,
				   "opening a context fails cleanly: %s", err.message);
		return unit_done();
	}
	if (c != MCC_GPU_OK)
	{
		printf("SKIP gpu-check-chamfer: no usable CUDA device (%s)\n", err.message);
		UNIT_SKIP("no usable CUDA device: %s", err.message);
		return unit_done();
	}
	if (mcc_chamfer_gpu_open(0, &g, &err) != MCC_GPU_OK)
	{
		UNIT_CHECK(0, "open device 0: %s", err.message);
		return unit_done();
	}
	printf("# device: %s\n", mcc_chamfer_gpu_device_name(g));
	for (int dim = 2; dim <= 3; dim++)
		check_sums(g, dim);
	for (int dim = 2; dim <= 3; dim++)
		check_alignments(g, dim);
	check_search(g);
	check_errors(g);
	mcc_chamfer_gpu_close(g);
	return unit_done();
}
