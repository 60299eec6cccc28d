/*
 * test_sad_gpu_emu.c: the GPU SAD kernel's arithmetic, run on the CPU.
 *
 * kernels/impl/mcc_sad_body.h holds everything a thread of the GPU kernel
 * computes (layout sizes, shifted pattern copies, the sliding-window
 * column loop, the epilogue, the correction table in segments, the
 * selection keys). Here it is compiled as C, with a C packed byte SAD in
 * place of PTX vabsdiff4, and "launched" by looping over every block and
 * thread of the grid that kernels/impl/mcc_sad.cu would launch, including map
 * bands and pattern row chunks. The result must equal a naive SAD map and
 * its (SAD, y, x) order. The CUDA side adds only launches, copies and CUB;
 * make gpu-check-sad runs the real thing where there is a GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_sad.h"
#include "testimage.h"
#include "unit.h"

/* packed byte SAD with accumulate, as PTX vabsdiff4.u32.u32.u32.add */
static inline uint32_t
vsad4_c(uint32_t a, uint32_t b, uint32_t c)
{
	for (int i = 0; i < 32; i += 8)
	{
		int			x = (int) ((a >> i) & 255u) - (int) ((b >> i) & 255u);

		c += (uint32_t) (x < 0 ? -x : x);
	}
	return c;
}

#define SAD_HD
#define SAD_UNROLL _Pragma("GCC unroll 16")
#define SAD_VSAD(a, b, acc) vsad4_c((a), (b), (acc))
#define SAD_LDT(p) (*(p))
#define SAD_LDP(p, a, b, c, d) \
	do { (a) = (p)[0]; (b) = (p)[1]; (c) = (p)[2]; (d) = (p)[3]; } while (0)

#include "../../kernels/impl/mcc_sad_body.h"

#define SAD_NAME(x) x
#include "../../kernels/impl/mcc_sad_variants.h"

typedef void (*thread_fn) (const uint32_t *, uint32_t, const uint32_t *, int, int, uint32_t,
						   uint32_t, int, int, uint64_t *, int, uint32_t, uint32_t);

static const struct
{
	const char *name;
	thread_fn	fn;
	int			j,
				y;
}			variants[] = {
	{"j2y8", thread_j2y8, 2, 8}, {"j2y4", thread_j2y4, 2, 4},
	{"j1y4", thread_j1y4, 1, 4}, {"j4y4", thread_j4y4, 4, 4},
};

static uint64_t rng_state = 0x853C49E6748FEA9Bull;

/* xorshift64* */
static uint32_t
rnd(void)
{
	return ti_rnd(&rng_state);
}

/* qsort of 64-bit keys */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * What mcc_sad_gpu_search() computes, with the grid done by loops:
 * band_rows map rows per launch (a multiple of Y), rows_max pattern rows
 * per chunk. Returns the keys in position order (malloc'd).
 */
static uint64_t *
emulate(const mcc_image *t, const mcc_image *p, int v, uint32_t band_rows, uint32_t rows_max,
		sad_dims *dout)
{
	const int	J = variants[v].j,
				Y = variants[v].y;
	sad_dims	d;
	uint32_t   *tw,
			   *pp,
			   *V,
			   *seg;
	uint64_t   *raw;
	int			nseg;

	sad_dims_compute(t->width, t->height, p->width, p->height, J, Y, SAD_BT, &d);
	*dout = d;
	tw = calloc((size_t) d.tsw * d.trows, 4);
	for (uint32_t y = 0; y < t->height; y++)
		memcpy((uint8_t *) tw + (size_t) y * d.tsw * 4, t->pixels + y * t->stride, t->width);
	pp = malloc((size_t) d.nw * p->height * 16);
	sad_pattern_layout(p->pixels, p->stride, p->width, p->height, pp);
	/* correction table by segments, as the two kernels compute it */
	nseg = (int) ((t->height + SAD_CORR_SEG - 1) / SAD_CORR_SEG);
	seg = malloc((size_t) nseg * d.nx * 4);
	V = malloc((size_t) (t->height + 1) * d.nx * 4);
	for (int g = 0; g < nseg; g++)
		for (uint32_t x = 0; x < d.nx; x++)
			seg[(size_t) g * d.nx + x] = sad_corr_seg((const uint8_t *) tw, (size_t) d.tsw * 4,
													  (int) t->height, (int) p->width, x, g);
	for (int g = 0; g < nseg; g++)
		for (uint32_t x = 0; x < d.nx; x++)
			sad_corr_scan((const uint8_t *) tw, (size_t) d.tsw * 4, (int) t->height,
						  (int) p->width, x, d.nx, g, seg, V);
	raw = malloc(sizeof(uint64_t) * d.nx * d.ny);
	memset(raw, 0xEE, sizeof(uint64_t) * d.nx * d.ny);
	for (uint32_t yb = 0; yb < d.ny; yb += band_rows)
	{
		uint32_t	ye = yb + band_rows < d.ny ? yb + band_rows : d.ny;
		uint32_t	gy = (ye - yb + (uint32_t) Y - 1) / (uint32_t) Y;

		for (uint32_t rb = 0; rb < p->height; rb += rows_max)
		{
			uint32_t	re = rb + rows_max < p->height ? rb + rows_max : p->height;

			for (uint32_t by = 0; by < gy; by++)
				for (uint32_t bx = 0; bx < d.gx; bx++)
					for (uint32_t tid = 0; tid < SAD_BT; tid++)
						variants[v].fn(tw, d.tsw, pp, (int) p->height, (int) d.nw, d.nx, ye,
									   (int) rb, (int) re, raw, rb > 0,
									   (bx * SAD_BT + tid) * (uint32_t) J, yb + by * (uint32_t) Y);
		}
	}
	for (size_t idx = 0; idx < (size_t) d.nx * d.ny; idx++)
	{
		uint32_t	y = (uint32_t) (idx / d.nx),
					x = (uint32_t) (idx % d.nx);

		raw[idx] = sad_key(raw[idx], V[(size_t) (y + p->height) * d.nx + x] - V[(size_t) y * d.nx + x],
						   (uint32_t) idx);
	}
	free(tw);
	free(pp);
	free(V);
	free(seg);
	return raw;
}

/* A w x h image of random bytes with stride slack. */
static mcc_image
random_image(uint32_t w, uint32_t h)
{
	return ti_random_image(&rng_state, w, h, 3);
}

/* One case: every variant, several band and chunk splits, against mcc_sad_at. */
static void
check_case(uint32_t tw_, uint32_t th, uint32_t w, uint32_t h)
{
	mcc_image	t = random_image(tw_, th);
	mcc_image	p = random_image(w, h);
	int			bad = 0;
	uint32_t	nx = tw_ - w + 1,
				ny = th - h + 1;
	uint64_t   *want = malloc(sizeof(uint64_t) * nx * ny);

	/* the pattern at a known place, so the best hit is known too */
	if (w < tw_ && h < th)
		for (uint32_t y = 0; y < h; y++)
			memcpy(p.pixels + y * p.stride, t.pixels + (y + (th - h) / 2) * t.stride + (tw_ - w) / 3, w);
	for (uint32_t y = 0; y < ny; y++)
		for (uint32_t x = 0; x < nx; x++)
			want[(size_t) y * nx + x] = mcc_sad_at(&t, &p, x, y);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++)
	{
		const uint32_t splits[3][2] = {
			{ny, h},			/* one launch, all rows: no cancel flag */
			{(uint32_t) variants[v].y, h > 3 ? h / 3 : 1},	/* one band of Y, row chunks */
			{(uint32_t) variants[v].y * 2, 1},	/* one pattern row per chunk */
		};

		for (int sp = 0; sp < 3; sp++)
		{
			sad_dims	d;
			uint32_t	band = splits[sp][0] < ny ? splits[sp][0] : ny;
			uint64_t   *keys;
			uint64_t   *sorted;
			mcc_sad_hit best;

			band = (band + (uint32_t) variants[v].y - 1) / (uint32_t) variants[v].y * (uint32_t) variants[v].y;
			keys = emulate(&t, &p, (int) v, band, splits[sp][1], &d);
			for (size_t i = 0; i < (size_t) nx * ny; i++)
				if ((keys[i] >> MCC_SAD_KEY_POS_BITS) != want[i] ||
					(keys[i] & ((1u << MCC_SAD_KEY_POS_BITS) - 1)) != i || keys[i] >> MCC_SAD_KEY_BITS)
				{
					if (bad++ < 3)
						printf("# %s split %d: position %zu: %llu, want %llu\n", variants[v].name, sp, i,
							   (unsigned long long) (keys[i] >> MCC_SAD_KEY_POS_BITS),
							   (unsigned long long) want[i]);
					break;
				}
			/* the smallest key is the (SAD, y, x) best */
			sorted = malloc(sizeof(uint64_t) * nx * ny);
			memcpy(sorted, keys, sizeof(uint64_t) * nx * ny);
			qsort(sorted, (size_t) nx * ny, sizeof(uint64_t), cmp_u64);
			{
				mcc_sad_request req = {&t, &p, NULL, 1, 1, MCC_SAD_REFERENCE};
				uint32_t	n;
				mcc_error	err;
				uint32_t	pos = (uint32_t) (sorted[0] & ((1u << MCC_SAD_KEY_POS_BITS) - 1));

				mcc_sad_run(&req, &best, &n, &err);
				if (best.sad != sorted[0] >> MCC_SAD_KEY_POS_BITS || best.x != pos % nx || best.y != pos / nx)
					bad++;
			}
			free(sorted);
			free(keys);
		}
	}
	UNIT_CHECK(bad == 0, "gpu kernel emulated: %ux%u pattern in %ux%u, 4 variants x 3 launch splits = CPU map and best hit",
			   w, h, tw_, th);
	free(want);
	free(t.pixels);
	free(p.pixels);
}

/* The shifted pattern copies hold P[r][u - s] at byte u of the row, 0 elsewhere. */
static void
test_layout(void)
{
	mcc_image	p = random_image(13, 3);
	uint32_t	nw = (uint32_t) sad_words(13);
	uint32_t   *pp = malloc(nw * 3 * 16);
	int			ok = nw == 4;

	sad_pattern_layout(p.pixels, p.stride, 13, 3, pp);
	for (uint32_t s = 0; s < 4; s++)
		for (uint32_t r = 0; r < 3; r++)
			for (uint32_t u = 0; u < 4 * nw; u++)
			{
				uint32_t	word = pp[((size_t) (u / 4) * 3 + r) * 4 + s];
				uint8_t		byte = (uint8_t) (word >> (8 * (u % 4)));
				uint8_t		want = u >= s && u < s + 13 ? p.pixels[r * p.stride + u - s] : 0;

				ok = ok && byte == want;
			}
	UNIT_CHECK(ok, "shifted pattern copies: byte u of shift s is P[r][u - s] or 0");
	free(pp);
	free(p.pixels);
}

int
main(void)
{
	static const uint32_t cases[][4] = {
		{40, 30, 9, 7}, {1, 1, 1, 1}, {37, 5, 37, 5}, {100, 20, 1, 1}, {300, 70, 150, 3},
		{129, 90, 4, 40}, {66, 200, 13, 69}, {150, 150, 15, 15}, {523, 17, 250, 9},
	};

	test_layout();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3]);
	for (int i = 0; i < 6; i++)
	{
		uint32_t	w = 1 + rnd() % 40,
					h = 1 + rnd() % 30;

		check_case(w + rnd() % 150, h + rnd() % 140, w, h);
	}
	return unit_done();
}
