/*
 * bench_chamfer.c: time per chamfer alignment vs number of observed points
 * (make bench-chamfer), on one CPU thread, on every CPU thread, and on the
 * GPU (PGPU: pipelined; TGPU: traditional) when built with it and a device
 * is present. The workload follows paper 004's semi-synthetic experiments
 * (Sec. 5.1-5.2): a fixed reference set (2D: 200,000 points along roads;
 * 3D: 200,000 points on buildings), observed sets of N points drawn from it
 * with Gaussian noise (0.05% of the extent), mapped by a random transform
 * of the type; plain chamfer objective, hierarchical LM from the centroids
 * (the paper's local fit: the global search of mcc_chamfer_search.h is
 * off), or with --search from the global search's starts (2D).
 *
 * Times exclude the distance transform (the paper's "execution time",
 * Fig. 2), which is built once per reference and reported on its own; GPU
 * times include uploading the distance transform and the points. Each cell
 * is the median of --reps runs (CPU at 10^6 points: one run).
 *
 *   bench_chamfer [--sizes 1000,10000,100000,1000000] [--dims 2,3]
 *                 [--types euclidean,similarity,affine,projective]
 *                 [--threads N] [--reps R] [--no-gpu] [--no-cpu1] [--search]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chamfer_synth.h"
#include "mcc_chamfer.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"
#include "../unit/testsort.h"
#include "mcc_chamfer_gpu.h"

#define N_REF	200000

/*
 * N observed points: reference points drawn uniformly (seeded), noise of
 * sigma per coordinate, mapped by the inverse of m. malloc'd.
 */
static double *
observed(const double *ref, int dim, size_t n, const double *m, double sigma, uint64_t seed)
{
	double	   *p = malloc(n * dim * sizeof(double));
	double		inv[16];
	mcc_rng		r;

	cs_invert(dim + 1, m, inv);
	mcc_rng_seed(&r, mcc_rng_key(seed, 31, dim, n));
	for (size_t i = 0; i < n; i++)
	{
		double		q[3];
		size_t		k = mcc_rng_below(&r, N_REF);

		for (int c = 0; c < dim; c++)
			q[c] = ref[k * dim + c] + sigma * cs_normal(&r);
		mcc_chamfer_map(dim, inv, q, p + i * dim);
	}
	return p;
}

/* One row of results. */
typedef struct row
{
	double		ms;
	double		cpu_ms;			/* calling thread's CPU time (one-thread runs: all the work) */
	double		upload_ms;		/* GPU runs: the reference's upload, part of ms */
	int			iterations;
	int			evaluations;
	double		residual;
	int			ok;
} row;

/* 1: alignments start from the global search (--search); 0: the centroids, as in the paper. */
static int use_search = 0;

/* The options of a timed alignment: a transform type, CPU threads, pipelined LM or not. */
static mcc_chamfer_opts
bench_opts(int type, int threads, int pipelined)
{
	mcc_chamfer_opts o;

	mcc_chamfer_opts_init(&o);
	o.transform = type;
	o.threads = threads;
	o.pipelined = pipelined;
	o.search = use_search;
	return o;
}

/*
 * One alignment with a prepared reference: on the CPU (gpu NULL), or on
 * the GPU after uploading the reference (the upload's time in *upload_ms).
 * 1 on success; a failure is told on stderr.
 */
static int
align_once(mcc_chamfer_gpu *gpu, const mcc_chamfer_ref *rf, const double *obs, size_t n,
		   const mcc_chamfer_opts *o, mcc_chamfer_result *res, double *upload_ms)
{
	mcc_error	err;

	*upload_ms = 0;
#ifdef MCC_CHAMFER_GPU
	if (gpu != NULL)
	{
		double		t0 = tclock_wall_ms();
		mcc_gpu_code c = mcc_chamfer_gpu_set_reference(gpu, rf, &err);

		*upload_ms = tclock_wall_ms() - t0;
		if (c == MCC_GPU_OK)
			c = mcc_chamfer_gpu_align_ref(gpu, rf, obs, n, o, res, &err);
		if (c != MCC_GPU_OK)
			fprintf(stderr, "GPU alignment failed (%d): %s\n", c, err.message);
		return c == MCC_GPU_OK;
	}
#endif
	if (mcc_chamfer_align_ref(rf, obs, n, o, res, &err) == MCC_OK)
		return 1;
	fprintf(stderr, "CPU alignment failed: %s\n", err.message);
	return 0;
}

/* Time reps alignments (align_once) with options o: the medians of each time. */
static row
time_align(mcc_chamfer_gpu *gpu, const mcc_chamfer_ref *rf, const double *obs, size_t n,
		   mcc_chamfer_opts o, int reps)
{
	double		t[64];
	double		c[64];
	double		u[64];
	row			r = {0};

	for (int k = 0; k < reps; k++)
	{
		mcc_chamfer_result res;
		double		t0 = tclock_wall_ms();
		double		c0 = tclock_cpu_ms();

		r.ok = align_once(gpu, rf, obs, n, &o, &res, &u[k]);
		t[k] = tclock_wall_ms() - t0;
		c[k] = tclock_cpu_ms() - c0;
		if (!r.ok)
			return r;
		r.iterations = res.iterations;
		r.evaluations = res.evaluations;
		r.residual = res.residual;
	}
	r.ms = tsort_median(t, reps);
	r.cpu_ms = tsort_median(c, reps);
	r.upload_ms = tsort_median(u, reps);
	return r;
}

/* Options, then one table row per (dim, transform, N). */
int
main(int argc, char **argv)
{
	double		sizes[16] = {1000, 10000, 100000, 1000000};
	int			n_sizes = 4;
	double		dims[2] = {2, 3};
	int			n_dims = 2;
	int			types[4] = {0, 1, 2, 3};
	int			n_types = 4;
	int			reps = 3;
	int			use_gpu = 1;
	int			cpu1 = 1;
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int			threads = ncpu > 0 ? (int) ncpu : 1;
	char		gpu_name[128] = "none";
	const char *type_list = NULL;
	const targ_opt opts[] = {
		OPT_DOUBLES("--sizes", sizes, &n_sizes, "LIST"), OPT_DOUBLES("--dims", dims, &n_dims, "2,3"),
		OPT_STR("--types", &type_list, "LIST"), OPT_INT("--threads", &threads, "N"), OPT_INT("--reps", &reps, "R"),
		OPT_SET("--no-gpu", &use_gpu, 0), OPT_SET("--no-cpu1", &cpu1, 0), OPT_SET("--search", &use_search, 1), OPT_END
	};
#ifdef MCC_CHAMFER_GPU
	mcc_chamfer_gpu *g = NULL;
#endif

	targ_parse(argc, argv, opts);
	if (type_list != NULL)
	{
		/* transform names as mcc_xform_parse reads them; unknown ones passed over */
		n_types = 0;
		for (const char *s = type_list; *s && n_types < 4;)
		{
			size_t		len = strcspn(s, ",");
			int			t = mcc_xform_parse(s, len);

			if (t >= 0)
				types[n_types++] = t;
			s += len + (s[len] == ',');
		}
	}
	if (reps < 1 || reps > 64)
		reps = 3;
#ifdef MCC_CHAMFER_GPU
	if (use_gpu)
	{
		mcc_error	err;
		mcc_gpu_code c = mcc_chamfer_gpu_open(0, &g, &err);

		if (c != MCC_GPU_OK)
		{
			printf("# GPU: skipped (%s)\n", err.message);
			g = NULL;
		}
		else
			snprintf(gpu_name, sizeof(gpu_name), "%s", mcc_chamfer_gpu_device_name(g));
	}
#else
	printf("# GPU: not built (no nvcc)\n");
#endif
	printf("# bench_chamfer: %ld online CPUs, all-threads runs use %d; GPU %s; median of %d\n",
		   ncpu, threads, gpu_name, reps);
	printf("| dim | transform | N | iterations | passes CPU / PGPU | CPU(1) ms | CPU(1) thread CPU ms | "
		   "CPU(%d) ms | GPU PGPU ms | GPU TGPU ms | DT upload ms | CPU(1)/PGPU | CPU(%d)/PGPU |\n",
		   threads, threads);
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	fflush(stdout);
	for (int di = 0; di < n_dims; di++)
	{
		int			dim = (int) dims[di];
		double	   *ref = dim == 2 ? cs_roads_2d(7, N_REF) : cs_buildings_3d(7, N_REF);
		double		E = dim == 2 ? CS_EXTENT_2D : CS_EXTENT_3D;
		mcc_chamfer_opts o;
		mcc_chamfer_ref rf;
		mcc_error	err;
		double		t0 = tclock_wall_ms();

		mcc_chamfer_opts_init(&o);
		if (mcc_chamfer_ref_build(ref, N_REF, dim, &o, &rf, &err) != MCC_OK)
		{
			fprintf(stderr, "reference: %s\n", err.message);
			return 1;
		}
		{
			double		t_dt = tclock_wall_ms() - t0;
			char		shape[64];

			if (dim == 2)
				snprintf(shape, sizeof(shape), "%d x %d", rf.edt.geom.n[0], rf.edt.geom.n[1]);
			else
				snprintf(shape, sizeof(shape), "%d x %d x %d", rf.edt.geom.n[0], rf.edt.geom.n[1],
						 rf.edt.geom.n[2]);
			printf("# %dD reference: %d points, distance transform %s (%zu cells, spacing %.3g), "
				   "built in %.1f ms on one thread (with the normalization)\n", dim, N_REF, shape,
				   rf.edt.cells, rf.edt.geom.h * rf.scale, t_dt);
		}
		for (int ti = 0; ti < n_types; ti++)
			for (int si = 0; si < n_sizes; si++)
			{
				int			type = types[ti];
				size_t		n = (size_t) sizes[si];
				double		m[16];
				double	   *obs;
				row			c1 = {0};
				row			cn;
				row			pg = {0};
				row			tg = {0};
				int			r = n >= 1000000 ? 1 : reps;	/* CPU runs at 1e6 take seconds */

				cs_random_matrix(1000 + si, type, dim, m);
				obs = observed(ref, dim, n, m, 0.0005 * E, 77 + si);
				if (cpu1)
					c1 = time_align(NULL, &rf, obs, n, bench_opts(type, 1, 0), r);
				cn = time_align(NULL, &rf, obs, n, bench_opts(type, threads, 0), r);
#ifdef MCC_CHAMFER_GPU
				if (g != NULL)
				{
					pg = time_align(g, &rf, obs, n, bench_opts(type, 1, 1), reps);
					tg = time_align(g, &rf, obs, n, bench_opts(type, 1, 0), reps);
				}
#endif
				printf("| %dD | %s | %zu | %d | %d / ", dim, mcc_xform_name(type), n, cn.iterations,
					   cn.evaluations);
				if (pg.ok)
					printf("%d | ", pg.evaluations);
				else
					printf("- | ");
				if (c1.ok)
					printf("%.2f | %.2f | ", c1.ms, c1.cpu_ms);
				else
					printf("- | - | ");
				printf("%.2f | ", cn.ms);
				if (pg.ok)
					printf("%.3f | %.3f | %.3f | ", pg.ms, tg.ok ? tg.ms : NAN, pg.upload_ms);
				else
					printf("- | - | - | ");
				if (pg.ok && c1.ok)
					printf("%.1f | ", c1.ms / pg.ms);
				else
					printf("- | ");
				if (pg.ok)
					printf("%.1f |\n", cn.ms / pg.ms);
				else
					printf("- |\n");
				if (pg.ok && (pg.iterations != cn.iterations))
					printf("#   note: GPU took %d iterations, CPU %d\n", pg.iterations, cn.iterations);
				fflush(stdout);
				free(obs);
			}
		mcc_chamfer_ref_free(&rf);
		free(ref);
	}
#ifdef MCC_CHAMFER_GPU
	mcc_chamfer_gpu_close(g);
#endif
	return 0;
}
