/*
 * sadbench.c: paper 002's three tests (target 1500/2000/2500 squared,
 * pattern a tenth of its side) with the CPU kernels of mcc_sad.h, and with
 * the GPU kernel when built with -DMCC_WITH_GPU_SAD (kernels/sad.mk).
 *
 *   sadbench [--tests 1,2,3] [--threads 1,N] [--kernel NAME] [--reference]
 *            [--repeat R] [--gpu-only] [--no-gpu]
 *
 * The target is random; the pattern is cut from it at a known place, so
 * every run checks that the best hit is that place with SAD 0. Times are
 * wall clock of a whole search (plan, all positions, top-1), median of R.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcc_sad.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"
#include "../unit/testsort.h"

#ifdef MCC_WITH_GPU_SAD
#include "mcc_sad_gpu.h"

static mcc_sad_gpu *gpu_ctx;
static int	gpu_state;			/* 0 not tried, 1 open, -1 none */

/*
 * The GPU rows of one test: every variant, median of repeat calls after a
 * warm-up, end to end (the call: upload, padding table, kernel, selection,
 * the hit back) and the SAD kernel alone.
 */
static void
sad_gpu_bench_test(int id, const mcc_image *t, const mcc_image *p, uint32_t px, uint32_t py,
				   int repeat, double paper_s)
{
	mcc_error	err;
	char		sizes[32];

	if (gpu_state == 0)
	{
		gpu_state = mcc_sad_gpu_open(0, &gpu_ctx, &err) == MCC_GPU_OK ? 1 : -1;
		if (gpu_state > 0)
			printf("# GPU: %s\n", mcc_sad_gpu_describe(gpu_ctx));
		else
			printf("# no GPU: %s %s\n", err.message, err.detail);
	}
	if (gpu_state < 0)
		return;
	snprintf(sizes, sizeof(sizes), "%u/%u", t->width, p->width);
	for (int v = 0; v < MCC_SAD_GPU_VARIANTS; v++)
	{
		double		tot[16],
					ker[16],
					other[16];
		mcc_sad_gpu_timing tm;
		mcc_sad_hit hit;
		uint32_t	n;
		int			r,
					ran = 0;
		char		name[48];

		for (r = -1; r < repeat && r < 16; r++)
		{
			if (mcc_sad_gpu_search(gpu_ctx, t, p, 1, &hit, &n, NULL, v, NULL, &tm, &err) != MCC_GPU_OK)
			{
				printf("# GPU variant %s: %s\n", mcc_sad_gpu_variant_name(v), err.message);
				break;
			}
			if (n != 1 || hit.sad != 0 || hit.x != px || hit.y != py)
			{
				printf("# GPU variant %s: wrong answer (%u, %u) %llu\n", mcc_sad_gpu_variant_name(v),
					   hit.x, hit.y, (unsigned long long) hit.sad);
				break;
			}
			if (r < 0)
				continue;		/* warm-up */
			tot[r] = tm.total_ms;
			ker[r] = tm.sad_ms;
			other[r] = tm.upload_ms + tm.corr_ms + tm.select_ms + tm.download_ms;
			ran++;
		}
		if (ran == 0)
			continue;
		snprintf(name, sizeof(name), "gpu:%s%s", v == 0 ? "auto=" : "",
				 mcc_sad_gpu_variant_name(v == 0 ? tm.variant : v));
		printf("Test%d  %-11s %-10s %8s %12.4f %12.2f %12s   kernel %.3f ms, rest %.3f ms, %.0f G abs-diff/s\n",
			   id, sizes, name, "-", tsort_median(tot, ran) / 1e3, paper_s, "-", tsort_median(ker, ran), tsort_median(other, ran),
			   (double) (t->width - p->width + 1) * (t->height - p->height + 1) * p->width * p->height /
			   (tsort_median(ker, ran) * 1e6));
		fflush(stdout);
	}
}
#endif

/* Paper 002, Table 1: sequential, OpenMP (8 threads), CUDA seconds. */
static const struct
{
	uint32_t	side,
				pside;
	double		seq,
				omp,
				cuda;
}			paper[3] = {{1500, 150, 33.52, 6.79, 1.09}, {2000, 200, 105.68, 21.47, 3.39},
{2500, 250, 254.50, 51.80, 8.31}};

/* A side x side random image; the pattern is cut at (px, py). */
static void
make_images(uint32_t side, uint32_t pside, mcc_image *t, mcc_image *p, uint32_t *px, uint32_t *py)
{
	uint64_t	s = 0x2545F4914F6CDD1Dull ^ side;

	t->width = t->height = side;
	t->stride = side;
	t->pixels = malloc((size_t) side * side);
	for (size_t i = 0; i < (size_t) side * side; i++)
	{
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		t->pixels[i] = (uint8_t) (s >> 24);
	}
	*px = side / 3 + 7;
	*py = side / 2 + 3;
	p->width = p->height = pside;
	p->stride = side;
	p->pixels = t->pixels + (size_t) *py * side + *px;
}

/*
 * One CPU search; wall seconds (and CPU seconds of all threads into *cpu),
 * or -1 if the answer is wrong.
 */
static double
cpu_run(const mcc_image *t, const mcc_image *p, int kernel, int threads, uint32_t px, uint32_t py,
		double *cpu)
{
	mcc_sad_request req = {t, p, NULL, 1, threads, kernel};
	mcc_sad_hit hit;
	uint32_t	n;
	mcc_error	err;
	double		c0 = tclock_process_cpu_s();
	double		t0 = tclock_wall_s();

	if (mcc_sad_run(&req, &hit, &n, &err) != MCC_OK)
	{
		fprintf(stderr, "sadbench: %s\n", err.message);
		exit(1);
	}
	t0 = tclock_wall_s() - t0;
	*cpu = tclock_process_cpu_s() - c0;
	if (n != 1 || hit.sad != 0 || hit.x != px || hit.y != py)
	{
		fprintf(stderr, "sadbench: wrong answer (%u, %u) sad %llu\n", hit.x, hit.y,
				(unsigned long long) hit.sad);
		return -1;
	}
	return t0;
}

int
main(int argc, char **argv)
{
	int			tests[3] = {1, 2, 3},
				ntests = 3;
	int			threads[8],
				nthreads = 0;
	int			kernel = MCC_SAD_AUTO;
	int			repeat = 3;
	int			reference = 0,
				gpu = 1,
				cpu = 1;
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *kernel_name = NULL;
	const targ_opt opts[] = {
		OPT_INTS("--tests", tests, &ntests, "1,2,3"), OPT_INTS("--threads", threads, &nthreads, "1,N"),
		OPT_STR("--kernel", &kernel_name, "NAME"), OPT_SET("--reference", &reference, 1),
		OPT_INT("--repeat", &repeat, "R"), OPT_SET("--gpu-only", &cpu, 0), OPT_SET("--no-gpu", &gpu, 0), OPT_END
	};

	targ_parse(argc, argv, opts);
	if (repeat < 1)
		repeat = 1;
	if (kernel_name != NULL &&
		((kernel = mcc_sad_kernel_by_name(kernel_name)) < 0 || !mcc_sad_kernel_usable(kernel)))
	{
		fprintf(stderr, "sadbench: kernel %s is not usable here\n", kernel_name);
		return 1;
	}
	if (nthreads == 0)
	{
		threads[nthreads++] = 1;
		if (ncpu > 1)
			threads[nthreads++] = (int) ncpu;
	}
	printf("# sadbench: %ld CPUs online, kernel %s, median of %d\n", ncpu,
		   mcc_sad_kernel_name(kernel == MCC_SAD_AUTO ? mcc_sad_kernel_auto() : kernel), repeat);
	printf("%-6s %-11s %-10s %8s %12s %12s %12s\n", "test", "sizes", "engine", "threads", "seconds",
		   "paper (s)", "CPU-seconds");
	for (int ti = 0; ti < ntests; ti++)
	{
		int			id = tests[ti];
		mcc_image	t,
					p;
		uint32_t	px,
					py;
		char		sizes[32];

		if (id < 1 || id > 3)
			continue;
		make_images(paper[id - 1].side, paper[id - 1].pside, &t, &p, &px, &py);
		snprintf(sizes, sizeof(sizes), "%u/%u", paper[id - 1].side, paper[id - 1].pside);
		if (cpu && reference)
		{
			double		c;
			double		s = cpu_run(&t, &p, MCC_SAD_REFERENCE, 1, px, py, &c);

			printf("Test%d  %-11s %-10s %8d %12.3f %12.2f %12.3f\n", id, sizes, "reference", 1, s,
				   paper[id - 1].seq, c);
			fflush(stdout);
		}
		for (int k = 0; cpu && k < nthreads; k++)
		{
			double		v[16],
						c[16];

			for (int r = 0; r < repeat && r < 16; r++)
				v[r] = cpu_run(&t, &p, kernel, threads[k], px, py, &c[r]);
			printf("Test%d  %-11s %-10s %8d %12.4f %12.2f %12.4f\n", id, sizes,
				   mcc_sad_kernel_name(kernel == MCC_SAD_AUTO ? mcc_sad_kernel_auto() : kernel),
				   threads[k], tsort_median(v, repeat < 16 ? repeat : 16),
				   threads[k] == 1 ? paper[id - 1].seq : paper[id - 1].omp,
				   tsort_median(c, repeat < 16 ? repeat : 16));
			fflush(stdout);
		}
#ifdef MCC_WITH_GPU_SAD
		if (gpu)
			sad_gpu_bench_test(id, &t, &p, px, py, repeat, paper[id - 1].cuda);
#else
		(void) gpu;
#endif
		free(t.pixels);
	}
	return 0;
}
