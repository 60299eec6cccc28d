/*
 * dp2deval.c: verification accuracy of elastic matching (paper 003, Sec. 8:
 * the simplified and the overall algorithm) on the FVC2002 set-B images.
 *
 *   dp2deval [--data DIR] [--db N] [--side S] [--crop C] [--period P]
 *            [--sigma G] [--block B] [--threads T] [--kernel NAME]
 *            [--dump DIR] [--tsv FILE]
 *
 * Per database (DB1_B .. DB4_B, or --db N): every image is enhanced and
 * binarized (mcc_dp2d_enhance), then every unordered pair of the 80 images
 * is verified, the first in file order as the reference and the other
 * warped onto it: 280 genuine pairs (same finger) and 2,880 impostor pairs.
 * Three scores, from one warp per pair: the simplified algorithm's count of
 * differing pixels after warping (Sec. 8), the overall algorithm's count
 * after thinning and restoring the reference and the warped probe (Sec.
 * 8.1, mcc_dp2d_overall.h), and the DP distance of the binary images; for
 * each, lower means "same finger". Timings: enhancement per image, pairs
 * per second of the 2D-DP (with the warp; wall clock), and the overall
 * algorithm's restoration per pair in CPU time of the one thread that runs
 * it (the reference's restoration, once per image, is spread over its
 * pairs).
 * EER: the mean of FMR and FNMR at the threshold where they are closest
 * (ties: the smaller mean), the rule of the bozorth3 EERs in
 * shared/data/README.md; FMR100 / FMR1000: the lowest FNMR with FMR at
 * most 1% / 0.1%.
 *
 * --dump DIR writes every binarized image as DIR/DBn_NNN_I.pgm and its
 * restoration as DIR/DB10n_NNN_I.pgm; --tsv writes one line per pair: db,
 * reference, probe, genuine, differences (simplified), distance,
 * differences (overall). Without the data folder it says so and exits 0.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mcc_dp2d.h"
#include "mcc_dp2d_overall.h"
#include "mcc_dp2d_verify.h"
#include "mcc_image.h"
#include "../unit/testargs.h"
#include "../unit/testfile.h"
#include "../unit/testfvc.h"
#include "../unit/testclock.h"

#define N_FINGERS	10
#define N_IMPR		8
#define N_IMAGES	(N_FINGERS * N_IMPR)

typedef struct scored
{
	double		s;				/* lower: more likely the same finger */
	int			gen;
} scored;

typedef struct rates
{
	double		eer;
	double		fmr100;
	double		fmr1000;
} rates;

/* Decode a PNG/PGM file into a new image; 0 on success. */
static int
load_image(const char *path, mcc_image *img)
{
	size_t		len;
	uint8_t    *data = unit_read_file(path, &len);
	mcc_image_info info;
	mcc_error	err;

	if (data == NULL)
	{
		fprintf(stderr, "dp2deval: cannot read %s\n", path);
		return -1;
	}
	if (mcc_image_probe(data, len, &info, &err) != MCC_OK)
	{
		fprintf(stderr, "dp2deval: %s: %s\n", path, err.message);
		free(data);
		return -1;
	}
	img->stride = info.width;
	img->pixels = malloc((size_t) info.width * info.height);
	if (img->pixels == NULL || mcc_image_decode(data, len, img, &err) != MCC_OK)
	{
		fprintf(stderr, "dp2deval: %s: %s\n", path, img->pixels ? err.message : "out of memory");
		free(data);
		return -1;
	}
	free(data);
	return 0;
}

/* Lower score first; genuine first among equals does not matter (thresholds group them). */
static int
cmp_scored(const void *x, const void *y)
{
	const scored *a = x,
			   *b = y;

	return (a->s > b->s) - (a->s < b->s);
}

/* EER, FMR100, FMR1000 of scores where a pair is accepted when s <= t. */
static rates
error_rates(scored *sc, int n)
{
	rates		r = {1.0, 1.0, 1.0};
	int			ng = 0,
				ni = 0,
				acc_g = 0,
				acc_i = 0;
	double		best_gap = 2.0;

	for (int i = 0; i < n; i++)
		sc[i].gen ? ng++ : ni++;
	if (ng == 0 || ni == 0)
		return r;
	qsort(sc, n, sizeof(scored), cmp_scored);
	/* thresholds: below the smallest, then at every distinct score upward */
	for (int i = 0; i <= n; i++)
	{
		double		fmr,
					fnmr,
					gap;

		if (i > 0)
		{
			if (sc[i - 1].gen)
				acc_g++;
			else
				acc_i++;
			if (i < n && sc[i].s == sc[i - 1].s)
				continue;		/* the threshold takes every equal score */
		}
		fmr = (double) acc_i / ni;
		fnmr = (double) (ng - acc_g) / ng;
		if (fmr <= 0.01 && fnmr < r.fmr100)
			r.fmr100 = fnmr;
		if (fmr <= 0.001 && fnmr < r.fmr1000)
			r.fmr1000 = fnmr;
		gap = fmr > fnmr ? fmr - fnmr : fnmr - fmr;
		if (gap < best_gap || (gap == best_gap && (fmr + fnmr) / 2.0 < r.eer))
		{
			best_gap = gap;
			r.eer = (fmr + fnmr) / 2.0;
		}
	}
	return r;
}

/* Write a binary PGM. */
static void
dump_pgm(const char *dir, int db, int finger, int impr, const uint8_t *px, uint32_t side)
{
	char		path[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/DB%d_%d_%d.pgm", dir, db, finger, impr);
	if ((f = fopen(path, "wb")) == NULL)
		return;
	fprintf(f, "P5\n%u %u\n255\n", side, side);
	fwrite(px, 1, (size_t) side * side, f);
	fclose(f);
}

/* One database: enhance, match all pairs, report. 0 on success. */
static int
eval_db(const char *data, int db, const mcc_dp2d_prep *prep, int threads, int kernel,
		const char *dump, FILE *tsv)
{
	size_t		n = (size_t) prep->side * prep->side;
	uint8_t    *bin = malloc(N_IMAGES * n);
	mcc_image	work[N_IMAGES];
	enum
	{
		NPAIRS = N_IMAGES * (N_IMAGES - 1) / 2
	};
	const mcc_image **pa = malloc(NPAIRS * sizeof(*pa));
	const mcc_image **pb = malloc(NPAIRS * sizeof(*pb));
	mcc_dp2d_out *out = calloc(NPAIRS, sizeof(*out));
	uint8_t    *warped = malloc((size_t) NPAIRS * n);
	uint8_t    *restored = malloc(N_IMAGES * n);
	uint8_t    *scratch = malloc(n);
	uint64_t   *overall = malloc(NPAIRS * sizeof(uint64_t));
	scored	   *s_all = malloc(NPAIRS * sizeof(scored));
	scored	   *s_diff = malloc(NPAIRS * sizeof(scored));
	scored	   *s_dist = malloc(NPAIRS * sizeof(scored));
	int			gen[NPAIRS],
				ref[NPAIRS],
				prb[NPAIRS];
	double		t0,
				t_enh,
				t_match,
				t_post;
	int			np = 0;
	mcc_error	err;
	mcc_dp2d_request req;
	rates		rd,
				rs,
				ro;
	double		gmean = 0,
				imean = 0,
				gmean_o = 0,
				imean_o = 0;

	if (!bin || !pa || !pb || !out || !s_diff || !s_dist || !warped || !restored || !scratch ||
		!overall || !s_all)
	{
		fprintf(stderr, "dp2deval: out of memory\n");
		return -1;
	}
	t0 = tclock_wall_s();
	for (int k = 0; k < N_IMAGES; k++)
	{
		char		path[1024];
		mcc_image	raw;

		tfvc_image_path(path, sizeof(path), data, &tfvc_dbs[db - 1], 101 + k / N_IMPR, 1 + k % N_IMPR);
		if (load_image(path, &raw) != 0)
			return -1;
		if (mcc_dp2d_enhance(&raw, prep, bin + k * n, &err) != MCC_OK)
		{
			fprintf(stderr, "dp2deval: %s: %s\n", path, err.message);
			return -1;
		}
		free(raw.pixels);
		work[k].width = work[k].height = prep->side;
		work[k].stride = prep->side;
		work[k].pixels = bin + k * n;
		if (dump)
			dump_pgm(dump, db, 101 + k / N_IMPR, 1 + k % N_IMPR, work[k].pixels, prep->side);
	}
	t_enh = tclock_wall_s() - t0;
	/* the overall algorithm's reference side: each image restored once */
	t0 = tclock_cpu_s();
	for (int k = 0; k < N_IMAGES; k++)
		if (mcc_dp2d_overall_restore(bin + k * n, prep, restored + k * n, &err) != MCC_OK)
		{
			fprintf(stderr, "dp2deval: restoring DB%d image %d: %s\n", db, k, err.message);
			return -1;
		}
	t_post = tclock_cpu_s() - t0;
	if (dump)
		for (int k = 0; k < N_IMAGES; k++)
		{
			for (size_t i = 0; i < n; i++)
				scratch[i] = restored[k * n + i] ? 0 : 255;
			dump_pgm(dump, 100 + db, 101 + k / N_IMPR, 1 + k % N_IMPR, scratch, prep->side);
		}
	for (int u = 0; u < N_IMAGES; u++)
		for (int v = u + 1; v < N_IMAGES; v++)
		{
			pa[np] = &work[u];
			pb[np] = &work[v];
			ref[np] = u;
			prb[np] = v;
			gen[np] = u / N_IMPR == v / N_IMPR;
			out[np].warped = warped + (size_t) np * n;
			np++;
		}
	memset(&req, 0, sizeof(req));
	req.npairs = (uint32_t) np;
	req.a = pa;
	req.b = pb;
	req.out = out;
	req.flags = MCC_DP2D_WARP;
	req.threads = threads;
	req.kernel = kernel;
	t0 = tclock_wall_s();
	if (mcc_dp2d_run(&req, &err) != MCC_OK)
	{
		fprintf(stderr, "dp2deval: DB%d: %s\n", db, err.message);
		return -1;
	}
	t_match = tclock_wall_s() - t0;
	/* the overall algorithm: the warped probe restored, compared with the restored reference */
	t0 = tclock_cpu_s();
	for (int i = 0; i < np; i++)
	{
		if (mcc_dp2d_overall_restore(out[i].warped, prep, scratch, &err) != MCC_OK)
		{
			fprintf(stderr, "dp2deval: restoring a warped probe: %s\n", err.message);
			return -1;
		}
		overall[i] = mcc_dp2d_overall_differences(restored + (size_t) ref[i] * n, scratch, n);
	}
	t_post += tclock_cpu_s() - t0;
	for (int i = 0; i < np; i++)
	{
		s_all[i].s = (double) overall[i];
		s_all[i].gen = gen[i];
		if (gen[i])
			gmean_o += overall[i] / 280.0;
		else
			imean_o += overall[i] / 2880.0;
		s_diff[i].s = (double) out[i].differences;
		s_diff[i].gen = gen[i];
		s_dist[i].s = out[i].distance;
		s_dist[i].gen = gen[i];
		if (gen[i])
			gmean += out[i].differences / 280.0;
		else
			imean += out[i].differences / 2880.0;
		if (tsv)
			fprintf(tsv, "DB%d_B\t%d_%d\t%d_%d\t%d\t%llu\t%.6f\t%llu\n", db,
					101 + ref[i] / N_IMPR, 1 + ref[i] % N_IMPR, 101 + prb[i] / N_IMPR, 1 + prb[i] % N_IMPR,
					gen[i], (unsigned long long) out[i].differences, out[i].distance,
					(unsigned long long) overall[i]);
	}
	rd = error_rates(s_diff, np);
	rs = error_rates(s_dist, np);
	ro = error_rates(s_all, np);
	printf("DB%d_B  %5.1f%% %5.1f%% %5.1f%%   %5.1f%% %5.1f%% %5.1f%%   %5.1f%% %5.1f%% %5.1f%%   "
		   "%6.0f %6.0f   %6.0f %6.0f   %5.1f ms  %7.1f  %6.3f ms\n",
		   db, 100 * rd.eer, 100 * rd.fmr100, 100 * rd.fmr1000, 100 * ro.eer, 100 * ro.fmr100,
		   100 * ro.fmr1000, 100 * rs.eer, 100 * rs.fmr100, 100 * rs.fmr1000, gmean, imean, gmean_o,
		   imean_o, 1e3 * t_enh / N_IMAGES, np / t_match, 1e3 * t_post / np);
	fflush(stdout);
	free(bin);
	free(pa);
	free(pb);
	free(out);
	free(warped);
	free(restored);
	free(scratch);
	free(overall);
	free(s_all);
	free(s_diff);
	free(s_dist);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *data = getenv("MCC_SHARED_DATA");
	const char *dump = NULL;
	const char *tsv_path = NULL;
	const char *kernel_name = NULL;
	FILE	   *tsv = NULL;
	int			db_only = 0,
				threads = 2,
				kernel = MCC_DP2D_AUTO;
	mcc_dp2d_prep prep;
	mcc_error	err;
	char		probe[1024];
	struct stat st;

	mcc_dp2d_prep_default(&prep);
	{
		const targ_opt opts[] = {
			OPT_STR("--data", &data, "DIR"), OPT_INT("--db", &db_only, "N"),
			OPT_U32("--side", &prep.side, "S"), OPT_U32("--crop", &prep.crop, "C"),
			OPT_DOUBLE("--period", &prep.period, "P"), OPT_DOUBLE("--sigma", &prep.sigma, "G"),
			OPT_U32("--block", &prep.block, "B"), OPT_INT("--threads", &threads, "T"),
			OPT_STR("--kernel", &kernel_name, "NAME"), OPT_STR("--dump", &dump, "DIR"),
			OPT_STR("--tsv", &tsv_path, "FILE"), OPT_END
		};

		targ_parse(argc, argv, opts);
		if (kernel_name != NULL && (kernel = mcc_dp2d_kernel_by_name(kernel_name)) < 0)
			targ_usage(argv[0], opts);
	}
	if (mcc_dp2d_prep_check(&prep, &err) != MCC_OK)
	{
		fprintf(stderr, "dp2deval: %s\n", err.message);
		return 2;
	}
	if (data == NULL || *data == '\0')
		data = "../shared/data";
	snprintf(probe, sizeof(probe), "%s/fvc2002/images", data);
	if (stat(probe, &st) != 0)
	{
		printf("dp2deval: SKIP, no FVC2002 images under %s\n", data);
		return 0;
	}
	if (tsv_path && (tsv = fopen(tsv_path, "w")) == NULL)
	{
		fprintf(stderr, "dp2deval: cannot write %s\n", tsv_path);
		return 1;
	}
	printf("# elastic matching (paper 003 Sec. 8): side %u, crop %u, period %g, sigma %g, block %u; "
		   "kernel %s, %d threads\n", prep.side, prep.crop, prep.period, prep.sigma, prep.block,
		   mcc_dp2d_kernel_name(kernel == MCC_DP2D_AUTO ? mcc_dp2d_kernel_auto() : kernel), threads);
	printf("#        simplified (Sec. 8)     overall (Sec. 8.1)      DP distance             "
		   "mean differences, genuine / impostor\n");
	printf("# DB      EER FMR100 FMR1000     EER FMR100 FMR1000     EER FMR100 FMR1000   "
		   "  simplified       overall   enhance  pairs/s  restore/pair\n");
	for (int db = 1; db <= 4; db++)
		if ((db_only == 0 || db == db_only) && eval_db(data, db, &prep, threads, kernel, dump, tsv) != 0)
			return 1;
	if (tsv)
		fclose(tsv);
	return 0;
}
