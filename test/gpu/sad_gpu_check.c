/*
 * sad_gpu_check.c: the GPU SAD search (kernels/mcc_sad_gpu.h) against the
 * CPU (src/core/image/mcc_sad.h): identical hits and identical whole maps, for
 * every kernel variant, on random images of many shapes, paper 002's test
 * sizes, a pattern tall enough to need 64-bit row chunks, and the FVC2002
 * images when ../shared/data is there. Without a GPU it prints one SKIP
 * line and succeeds. TAP output (test/unit/unit.h).
 *
 *   make gpu-check-sad          (or make -f kernels/sad.mk gpu-check-sad)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcc_sad.h"
#include "mcc_sad_gpu.h"
#include "testimage.h"
#include "unit.h"
#include "testfvc.h"

static uint64_t rng_state = 0xD1B54A32D192ED03ull;
static int	cpu_threads = 1;

/* xorshift64* */
static uint32_t
rnd(void)
{
	return ti_rnd(&rng_state);
}

/* Random w x h image; the pattern of a case is cut from it and perturbed. */
static mcc_image
random_image(uint32_t w, uint32_t h)
{
	return ti_random_image(&rng_state, w, h, 4);
}

/* Compare one GPU search (variant, k, map) with the CPU's; 1 if identical. */
static int
same_as_cpu(mcc_sad_gpu *g, const mcc_image *t, const mcc_image *p, int variant, uint32_t k,
			int with_map, char *why, size_t whylen)
{
	uint32_t	nx = t->width - p->width + 1,
				ny = t->height - p->height + 1;
	size_t		n = (size_t) nx * ny;
	uint64_t   *cmap = with_map ? malloc(n * 8) : NULL;
	uint64_t   *gmap = with_map ? malloc(n * 8) : NULL;
	mcc_sad_hit *ch = malloc(sizeof(mcc_sad_hit) * (k + 1));
	mcc_sad_hit *gh = malloc(sizeof(mcc_sad_hit) * (k + 1));
	uint32_t	cn = 0,
				gn = 0;
	mcc_sad_request req = {t, p, cmap, k, cpu_threads, MCC_SAD_AUTO};
	mcc_error	err;
	mcc_gpu_code c;
	int			ok = 1;

	if (mcc_sad_run(&req, ch, &cn, &err) != MCC_OK)
	{
		snprintf(why, whylen, "CPU: %.150s", err.message);
		ok = 0;
	}
	else if ((c = mcc_sad_gpu_search(g, t, p, k, gh, &gn, gmap, variant, NULL, NULL, &err)) != MCC_GPU_OK)
	{
		snprintf(why, whylen, "GPU code %d: %.150s (%.100s)", c, err.message, err.detail);
		ok = 0;
	}
	else if (gn != cn || memcmp(gh, ch, sizeof(mcc_sad_hit) * cn) != 0)
	{
		snprintf(why, whylen, "hits differ: %u vs %u; first GPU (%u,%u) %llu, CPU (%u,%u) %llu", gn, cn,
				 gh[0].x, gh[0].y, (unsigned long long) gh[0].sad, ch[0].x, ch[0].y,
				 (unsigned long long) ch[0].sad);
		ok = 0;
	}
	else if (with_map && memcmp(gmap, cmap, n * 8) != 0)
	{
		for (size_t i = 0; i < n; i++)
			if (gmap[i] != cmap[i])
			{
				snprintf(why, whylen, "map differs at (%zu, %zu): %llu vs %llu", i % nx, i / nx,
						 (unsigned long long) gmap[i], (unsigned long long) cmap[i]);
				break;
			}
		ok = 0;
	}
	free(cmap);
	free(gmap);
	free(ch);
	free(gh);
	return ok;
}

/* A pattern cut from t at (x, y), with a little noise on some pixels. */
static mcc_image
cut(const mcc_image *t, uint32_t x, uint32_t y, uint32_t w, uint32_t h, int noise)
{
	mcc_image	p = {w, h, w, malloc((size_t) w * h)};

	for (uint32_t r = 0; r < h; r++)
		for (uint32_t c = 0; c < w; c++)
		{
			int			v = t->pixels[(size_t) (y + r) * t->stride + x + c];

			if (noise && rnd() % 4 == 0)
				v += (int) (rnd() % 9) - 4;
			p.pixels[(size_t) r * w + c] = (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : v);
		}
	return p;
}

/* A search case: a target of random pixels and a pattern cut from it. */
typedef struct scene
{
	mcc_image	t;
	mcc_image	p;
} scene;

/* A tw x th target and its pw x ph pattern at (x, y), noisy if noise (cut). */
static scene
scene_make(uint32_t tw, uint32_t th, uint32_t x, uint32_t y, uint32_t pw, uint32_t ph, int noise)
{
	scene		s;

	s.t = random_image(tw, th);
	s.p = cut(&s.t, x, y, pw, ph, noise);
	return s;
}

static void
scene_free(scene *s)
{
	free(s->t.pixels);
	free(s->p.pixels);
}

/* Random shapes, every variant, k = 1 and k = 17, with maps. */
static void
check_random(mcc_sad_gpu *g)
{
	static const uint32_t shapes[][4] = {
		{1, 1, 1, 1}, {5, 3, 5, 3}, {64, 48, 7, 5}, {300, 200, 1, 1}, {211, 97, 33, 31},
		{640, 480, 64, 64}, {517, 389, 150, 7}, {129, 1000, 3, 250}, {1000, 37, 255, 36},
		{388, 374, 96, 96},
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
	{
		scene		s = scene_make(shapes[i][0], shapes[i][1], (shapes[i][0] - shapes[i][2]) / 2,
								   (shapes[i][1] - shapes[i][3]) / 3, shapes[i][2], shapes[i][3],
								   (int) (i % 2));
		int			bad = 0;
		char		why[400] = "";

		for (int v = 1; v < MCC_SAD_GPU_VARIANTS; v++)
			for (int kk = 0; kk < 2; kk++)
				if (!same_as_cpu(g, &s.t, &s.p, v, kk ? 17 : 1, 1, why, sizeof(why)))
				{
					bad++;
					printf("# %s k=%d: %s\n", mcc_sad_gpu_variant_name(v), kk ? 17 : 1, why);
				}
		UNIT_CHECK(bad == 0, "%ux%u pattern in %ux%u: every variant gives the CPU's hits and map",
				   shapes[i][2], shapes[i][3], shapes[i][0], shapes[i][1]);
		scene_free(&s);
	}
}

/* Paper 002's sizes, the automatic variant, k = 10, map for Test 1. */
static void
check_paper(mcc_sad_gpu *g)
{
	for (int test = 1; test <= 3; test++)
	{
		uint32_t	side = 1000 + 500 * (uint32_t) test,
					ps = side / 10;
		scene		s = scene_make(side, side, side / 3 + 7, side / 2 + 3, ps, ps, 0);
		char		why[400] = "";

		UNIT_CHECK(same_as_cpu(g, &s.t, &s.p, MCC_SAD_GPU_AUTO, 10, test == 1, why, sizeof(why)),
				   "paper 002 Test %d (%u/%u): GPU top-10%s = CPU %s", test, side, ps,
				   test == 1 ? " and map" : "", why);
		scene_free(&s);
	}
}

/*
 * An 8000 x 4096 pattern: a 32-bit sum holds 2104 of its rows at most, so
 * the rows go in two chunks added into the 64-bit map.
 */
static void
check_tall(mcc_sad_gpu *g)
{
	scene		s = scene_make(8033, 4127, 17, 9, 8000, 4096, 1);
	char		why[400] = "";

	UNIT_CHECK(same_as_cpu(g, &s.t, &s.p, MCC_SAD_GPU_J2_Y8, 5, 1, why, sizeof(why)),
			   "8000x4096 pattern (64-bit row chunks): GPU = CPU %s", why);
	UNIT_CHECK(same_as_cpu(g, &s.t, &s.p, MCC_SAD_GPU_J2_Y8_SMEM, 5, 0, why, sizeof(why)),
			   "... and the SMEM variant (3072-row chunks) %s", why);
	scene_free(&s);
}

/* Cancel between bands, errors, and a usable context afterwards. */
static void
check_cancel_and_errors(mcc_sad_gpu *g)
{
	scene		s = scene_make(2500, 2500, 100, 200, 250, 250, 0);
	mcc_image	big = random_image(300, 10);
	volatile int flag = 1;
	mcc_sad_hit h[2];
	uint32_t	n;
	mcc_error	err;
	mcc_gpu_code c;
	char		why[400] = "";

	c = mcc_sad_gpu_search(g, &s.t, &s.p, 1, h, &n, NULL, MCC_SAD_GPU_AUTO, &flag, NULL, &err);
	UNIT_CHECK(c == MCC_GPU_CANCELLED, "a raised cancel flag stops a multi-band search (code %d)", c);
	flag = 0;
	c = mcc_sad_gpu_search(g, &s.t, &s.p, 2, h, &n, NULL, MCC_SAD_GPU_AUTO, &flag, NULL, &err);
	UNIT_CHECK(c == MCC_GPU_OK && n == 2 && h[0].sad == 0 && h[0].x == 100 && h[0].y == 200,
			   "the context works after a cancel; banded search finds (100, 200)");
	c = mcc_sad_gpu_search(g, &s.p, &s.t, 1, h, &n, NULL, MCC_SAD_GPU_AUTO, NULL, NULL, &err);
	UNIT_CHECK(c == MCC_GPU_INVALID, "pattern larger than the target: %s", err.message);
	c = mcc_sad_gpu_search(g, &s.t, &s.p, MCC_SAD_MAX_K + 1, h, &n, NULL, MCC_SAD_GPU_AUTO, NULL, NULL, &err);
	UNIT_CHECK(c == MCC_GPU_INVALID, "k over the limit: %s", err.message);
	c = mcc_sad_gpu_search(g, &s.t, &s.p, 1, h, &n, NULL, 99, NULL, NULL, &err);
	UNIT_CHECK(c == MCC_GPU_INVALID, "unknown variant: %s", err.message);
	UNIT_CHECK(same_as_cpu(g, &big, &big, MCC_SAD_GPU_AUTO, 1, 1, why, sizeof(why)),
			   "and still right afterwards %s", why);
	scene_free(&s);
	free(big.pixels);
}

/* FVC2002: a patch of impression 1 in impressions 1..8 of each DB's first finger. */
static void
check_fvc(mcc_sad_gpu *g)
{
	const char *root = unit_shared_data();
	char		path[512];

	for (int db = 0; db < TFVC_DBS; db++)
	{
		mcc_image	a,
					p;
		int			bad = 0,
					n = 0;
		char		why[400] = "";

		tfvc_image_path(path, sizeof(path), root ? root : ".", &tfvc_dbs[db], 101, 1);
		if (root == NULL || ti_load_image(path, &a) != 0)
		{
			UNIT_SKIP("FVC2002 %s images absent or PNG not built in", tfvc_dbs[db].db);
			continue;
		}
		p = cut(&a, a.width / 3, a.height / 3, 64, 64, 0);
		for (int imp = 1; imp <= 8; imp++)
		{
			mcc_image	b;

			tfvc_image_path(path, sizeof(path), root, &tfvc_dbs[db], 101, imp);
			if (ti_load_image(path, &b) != 0)
				continue;
			n++;
			if (!same_as_cpu(g, &b, &p, MCC_SAD_GPU_AUTO, 5, 1, why, sizeof(why)))
			{
				bad++;
				printf("# %s 101_%d: %s\n", tfvc_dbs[db].db, imp, why);
			}
			free(b.pixels);
		}
		UNIT_CHECK(n == 8 && bad == 0, "FVC2002 %s finger 101: GPU = CPU (top-5 and map) in %d impressions",
				   tfvc_dbs[db].db, n);
		free(a.pixels);
		free(p.pixels);
	}
}

int
main(void)
{
	mcc_sad_gpu *g;
	mcc_error	err;
	mcc_gpu_code c = mcc_sad_gpu_open(0, &g, &err);
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (c == MCC_GPU_NO_DRIVER || c == MCC_GPU_NO_DEVICE || c == MCC_GPU_UNSUPPORTED)
	{
		UNIT_SKIP("no usable GPU (code %d): %s %s", c, err.message, err.detail);
		return unit_done();
	}
	UNIT_CHECK(c == MCC_GPU_OK, "open device 0: %s", c == MCC_GPU_OK ? mcc_sad_gpu_describe(g) : err.message);
	if (c != MCC_GPU_OK)
		return unit_done();
	printf("# %s\n", mcc_sad_gpu_describe(g));
	cpu_threads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int) ncpu;
	check_random(g);
	check_paper(g);
	check_tall(g);
	check_cancel_and_errors(g);
	check_fvc(g);
	mcc_sad_gpu_close(g);
	return unit_done();
}
