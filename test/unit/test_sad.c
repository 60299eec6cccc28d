/*
 * test_sad.c: the SAD search of mcc_sad.h.
 *
 * Every kernel usable on this CPU and every thread count must give the map
 * of a naive four-loop SAD written here (independently of src/core), and
 * the top-k of sorting that map by (SAD, y, x). Sizes cover odd widths,
 * widths around each vector width, 1-pixel and full-size patterns.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_sad.h"
#include "testimage.h"
#include "unit.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* xorshift64*: the test's own random numbers. */
static uint32_t
rnd(void)
{
	return ti_rnd(&rng_state);
}

/* A w x h image with random pixels (levels distinct values) and some stride slack. */
static mcc_image
random_image(uint32_t w, uint32_t h, int levels)
{
	mcc_image	img;

	img.width = w;
	img.height = h;
	img.stride = w + rnd() % 5;
	img.pixels = malloc(img.stride * h + 1);
	for (size_t i = 0; i < img.stride * h; i++)
		img.pixels[i] = (uint8_t) (levels >= 256 ? rnd() & 255 : (rnd() % levels) * (255 / (levels - 1)));
	return img;
}

/* Naive SAD map, written independently of src/core. */
static uint64_t *
naive_map(const mcc_image *t, const mcc_image *p, uint32_t *nx, uint32_t *ny)
{
	uint64_t   *m;

	*nx = t->width - p->width + 1;
	*ny = t->height - p->height + 1;
	m = malloc(sizeof(uint64_t) * *nx * *ny);
	for (uint32_t y = 0; y < *ny; y++)
		for (uint32_t x = 0; x < *nx; x++)
		{
			uint64_t	s = 0;

			for (uint32_t r = 0; r < p->height; r++)
				for (uint32_t c = 0; c < p->width; c++)
				{
					int			a = t->pixels[(y + r) * t->stride + x + c];
					int			b = p->pixels[r * p->stride + c];

					s += (uint64_t) (a > b ? a - b : b - a);
				}
			m[(size_t) y * *nx + x] = s;
		}
	return m;
}

/* qsort by (sad, y, x), the hit order. */
static int
cmp_hit(const void *a, const void *b)
{
	return mcc_sad_hit_cmp(a, b);
}

/* The k best hits of a map by sorting all of it. */
static mcc_sad_hit *
sorted_hits(const uint64_t *m, uint32_t nx, uint32_t ny)
{
	mcc_sad_hit *all = malloc(sizeof(mcc_sad_hit) * nx * ny);

	for (uint32_t y = 0; y < ny; y++)
		for (uint32_t x = 0; x < nx; x++)
		{
			all[(size_t) y * nx + x].sad = m[(size_t) y * nx + x];
			all[(size_t) y * nx + x].x = x;
			all[(size_t) y * nx + x].y = y;
		}
	qsort(all, (size_t) nx * ny, sizeof(mcc_sad_hit), cmp_hit);
	return all;
}

/* Run one request; 1 if map and hits equal the expected ones. */
static int
run_matches(const mcc_image *t, const mcc_image *p, int kernel, int threads, uint32_t k,
			const uint64_t *want_map, const mcc_sad_hit *want_hits, uint32_t npos, char *why,
			size_t whylen)
{
	uint64_t   *map = malloc(sizeof(uint64_t) * npos);
	mcc_sad_hit *hits = malloc(sizeof(mcc_sad_hit) * (k + 1));
	mcc_sad_request req = {t, p, map, k, threads, kernel};
	mcc_error	err;
	uint32_t	n = 12345;
	uint32_t	want_n = k < npos ? k : npos;
	int			ok = 1;

	memset(map, 0xAB, sizeof(uint64_t) * npos);
	if (mcc_sad_run(&req, hits, &n, &err) != MCC_OK)
	{
		snprintf(why, whylen, "error: %.150s", err.message);
		ok = 0;
	}
	else if (memcmp(map, want_map, sizeof(uint64_t) * npos) != 0)
	{
		for (uint32_t i = 0; i < npos; i++)
			if (map[i] != want_map[i])
			{
				snprintf(why, whylen, "map[%u] = %llu, want %llu", i,
						 (unsigned long long) map[i], (unsigned long long) want_map[i]);
				break;
			}
		ok = 0;
	}
	else if (n != want_n || memcmp(hits, want_hits, sizeof(mcc_sad_hit) * n) != 0)
	{
		snprintf(why, whylen, "%u hits, want %u; first (%llu,%u,%u) want (%llu,%u,%u)", n, want_n,
				 (unsigned long long) hits[0].sad, hits[0].x, hits[0].y,
				 (unsigned long long) want_hits[0].sad, want_hits[0].x, want_hits[0].y);
		ok = 0;
	}
	free(map);
	free(hits);
	return ok;
}

/* Every usable kernel and several thread counts against the naive map. */
static void
test_random_sizes(void)
{
	static const uint32_t pw[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129};
	static const int threads[] = {1, 2, 3, 5};
	int			kernels[MCC_SAD_KERNELS];
	int			nk = 0;

	for (int k = MCC_SAD_REFERENCE; k < MCC_SAD_KERNELS; k++)
		if (mcc_sad_kernel_usable(k))
			kernels[nk++] = k;
	UNIT_CHECK(nk >= 1 && kernels[0] == MCC_SAD_REFERENCE, "%d kernels usable here (auto = %s)", nk,
			   mcc_sad_kernel_name(mcc_sad_kernel_auto()));
	for (size_t i = 0; i < sizeof(pw) / sizeof(pw[0]); i++)
	{
		uint32_t	w = pw[i];
		uint32_t	h = 1 + rnd() % (i % 2 ? 40 : 9);
		uint32_t	tw = w + rnd() % 23;
		uint32_t	th = h + rnd() % 14;
		mcc_image	t = random_image(tw, th, 256);
		mcc_image	p = random_image(w, h, 256);
		uint32_t	nx,
					ny;
		uint64_t   *want = naive_map(&t, &p, &nx, &ny);
		mcc_sad_hit *hits = sorted_hits(want, nx, ny);
		uint32_t	k = 1 + rnd() % 40;
		int			bad = 0;
		char		why[200] = "";

		for (int a = 0; a < nk; a++)
			for (size_t b = 0; b < sizeof(threads) / sizeof(threads[0]); b++)
				if (!run_matches(&t, &p, kernels[a], threads[b], k, want, hits, nx * ny, why, sizeof(why)))
				{
					bad++;
					printf("# %s, %d threads: %s\n", mcc_sad_kernel_name(kernels[a]), threads[b], why);
				}
		UNIT_CHECK(bad == 0, "%ux%u in %ux%u, k = %u: every kernel and thread count gives the naive map and top-k",
				   w, h, tw, th, k);
		free(want);
		free(hits);
		free(t.pixels);
		free(p.pixels);
	}
}

/* Equal-size images (one position), 1-pixel patterns, a bigger image. */
static void
test_shapes(void)
{
	static const struct
	{
		uint32_t	tw,
					th,
					w,
					h;
	}			cases[] = {{1, 1, 1, 1}, {64, 1, 64, 1}, {65, 3, 65, 3}, {130, 7, 130, 7},
	{5, 40, 1, 1}, {200, 3, 1, 3}, {3, 3, 3, 1}, {161, 97, 37, 21}, {300, 41, 150, 5}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		mcc_image	t = random_image(cases[i].tw, cases[i].th, 256);
		mcc_image	p = random_image(cases[i].w, cases[i].h, 256);
		uint32_t	nx,
					ny;
		uint64_t   *want = naive_map(&t, &p, &nx, &ny);
		mcc_sad_hit *hits = sorted_hits(want, nx, ny);
		int			bad = 0;
		char		why[200] = "";

		for (int kern = MCC_SAD_REFERENCE; kern < MCC_SAD_KERNELS; kern++)
			if (mcc_sad_kernel_usable(kern))
				for (int th = 1; th <= 4; th += 3)
					if (!run_matches(&t, &p, kern, th, 7, want, hits, nx * ny, why, sizeof(why)))
					{
						bad++;
						printf("# %s, %d threads: %s\n", mcc_sad_kernel_name(kern), th, why);
					}
		UNIT_CHECK(bad == 0, "pattern %ux%u in target %ux%u: all kernels agree with the naive map",
				   cases[i].w, cases[i].h, cases[i].tw, cases[i].th);
		free(want);
		free(hits);
		free(t.pixels);
		free(p.pixels);
	}
}

/* Ties: equal SADs come out by row, then column, whatever the threads. */
static void
test_ties(void)
{
	mcc_image	t = random_image(40, 30, 2),
				p;
	uint32_t	nx,
				ny;
	mcc_sad_hit hits[50];
	uint32_t	n;
	mcc_error	err;
	int			ok = 1;

	/* a constant target and pattern: every SAD is equal */
	memset(t.pixels, 9, t.stride * t.height);
	p = random_image(6, 4, 256);
	for (uint32_t y = 0; y < 4; y++)
		memset(p.pixels + y * p.stride, 13, 6);
	for (int kern = MCC_SAD_REFERENCE; kern < MCC_SAD_KERNELS; kern++)
		for (int th = 1; th <= 3; th++)
		{
			mcc_sad_request req = {&t, &p, NULL, 50, th, kern};

			if (!mcc_sad_kernel_usable(kern))
				continue;
			if (mcc_sad_run(&req, hits, &n, &err) != MCC_OK || n != 50)
				ok = 0;
			for (uint32_t i = 0; i < n && ok; i++)
				if (hits[i].sad != 4 * 24 || hits[i].y != i / 35 || hits[i].x != i % 35)
					ok = 0;
		}
	UNIT_CHECK(ok, "all-equal SADs: the first 50 positions in row-major order");

	/* a periodic target: the pattern occurs exactly every 8 pixels */
	for (uint32_t y = 0; y < t.height; y++)
		for (uint32_t x = 0; x < t.width; x++)
			t.pixels[y * t.stride + x] = (uint8_t) (((x % 8) * 31 + (y % 8) * 7) & 255);
	for (uint32_t y = 0; y < 4; y++)
		for (uint32_t x = 0; x < 6; x++)
			p.pixels[y * p.stride + x] = t.pixels[(y + 3) * t.stride + x + 2];
	mcc_sad_positions(&t, &p, &nx, &ny, &err);
	{
		mcc_sad_request req = {&t, &p, NULL, 20, 3, MCC_SAD_AUTO};
		uint32_t	expect = 0;

		ok = mcc_sad_run(&req, hits, &n, &err) == MCC_OK && n == 20;
		/* zeros at x = 2 + 8i, y = 3 + 8j, in row-major order */
		for (uint32_t y = 3; y < ny && ok; y += 8)
			for (uint32_t x = 2; x < nx && ok; x += 8)
			{
				if (hits[expect].sad != 0 || hits[expect].x != x || hits[expect].y != y)
					ok = 0;
				expect++;
			}
		ok = ok && hits[expect].sad > 0;
		UNIT_CHECK(ok, "periodic target: the %u exact occurrences first, by row then column", expect);
	}
	free(t.pixels);
	free(p.pixels);
}

/* A pattern cut out of the target is found there with SAD 0; noise keeps it best. */
static void
test_cut_and_noise(void)
{
	mcc_image	t = random_image(300, 200, 256);
	mcc_image	p = random_image(40, 30, 256);
	mcc_sad_hit hits[3];
	uint32_t	n;
	mcc_error	err;
	mcc_sad_request req = {&t, &p, NULL, 3, 2, MCC_SAD_AUTO};
	uint64_t	noise = 0;

	for (uint32_t y = 0; y < 30; y++)
		memcpy(p.pixels + y * p.stride, t.pixels + (y + 111) * t.stride + 217, 40);
	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_OK && n == 3 && hits[0].sad == 0 &&
			   hits[0].x == 217 && hits[0].y == 111 && hits[1].sad > 0,
			   "cut pattern found at (217, 111) with SAD 0");
	for (uint32_t y = 0; y < 30; y++)
		for (uint32_t x = 0; x < 40; x++)
		{
			uint8_t    *px = p.pixels + y * p.stride + x;
			int			d = (int) (rnd() % 21) - 10;
			int			v = *px + d;

			v = v < 0 ? 0 : v > 255 ? 255 : v;
			noise += (uint64_t) (v > *px ? v - *px : *px - v);
			*px = (uint8_t) v;
		}
	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_OK && hits[0].x == 217 && hits[0].y == 111 &&
			   hits[0].sad == noise && mcc_sad_at(&t, &p, 217, 111) == noise,
			   "noisy copy (+-10) found at (217, 111) with SAD = the noise added (%llu)",
			   (unsigned long long) noise);
	free(t.pixels);
	free(p.pixels);
}

/* Errors: pattern too large, k too large, bad thread count, unknown kernel. */
static void
test_errors(void)
{
	mcc_image	t = random_image(20, 10, 256);
	mcc_image	p = random_image(21, 3, 256);
	mcc_image	q = random_image(5, 11, 256);
	mcc_sad_hit hits[1];
	uint32_t	n;
	mcc_error	err;
	mcc_sad_request req = {&t, &p, NULL, 1, 1, MCC_SAD_AUTO};

	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_ERR_VALUE, "wider pattern: %s", err.message);
	req.pattern = &q;
	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_ERR_VALUE, "taller pattern: %s", err.detail);
	q.height = 3;
	req.k = MCC_SAD_MAX_K + 1;
	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_ERR_LIMIT, "k over the limit: %s", err.message);
	req.k = 1;
	req.threads = 0;
	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_ERR_VALUE, "0 threads: %s", err.message);
	req.threads = 1;
	req.kernel = 99;
	UNIT_CHECK(mcc_sad_run(&req, hits, &n, &err) == MCC_ERR_VALUE, "unknown kernel: %s", err.message);
	req.kernel = MCC_SAD_AUTO;
	req.k = 0;
	n = 7;
	UNIT_CHECK(mcc_sad_run(&req, NULL, &n, &err) == MCC_OK && n == 0, "k = 0: no hits");
	UNIT_CHECK(mcc_sad_kernel_by_name("avx2") == MCC_SAD_AVX2 && mcc_sad_kernel_by_name("x") == -1 &&
			   mcc_sad_kernel_by_name("reference") == MCC_SAD_REFERENCE, "kernel names");
	free(t.pixels);
	free(p.pixels);
	free(q.pixels);
}

/* Jobs: wait, progress, abort before the end, then a job that completes. */
static void
test_jobs(void)
{
	mcc_image	t = random_image(1200, 900, 256);
	mcc_image	p = random_image(120, 90, 256);
	mcc_sad_request req = {&t, &p, NULL, 5, 2, MCC_SAD_AUTO};
	mcc_sad_job *job;
	mcc_error	err;
	mcc_sad_hit hits[5],
				ref[5];
	uint32_t	n,
				nref;

	UNIT_CHECK(mcc_sad_start(&req, &job, &err) == MCC_OK, "a job starts");
	mcc_sad_abort(job);
	UNIT_CHECK(1, "abort joined and freed a running job");

	/* a small job finishes; wait reports it; its hits equal the inline run's */
	p.width = 30;
	p.height = 20;
	t.width = 200;
	t.height = 150;
	req.threads = 3;
	UNIT_CHECK(mcc_sad_start(&req, &job, &err) == MCC_OK, "a second job starts");
	while (!mcc_sad_wait(job, 5))
		;
	UNIT_CHECK(mcc_sad_progress(job) == 1.0, "progress is 1 when done");
	UNIT_CHECK(mcc_sad_finish(job, hits, &n, &err) == MCC_OK && n == 5, "finish gives 5 hits");
	req.threads = 1;
	mcc_sad_run(&req, ref, &nref, &err);
	UNIT_CHECK(nref == 5 && memcmp(hits, ref, sizeof(hits)) == 0, "job hits equal the inline run's");
	free(t.pixels);
	free(p.pixels);
}

int
main(void)
{
	test_random_sizes();
	test_shapes();
	test_ties();
	test_cut_and_noise();
	test_errors();
	test_jobs();
	return unit_done();
}
