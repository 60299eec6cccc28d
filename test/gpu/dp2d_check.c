/*
 * dp2d_check.c: the GPU's elastic matching (kernels/mcc_dp2d_gpu.h) equals
 * the CPU's (src/core/image/mcc_dp2d.h) in every output: cost, distance,
 * differences, row maps, column maps and warped images, on random and
 * structured images of sizes that reach every columns-per-lane count
 * (1..16) of both wavefronts, with chunk boundaries inside a batch; bad
 * batches are refused; a raised cancel flag stops a run.
 *
 *   dp2d_check              compare (prints SKIP and exits 0 without a GPU)
 *   dp2d_check --no-device  expect a clean "no device" or "no driver" error
 *                           (run with CUDA_VISIBLE_DEVICES= set empty)
 *
 * Output: TAP lines; exit status 1 if any check failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcc_dp2d.h"
#include "mcc_dp2d_gpu.h"
#include "mcc_rng.h"

static int	n_checks = 0;
static int	n_failed = 0;

/* One TAP line. */
static void
check(int ok, const char *fmt, ...)
{
	va_list		ap;

	n_checks++;
	n_failed += !ok;
	printf("%sok %d - ", ok ? "" : "not ", n_checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* CPU threads to use. */
static int
cpu_threads(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 64 ? 64 : (int) n;
}

/*
 * A batch of na x nb images of the given sizes, every (a, b) combination as
 * a pair plus, when the sizes agree, a pair of identical images. style 0:
 * random 0..255, 1: random 0..2 (many ties), 2: smooth gradients.
 */
static int
run_case(mcc_dp2d_gpu *g, mcc_rng *r, uint32_t wa, uint32_t ha, uint32_t wb, uint32_t hb,
		 uint32_t na, uint32_t nb, int style, int flags, uint32_t max_chunk)
{
	size_t		sa = (size_t) wa * ha,
				sb = (size_t) wb * hb;
	uint8_t    *A = malloc(na * sa),
			   *B = malloc(nb * sb);
	uint32_t	np = na * nb + (wa == wb && ha == hb);
	uint32_t   *pa = malloc(np * sizeof(uint32_t)),
			   *pb = malloc(np * sizeof(uint32_t));
	mcc_image  *ia = malloc(na * sizeof(mcc_image)),
			   *ib = malloc(nb * sizeof(mcc_image));
	const mcc_image **ppa = malloc(np * sizeof(*ppa)),
			  **ppb = malloc(np * sizeof(*ppb));
	mcc_dp2d_out *cpu = calloc(np, sizeof(mcc_dp2d_out));
	mcc_dp2d_gpu_batch bt;
	mcc_dp2d_request req;
	uint64_t   *g_cost = calloc(np, 8),
			   *g_diff = calloc(np, 8);
	double	   *g_dist = calloc(np, sizeof(double));
	uint32_t   *g_rmap = calloc((size_t) np * ha, 4),
			   *g_cmap = calloc((size_t) np * sa, 4);
	uint8_t    *g_warp = calloc((size_t) np * sa, 1);
	mcc_error	err;
	mcc_gpu_code code;
	int			same = 1,
				k = 0;

	for (size_t q = 0; q < na * sa; q++)
		A[q] = style == 0 ? (uint8_t) mcc_rng_below(r, 256) : style == 1 ?
			(uint8_t) mcc_rng_below(r, 3) : (uint8_t) ((q % wa) * 255 / wa);
	for (size_t q = 0; q < nb * sb; q++)
		B[q] = style == 0 ? (uint8_t) mcc_rng_below(r, 256) : style == 1 ?
			(uint8_t) mcc_rng_below(r, 3) : (uint8_t) (((q % wb) * 255 / wb + q / sb * 20) % 256);
	if (np > na * nb)
		memcpy(B, A, sa);		/* pair (0, 0) then matches identical images */
	for (uint32_t i = 0; i < na; i++)
		ia[i] = (mcc_image) {wa, ha, wa, A + i * sa};
	for (uint32_t j = 0; j < nb; j++)
		ib[j] = (mcc_image) {wb, hb, wb, B + j * sb};
	for (uint32_t i = 0; i < na; i++)
		for (uint32_t j = 0; j < nb; j++, k++)
		{
			pa[k] = i;
			pb[k] = j;
		}
	if (np > na * nb)
	{
		pa[k] = 0;
		pb[k] = 0;
	}
	for (uint32_t p = 0; p < np; p++)
	{
		ppa[p] = &ia[pa[p]];
		ppb[p] = &ib[pb[p]];
		cpu[p].row_map = malloc(ha * 4);
		cpu[p].col_map = malloc(sa * 4);
		cpu[p].warped = malloc(sa);
	}
	req = (mcc_dp2d_request) {.npairs = np, .a = ppa, .b = ppb, .out = cpu, .flags = flags,
	.threads = cpu_threads(), .kernel = MCC_DP2D_AUTO};
	if (mcc_dp2d_run(&req, &err) != MCC_OK)
	{
		check(0, "CPU run %ux%u onto %ux%u: %s", wb, hb, wa, ha, err.message);
		return -1;
	}
	memset(&bt, 0, sizeof(bt));
	bt.wa = wa;
	bt.ha = ha;
	bt.wb = wb;
	bt.hb = hb;
	bt.na = na;
	bt.nb = nb;
	bt.a = A;
	bt.b = B;
	bt.npairs = np;
	bt.pair_a = pa;
	bt.pair_b = pb;
	bt.flags = flags;
	bt.cost = g_cost;
	bt.distance = g_dist;
	bt.differences = g_diff;
	bt.row_map = g_rmap;
	bt.col_map = g_cmap;
	bt.warped = g_warp;
	bt.max_chunk = max_chunk;
	code = mcc_dp2d_gpu_run(g, &bt, NULL, &err);
	if (code != MCC_GPU_OK)
	{
		check(0, "GPU run %ux%u onto %ux%u: %s", wb, hb, wa, ha, err.message);
		return code == MCC_GPU_STICKY ? -2 : -1;
	}
	for (uint32_t p = 0; p < np; p++)
	{
		int			s = g_cost[p] == cpu[p].cost && g_dist[p] == cpu[p].distance;

		if (flags & MCC_DP2D_WARP)
			s = s && g_diff[p] == cpu[p].differences &&
				memcmp(g_rmap + (size_t) p * ha, cpu[p].row_map, ha * 4) == 0 &&
				memcmp(g_cmap + (size_t) p * sa, cpu[p].col_map, sa * 4) == 0 &&
				memcmp(g_warp + (size_t) p * sa, cpu[p].warped, sa) == 0;
		if (!s && same)
			printf("# first difference: pair %u (%u, %u): cost %llu / %llu, differences %llu / %llu\n",
				   p, pa[p], pb[p], (unsigned long long) g_cost[p],
				   (unsigned long long) cpu[p].cost, (unsigned long long) g_diff[p],
				   (unsigned long long) cpu[p].differences);
		same &= s;
	}
	check(same, "GPU == CPU: %ux%u onto %ux%u, %u pairs, %s%s%s (columns per lane %u and %u)",
		  wb, hb, wa, ha, np, style == 0 ? "random" : style == 1 ? "values 0..2" : "gradients",
		  flags ? ", maps, warps, differences" : ", cost only",
		  max_chunk ? ", small chunks" : "", (wb + 31) / 32, (hb + 31) / 32);
	for (uint32_t p = 0; p < np; p++)
	{
		free(cpu[p].row_map);
		free(cpu[p].col_map);
		free(cpu[p].warped);
	}
	free(A);
	free(B);
	free(pa);
	free(pb);
	free(ia);
	free(ib);
	free(ppa);
	free(ppb);
	free(cpu);
	free(g_cost);
	free(g_diff);
	free(g_dist);
	free(g_rmap);
	free(g_cmap);
	free(g_warp);
	return 0;
}

/* Bad batches and cancellation. */
static void
run_bad(mcc_dp2d_gpu *g)
{
	uint8_t		img[64] = {0};
	uint32_t	pa[2] = {0, 0},
				pb[2] = {0, 1};
	uint64_t	cost[2];
	mcc_dp2d_gpu_batch bt;
	mcc_error	err;
	volatile int cancel = 1;

	memset(&bt, 0, sizeof(bt));
	bt.wa = bt.ha = bt.wb = bt.hb = 4;
	bt.na = 1;
	bt.nb = 1;
	bt.a = img;
	bt.b = img;
	bt.npairs = 2;
	bt.pair_a = pa;
	bt.pair_b = pb;
	bt.cost = cost;
	check(mcc_dp2d_gpu_run(g, &bt, NULL, &err) == MCC_GPU_INVALID,
		  "a pair naming a missing image is refused: %s", err.message);
	bt.nb = 2;
	bt.wb = 9;
	check(mcc_dp2d_gpu_run(g, &bt, NULL, &err) == MCC_GPU_INVALID,
		  "widths 4 and 9 are refused: %s", err.message);
	bt.wb = 4;
	check(mcc_dp2d_gpu_run(g, &bt, &cancel, &err) == MCC_GPU_CANCELLED,
		  "a raised cancel flag stops the run: %s", err.message);
	cancel = 0;
	check(mcc_dp2d_gpu_run(g, &bt, &cancel, &err) == MCC_GPU_OK && cost[0] == 0,
		  "the context still works afterwards");
}

int
main(int argc, char **argv)
{
	mcc_dp2d_gpu *g;
	mcc_error	err;
	mcc_gpu_code code;
	mcc_rng		r;
	static const uint32_t sizes[][4] = {
		/* wa, ha, wb, hb: inner K = ceil(wb/32), outer K = ceil(hb/32) */
		{1, 1, 1, 1}, {2, 1, 1, 2}, {5, 3, 7, 4}, {32, 32, 32, 32}, {33, 33, 33, 33},
		{40, 20, 64, 21}, {85, 85, 85, 85}, {100, 90, 120, 80}, {128, 128, 128, 128},
		{97, 16, 160, 16}, {200, 12, 192, 12}, {224, 10, 250, 10}, {256, 8, 256, 8},
		{300, 6, 288, 6}, {352, 5, 320, 5}, {384, 4, 400, 4}, {420, 3, 450, 3},
		{480, 3, 470, 3}, {512, 2, 500, 2}, {512, 2, 512, 2},
		{3, 480, 4, 500}, {2, 512, 2, 512}, {20, 300, 20, 260}
	};

	if (argc > 1 && strcmp(argv[1], "--no-device") == 0)
	{
		code = mcc_dp2d_gpu_open(-1, &g, &err);
		check(code == MCC_GPU_NO_DEVICE || code == MCC_GPU_NO_DRIVER,
			  "without a visible device the open fails cleanly: %s",
			  code == MCC_GPU_OK ? "it succeeded" : err.message);
		if (code == MCC_GPU_OK)
			mcc_dp2d_gpu_close(g);
		printf("1..%d\n", n_checks);
		return n_failed ? 1 : 0;
	}
	code = mcc_dp2d_gpu_open(-1, &g, &err);
	if (code != MCC_GPU_OK)
	{
		printf("# SKIP: no usable GPU: %s\n", err.message);
		printf("1..0 # SKIP no usable GPU\n");
		return 0;
	}
	printf("# GPU: %s\n", mcc_dp2d_gpu_name(g));
	mcc_rng_seed(&r, 2024);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
	{
		int			style = (int) (s % 3);
		uint32_t	n = sizes[s][0] * sizes[s][1] > 40000 ? 2 : 3;

		if (run_case(g, &r, sizes[s][0], sizes[s][1], sizes[s][2], sizes[s][3], n, n, style,
					 MCC_DP2D_WARP, 0) == -2)
			break;
	}
	/* cost only, and a batch cut into chunks of 7 pairs */
	run_case(g, &r, 85, 85, 80, 90, 3, 2, 0, 0, 0);
	run_case(g, &r, 48, 40, 48, 40, 6, 5, 1, MCC_DP2D_WARP, 7);
	run_case(g, &r, 64, 64, 64, 64, 10, 10, 0, MCC_DP2D_WARP, 0);
	run_bad(g);
	mcc_dp2d_gpu_close(g);
	printf("1..%d\n", n_checks);
	if (n_failed)
		printf("# %d of %d checks failed\n", n_failed, n_checks);
	return n_failed ? 1 : 0;
}
