/*
 * dp2dbench.c: speed of elastic matching (paper 003) at 85 x 85, 128 x 128
 * and 256 x 256: time per pair on one CPU thread, on all threads (one pair,
 * rows shared) and batched pairs/s on all threads; with the GPU build
 * (make bench-dp2d where nvcc exists, -DMCC_DP2D_BENCH_GPU) also the GPU's
 * time for one pair per call and batched pairs/s. Each figure is for the
 * distance alone and with back-tracing, warp and differences ("+warp",
 * what verification needs). Work does not depend on the pixels.
 *
 *   dp2dbench [--sizes 85,128,256] [--seconds S] [--threads T] [--kernel NAME]
 *
 * NAME: a CPU kernel (auto, reference, generic, avx2, avx512; default auto).
 * S (default 1) is the least time each measurement runs for. Times are
 * wall clock; the one-thread column also gives the thread's CPU time.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcc_dp2d.h"
#include "mcc_rng.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"

#ifdef MCC_DP2D_BENCH_GPU
#include "mcc_dp2d_gpu.h"
#endif

static double min_seconds = 1.0;
static int cpu_kernel = MCC_DP2D_AUTO;

static void
die(const char *what, const mcc_error *err)
{
	fprintf(stderr, "dp2dbench: %s: %s\n", what, err->message);
	exit(1);
}

/*
 * Seconds per pair, one pair per call on `threads` threads, repeated for
 * min_seconds; *cpu (if not NULL) gets the calling thread's CPU time per
 * pair, which other jobs on the machine do not inflate (with one thread
 * the work runs in the calling thread).
 */
static double
cpu_per_pair(const mcc_image *a, const mcc_image *b, int threads, int flags, uint8_t *warped,
			 double *cpu)
{
	const mcc_image *pa[1] = {a},
			   *pb[1] = {b};
	mcc_dp2d_out o;
	mcc_dp2d_request req = {1, pa, pb, &o, flags, threads, cpu_kernel};
	mcc_error	err;
	double		t0 = tclock_wall_s(),
				c0 = tclock_cpu_s(),
				t;
	int			n = 0;

	memset(&o, 0, sizeof(o));
	o.warped = warped;
	do
	{
		if (mcc_dp2d_run(&req, &err) != MCC_OK)
			die("CPU match", &err);
		n++;
		t = tclock_wall_s() - t0;
	} while (t < min_seconds);
	if (cpu)
		*cpu = (tclock_cpu_s() - c0) / n;
	return t / n;
}

/* Pairs per second of a batch of npairs pairs on `threads` threads. */
static double
cpu_batch(const mcc_image *a, const mcc_image *b, uint32_t npairs, int threads, int flags)
{
	const mcc_image **pa = malloc(npairs * sizeof(*pa)),
			  **pb = malloc(npairs * sizeof(*pb));
	mcc_dp2d_out *o = calloc(npairs, sizeof(mcc_dp2d_out));
	mcc_dp2d_request req = {npairs, pa, pb, o, flags, threads, cpu_kernel};
	mcc_error	err;
	double		t0;

	for (uint32_t p = 0; p < npairs; p++)
	{
		pa[p] = a;
		pb[p] = b;
	}
	t0 = tclock_wall_s();
	if (mcc_dp2d_run(&req, &err) != MCC_OK)
		die("CPU batch", &err);
	t0 = tclock_wall_s() - t0;
	free(pa);
	free(pb);
	free(o);
	return npairs / t0;
}

#ifdef MCC_DP2D_BENCH_GPU
/* Seconds for npairs pairs of one a and one b image in one GPU call (best of reps). */
static double
gpu_batch(mcc_dp2d_gpu *g, const mcc_image *a, const mcc_image *b, uint32_t npairs, int flags,
		  int reps)
{
	uint32_t   *pa = calloc(npairs, sizeof(uint32_t)),
			   *pb = calloc(npairs, sizeof(uint32_t));
	uint64_t   *cost = malloc(npairs * sizeof(uint64_t)),
			   *diff = malloc(npairs * sizeof(uint64_t));
	mcc_dp2d_gpu_batch bt;
	mcc_error	err;
	double		best = 1e30;

	memset(&bt, 0, sizeof(bt));
	bt.wa = a->width;
	bt.ha = a->height;
	bt.wb = b->width;
	bt.hb = b->height;
	bt.na = bt.nb = 1;
	bt.a = a->pixels;
	bt.b = b->pixels;
	bt.npairs = npairs;
	bt.pair_a = pa;
	bt.pair_b = pb;
	bt.flags = flags;
	bt.cost = cost;
	bt.differences = flags ? diff : NULL;
	for (int r = 0; r < reps; r++)
	{
		double		t0 = tclock_wall_s();

		if (mcc_dp2d_gpu_run(g, &bt, NULL, &err) != MCC_GPU_OK)
			die("GPU run", &err);
		t0 = tclock_wall_s() - t0;
		if (t0 < best)
			best = t0;
	}
	free(pa);
	free(pb);
	free(cost);
	free(diff);
	return best;
}
#endif

int
main(int argc, char **argv)
{
	int			sizes[8] = {85, 128, 256};
	int			nsizes = 3;
	long		nproc = sysconf(_SC_NPROCESSORS_ONLN);
	int			threads = nproc < 1 ? 1 : nproc > MCC_DP2D_MAX_THREADS ? MCC_DP2D_MAX_THREADS : (int) nproc;
	mcc_rng		r;
	const char *gpu_name = NULL;
	const char *kernel = NULL;
	const targ_opt opts[] = {
		OPT_INTS("--sizes", sizes, &nsizes, "85,128,256"), OPT_DOUBLE("--seconds", &min_seconds, "S"),
		OPT_INT("--threads", &threads, "T"), OPT_STR("--kernel", &kernel, "NAME"), OPT_END
	};
#ifdef MCC_DP2D_BENCH_GPU
	mcc_dp2d_gpu *g = NULL;
	mcc_error	err;
#endif

	targ_parse(argc, argv, opts);
	if (kernel != NULL &&
		((cpu_kernel = mcc_dp2d_kernel_by_name(kernel)) < 0 || !mcc_dp2d_kernel_usable(cpu_kernel)))
	{
		fprintf(stderr, "dp2dbench: kernel %s is unknown or not usable here\n", kernel);
		return 2;
	}
#ifdef MCC_DP2D_BENCH_GPU
	if (mcc_dp2d_gpu_open(-1, &g, &err) == MCC_GPU_OK)
		gpu_name = mcc_dp2d_gpu_name(g);
	else
		printf("# GPU: none (%s)\n", err.message);
#endif
	printf("# elastic matching (paper 003), CPU kernel %s, %d threads%s%s\n",
		   mcc_dp2d_kernel_name(cpu_kernel == MCC_DP2D_AUTO ? mcc_dp2d_kernel_auto() : cpu_kernel), threads, gpu_name ? ", GPU " : "",
		   gpu_name ? gpu_name : "");
	printf("| size | what | CPU 1 thread, ms/pair (thread CPU time) | CPU %d threads, 1 pair, ms | CPU %d threads, batched pairs/s | GPU 1 pair/call, ms | GPU batched pairs/s (pairs per call) |\n",
		   threads, threads);
	printf("|---|---|---|---|---|---|---|\n");
	mcc_rng_seed(&r, 85);
	for (int s = 0; s < nsizes; s++)
	{
		uint32_t	n = sizes[s];
		mcc_image	a = {n, n, n, malloc((size_t) n * n)},
					b = {n, n, n, malloc((size_t) n * n)};
		uint8_t    *warped = malloc((size_t) n * n);

		for (size_t q = 0; q < (size_t) n * n; q++)
		{
			a.pixels[q] = (uint8_t) mcc_rng_below(&r, 256);
			b.pixels[q] = (uint8_t) mcc_rng_below(&r, 256);
		}
		for (int flags = 0; flags <= MCC_DP2D_WARP; flags += MCC_DP2D_WARP)
		{
			double		c1;
			double		t1 = cpu_per_pair(&a, &b, 1, flags, warped, &c1);
			double		tt = cpu_per_pair(&a, &b, threads, flags, warped, NULL);
			uint32_t	nb = (uint32_t) (min_seconds / (t1 / threads)) + 1;
			double		cps;
			char		gpu1[64] = "n/a",
						gpub[64] = "n/a";

			if (nb < (uint32_t) threads * 2)
				nb = (uint32_t) threads * 2;
			cps = cpu_batch(&a, &b, nb, threads, flags);
#ifdef MCC_DP2D_BENCH_GPU
			if (g)
			{
				uint32_t	np = 64;
				double		t,
							tsum = 0;
				int			reps = 0;

				gpu_batch(g, &a, &b, 1, flags, 1);	/* warm-up, allocations */
				while (tsum < min_seconds && reps < 10000)
				{
					tsum += gpu_batch(g, &a, &b, 1, flags, 1);
					reps++;
				}
				snprintf(gpu1, sizeof(gpu1), "%.3f", 1e3 * tsum / reps);
				/* grow the batch until a call takes at least half of min_seconds */
				for (;;)
				{
					t = gpu_batch(g, &a, &b, np, flags, 1);
					if (t >= min_seconds / 2 || np >= (1u << 20))
						break;
					np *= 2;
				}
				t = gpu_batch(g, &a, &b, np, flags, 3);
				snprintf(gpub, sizeof(gpub), "%.0f (%u)", np / t, np);
			}
#endif
			printf("| %ux%u | %s | %.3f (%.3f) | %.3f | %.1f | %s | %s |\n", n, n,
				   flags ? "distance + warp" : "distance", 1e3 * t1, 1e3 * c1, 1e3 * tt, cps, gpu1,
				   gpub);
			fflush(stdout);
		}
		free(a.pixels);
		free(b.pixels);
		free(warped);
	}
#ifdef MCC_DP2D_BENCH_GPU
	mcc_dp2d_gpu_close(g);
#endif
	return 0;
}
