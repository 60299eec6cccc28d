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

#ifdef MCC_WITH_GPU_SAD
#include "mcc_sad_gpu.h"
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

/* Monotonic seconds. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Median of n doubles (sorts them). */
static double
median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--)
		{
			double		t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

/* One CPU search; seconds, or -1 if the answer is wrong. */
static double
cpu_run(const mcc_image *t, const mcc_image *p, int kernel, int threads, uint32_t px, uint32_t py)
{
	mcc_sad_request req = {t, p, NULL, 1, threads, kernel};
	mcc_sad_hit hit;
	uint32_t	n;
	mcc_error	err;
	double		t0 = now();

	if (mcc_sad_run(&req, &hit, &n, &err) != MCC_OK)
	{
		fprintf(stderr, "sadbench: %s\n", err.message);
		exit(1);
	}
	t0 = now() - t0;
	if (n != 1 || hit.sad != 0 || hit.x != px || hit.y != py)
	{
		fprintf(stderr, "sadbench: wrong answer (%u, %u) sad %llu\n", hit.x, hit.y,
				(unsigned long long) hit.sad);
		return -1;
	}
	return t0;
}

/* Parse "1,2,3" into v; returns the count. */
static int
parse_list(const char *s, int *v, int max)
{
	int			n = 0;

	while (*s && n < max)
	{
		v[n++] = atoi(s);
		s = strchr(s, ',');
		if (!s)
			break;
		s++;
	}
	return n;
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

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--tests") == 0 && i + 1 < argc)
			ntests = parse_list(argv[++i], tests, 3);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = parse_list(argv[++i], threads, 8);
		else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc)
		{
			kernel = mcc_sad_kernel_by_name(argv[++i]);
			if (kernel < 0 || !mcc_sad_kernel_usable(kernel))
			{
				fprintf(stderr, "sadbench: kernel %s is not usable here\n", argv[i]);
				return 1;
			}
		}
		else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
			repeat = atoi(argv[++i]) < 1 ? 1 : atoi(argv[i]);
		else if (strcmp(argv[i], "--reference") == 0)
			reference = 1;
		else if (strcmp(argv[i], "--no-gpu") == 0)
			gpu = 0;
		else if (strcmp(argv[i], "--gpu-only") == 0)
			cpu = 0;
		else
		{
			fprintf(stderr, "usage: sadbench [--tests 1,2,3] [--threads 1,N] [--kernel NAME] "
					"[--reference] [--repeat R] [--gpu-only] [--no-gpu]\n");
			return 2;
		}
	}
	if (nthreads == 0)
	{
		threads[nthreads++] = 1;
		if (ncpu > 1)
			threads[nthreads++] = (int) ncpu;
	}
	printf("# sadbench: %ld CPUs online, kernel %s, median of %d\n", ncpu,
		   mcc_sad_kernel_name(kernel == MCC_SAD_AUTO ? mcc_sad_kernel_auto() : kernel), repeat);
	printf("%-6s %-11s %-10s %8s %12s %12s\n", "test", "sizes", "engine", "threads", "seconds", "paper (s)");
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
			double		s = cpu_run(&t, &p, MCC_SAD_REFERENCE, 1, px, py);

			printf("Test%d  %-11s %-10s %8d %12.3f %12.2f\n", id, sizes, "reference", 1, s, paper[id - 1].seq);
			fflush(stdout);
		}
		for (int k = 0; cpu && k < nthreads; k++)
		{
			double		v[16];

			for (int r = 0; r < repeat && r < 16; r++)
				v[r] = cpu_run(&t, &p, kernel, threads[k], px, py);
			printf("Test%d  %-11s %-10s %8d %12.4f %12.2f\n", id, sizes,
				   mcc_sad_kernel_name(kernel == MCC_SAD_AUTO ? mcc_sad_kernel_auto() : kernel),
				   threads[k], median(v, repeat < 16 ? repeat : 16),
				   threads[k] == 1 ? paper[id - 1].seq : paper[id - 1].omp);
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
