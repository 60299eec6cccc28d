/*
 * test_engine_image.c: the engine's image and point jobs (eng_image.h), in
 * process. In make unit (built without the GPU path) and on a machine
 * without a GPU they run on the engine's CPU threads; make gpu-check runs
 * this program built with the GPU path, where the same jobs also run on
 * the GPU and fail over to the CPU.
 *
 *   - every answer equals src/core's own function on the same inputs, the
 *     reference that the backend runs (SAD: the map and the best k against
 *     mcc_sad_run with the reference kernel; DP2D: cost, distance,
 *     differences and warped images against mcc_dp2d_match with the
 *     reference kernel, 1:1 and 1:N; enhanced verification against
 *     mcc_dp2d_verify; CHAMFER and ALIGN: every field, bit for bit, against
 *     mcc_chamfer_align and mcc_align_minutiae on the CPU, and within the
 *     GPU evaluator's rounding on the GPU);
 *   - bad inputs give the core's error (status, message, detail), a failed
 *     enhancement says which image;
 *   - HELLO_OK says that the engine takes image jobs, and whether it has a
 *     GPU; MCC_IMG_GPU without one is MCC_PERR_NO_GPU;
 *   - CANCEL, a closed connection and shutdown stop a job: no result;
 *     malformed frames close the connection;
 *   - (image jobs' own threads and queue: test_engine_image_threads.c);
 *   - GPU only: injected failures send a job to the CPU (same answer, one
 *     WARNING) or, with MCC_IMG_GPU, give MCC_PERR_NO_GPU; a lost context
 *     stops the GPU for images and searches (last).
 */
#include <math.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "unit.h"
#include "engine_image.h"
#include "engine_inproc.h"
#include "eng_log.h"
#include "eng_server.h"
#include "mcc_dp2d_verify.h"

static tg_rng rng = {20261130};

/* A server; gpu: the mode of its GPU path. */
static void
server(eng_server *s, eng_gpu_mode gpu)
{
	eng_config	cfg = {.threads = 2, .delta_timeout_ms = 2000, .max_batch = 64, .gpu = gpu};

	eng_server_init(s, &cfg);
}

/*
 * A print-like image: stripes of period 9 at angle phi in a disc of radius
 * r, a light background, some noise (dp2d.sql's prints).
 */
static mcc_image
print_image(uint32_t side, double phi, double r)
{
	mcc_image	im = {side, side, side, malloc((size_t) side * side)};
	double		c = side / 2.0;

	for (uint32_t y = 0; y < side; y++)
		for (uint32_t x = 0; x < side; x++)
		{
			double		dx = x - c,
						dy = y - c;
			int			v = 230;

			if (dx * dx + dy * dy <= r * r)
				v = (int) lround(128 + 100 * cos(2 * M_PI * (dx * cos(phi) + dy * sin(phi)) / 9));
			v += tg_int(&rng, -6, 6);
			im.pixels[(size_t) y * side + x] = (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : v);
		}
	return im;
}

/* ---- SAD ------------------------------------------------------------------ */

static void
test_sad(eng_server *s, eng_conn *c, uint32_t device, const char *where)
{
	mcc_image	t = ti_random_image(&rng, 120, 90);
	mcc_image	p = {23, 17, 23, malloc(23 * 17)};
	mcc_image	flat = {30, 20, 30, calloc(1, 30 * 20)};
	mcc_image	dot = {3, 2, 3, calloc(1, 6)};
	eng_buf		b;
	ti_reply	r;
	mcc_error	err;
	uint32_t	nx,
				ny;

	/* the pattern cut from the target at (61, 40), a little noise on top */
	for (uint32_t y = 0; y < p.height; y++)
		for (uint32_t x = 0; x < p.width; x++)
			p.pixels[y * p.width + x] = (uint8_t) (t.pixels[(40 + y) * t.width + 61 + x] ^ (tg_int(&rng, 0, 9) == 0));
	UNIT_CHECK(ti_sad_ok(s, c, 101, device, where, &t, &p, 7, true),
			   "SAD (%s): 7 best hits and the whole map equal the reference", where);
	UNIT_CHECK(ti_sad_ok(s, c, 102, device, where, &t, &p, 1, false),
			   "SAD (%s): the best hit alone equals the reference", where);
	UNIT_CHECK(ti_sad_ok(s, c, 103, device, where, &t, &p, 0, true),
			   "SAD (%s): the map alone equals the reference", where);
	/* all SADs equal: the order is (y, x), and k beyond the shifts is cut */
	UNIT_CHECK(ti_sad_ok(s, c, 104, device, where, &flat, &dot, 10000, true),
			   "SAD (%s): ties in (y, x) order, k above the shift count cut to it", where);
	/* a pattern larger than the target: the core's error */
	eng_buf_init(&b);
	ti_sad(&b, 105, device, 1, false, &p, &t);
	ip_feed(s, c, &b);
	eng_buf_free(&b);
	ti_pump(s);
	(void) mcc_sad_positions(&p, &t, &nx, &ny, &err);
	UNIT_CHECK(ti_reply_of(c, 105, &r, NULL) && r.status == (uint32_t) err.status &&
			   strcmp(r.message, err.message) == 0 && strcmp(r.detail, err.detail) == 0,
			   "SAD (%s): a pattern larger than the target gives the core's error (%s)", where,
			   r.message);
	ip_clear_out(c);
	free(t.pixels);
	free(p.pixels);
	free(flat.pixels);
	free(dot.pixels);
}

/* ---- DP2D ----------------------------------------------------------------- */

/*
 * Pairs (a[pa[i]], b[pb[i]]) through the engine equal mcc_dp2d_match with
 * the reference kernel: cost, distance, and with warp the differences and
 * (warped) the warped images.
 */
static bool
dp2d_ok(eng_server *s, eng_conn *c, uint64_t rid, uint32_t device, const char *where,
		uint32_t flags, uint32_t na, const mcc_image *a, uint32_t nb, const mcc_image *bb,
		uint32_t npairs, const uint32_t *pa, const uint32_t *pb)
{
	eng_buf		b;
	ti_reply	r;
	uint8_t    *cp;
	size_t		px = (size_t) a[0].width * a[0].height;
	uint8_t    *warped = malloc(px);
	bool		ok;
	uint32_t	n;

	eng_buf_init(&b);
	ti_dp2d(&b, rid, device, flags, na, a, nb, bb, npairs, pa, pb);
	if (!ti_result(s, c, &b, rid, MCC_MSG_DP2D_RESULT, &r, &cp))
	{
		printf("# DP2D %llu: no result (%s)\n", (unsigned long long) rid, r.message);
		free(cp);
		free(warped);
		return false;
	}
	(void) eng_rd_u32(&r.rd);	/* side, index */
	(void) eng_rd_u32(&r.rd);
	n = eng_rd_u32(&r.rd);
	ok = n == npairs && ti_ran_on(&r, where);
	for (uint32_t i = 0; ok && i < n; i++)
	{
		mcc_dp2d_out out;
		mcc_error	err;
		uint64_t	cost = eng_rd_u64(&r.rd);
		double		dist = eng_rd_f64(&r.rd);
		uint64_t	diff = eng_rd_u64(&r.rd);

		memset(&out, 0, sizeof(out));
		ok = mcc_dp2d_match(&a[pa[i]], &bb[pb[i]], MCC_DP2D_REFERENCE,
							(flags & MCC_IMG_WARP) ? MCC_DP2D_WARP : 0, &out, &err) == MCC_OK &&
			cost == out.cost && dist == out.distance && diff == out.differences;
	}
	for (uint32_t i = 0; ok && (flags & MCC_IMG_WARPED) && i < n; i++)
	{
		mcc_dp2d_out out;
		mcc_error	err;
		const uint8_t *got = r.rd.p + r.rd.pos;

		memset(&out, 0, sizeof(out));
		out.warped = warped;
		ok = eng_rd_left(&r.rd) >= px &&
			mcc_dp2d_match(&a[pa[i]], &bb[pb[i]], MCC_DP2D_REFERENCE, MCC_DP2D_WARP, &out, &err) == MCC_OK &&
			memcmp(got, warped, px) == 0;
		r.rd.pos += px;
	}
	free(warped);
	return ti_done(c, &r, cp, ok);
}

/* Verification of probes against one reference equals mcc_dp2d_verify. */
static bool
verify_ok(eng_server *s, eng_conn *c, uint64_t rid, uint32_t device, const char *where,
		  const mcc_image *ref, uint32_t n, const mcc_image *probes)
{
	eng_buf		b;
	ti_reply	r;
	uint8_t    *cp;
	uint32_t   *pa = calloc(n, sizeof(uint32_t));
	uint32_t   *pb = malloc(n * sizeof(uint32_t));
	mcc_dp2d_prep prep;
	bool		ok;

	for (uint32_t i = 0; i < n; i++)
		pb[i] = i;
	eng_buf_init(&b);
	ti_dp2d(&b, rid, device, MCC_IMG_WARP | MCC_IMG_ENHANCE, 1, ref, n, probes, n, pa, pb);
	ok = ti_result(s, c, &b, rid, MCC_MSG_DP2D_RESULT, &r, &cp) && ti_ran_on(&r, where);
	(void) eng_rd_u32(&r.rd);
	(void) eng_rd_u32(&r.rd);
	ok = ok && eng_rd_u32(&r.rd) == n;
	mcc_dp2d_prep_default(&prep);
	for (uint32_t i = 0; ok && i < n; i++)
	{
		mcc_dp2d_verdict v;
		mcc_error	err;

		(void) eng_rd_u64(&r.rd);
		ok = mcc_dp2d_verify(ref, &probes[i], &prep, MCC_DP2D_AUTO, 1, &v, &err) == MCC_OK &&
			eng_rd_f64(&r.rd) == v.distance && eng_rd_u64(&r.rd) == v.differences;
	}
	free(pa);
	free(pb);
	return ti_done(c, &r, cp, ok);
}

static void
test_dp2d(eng_server *s, eng_conn *c, uint32_t device, const char *where)
{
	mcc_image	a = ti_random_image(&rng, 31, 22);
	mcc_image	bs[6];
	mcc_image	prints[4];
	mcc_image	tiny = ti_random_image(&rng, 8, 8);
	mcc_image	wide = ti_random_image(&rng, 70, 22);
	uint32_t	pa[6] = {0, 0, 0, 0, 0, 0};
	uint32_t	pb[6] = {0, 1, 2, 3, 4, 5};
	eng_buf		b;
	ti_reply	r;
	mcc_error	err;
	mcc_dp2d_prep prep;
	mcc_dp2d_out out;

	for (int i = 0; i < 6; i++)
		bs[i] = ti_random_image(&rng, 35, 19);
	/* b[0] is a with a stretched column: a close match */
	for (uint32_t y = 0; y < 19; y++)
		for (uint32_t x = 0; x < 35; x++)
			bs[0].pixels[y * 35 + x] = a.pixels[(y * 22 / 19) * 31 + (x * 31 / 35)];
	UNIT_CHECK(dp2d_ok(s, c, 201, device, where, 0, 1, &a, 1, bs, 1, pa, pb),
			   "DP2D (%s): one pair, cost and distance equal the reference kernel's", where);
	UNIT_CHECK(dp2d_ok(s, c, 202, device, where, MCC_IMG_WARP | MCC_IMG_WARPED, 1, &a, 1, bs, 1, pa, pb),
			   "DP2D (%s): one pair warped: differences and the warped image equal", where);
	UNIT_CHECK(dp2d_ok(s, c, 203, device, where, MCC_IMG_WARP | MCC_IMG_WARPED, 1, &a, 6, bs, 6, pa, pb),
			   "DP2D (%s): 1:6 in one request, every pair equal", where);
	UNIT_CHECK(dp2d_ok(s, c, 204, device, where, MCC_IMG_WARP, 6, bs, 1, &a, 6, pb, pa),
			   "DP2D (%s): 6:1 (one probe against six references), every pair equal", where);

	/* verification: a print, a rotated one, noise */
	prints[0] = print_image(96, 0.0, 40);
	prints[1] = print_image(96, 0.0, 38);
	prints[2] = print_image(96, M_PI / 2, 40);
	prints[3] = ti_random_image(&rng, 80, 100);
	UNIT_CHECK(verify_ok(s, c, 205, device, where, &prints[0], 4, prints),
			   "DP2D (%s): enhanced 1:4 verification equals mcc_dp2d_verify per probe", where);

	/* widths 31 and 70: more than twice, the core's error */
	eng_buf_init(&b);
	ti_dp2d(&b, 206, device, 0, 1, &a, 1, &wide, 1, pa, pb);
	ip_feed(s, c, &b);
	ti_pump(s);
	memset(&out, 0, sizeof(out));
	(void) mcc_dp2d_match(&a, &wide, MCC_DP2D_AUTO, 0, &out, &err);
	UNIT_CHECK(ti_reply_of(c, 206, &r, NULL) && r.status == (uint32_t) err.status &&
			   strcmp(r.message, err.message) == 0,
			   "DP2D (%s): images too different in width give the core's error (%s)", where, r.message);
	ip_clear_out(c);

	/* an 8 x 8 probe cannot be enhanced: which one is said */
	prints[3].width = prints[3].height = 8;
	prints[3].stride = 8;
	memcpy(prints[3].pixels, tiny.pixels, 64);
	ti_dp2d(&b, 207, device, MCC_IMG_WARP | MCC_IMG_ENHANCE, 1, prints, 4, prints, 4, pa, pb);
	ip_feed(s, c, &b);
	ti_pump(s);
	mcc_dp2d_prep_default(&prep);
	{
		uint8_t    *tmp = malloc((size_t) prep.side * prep.side);

		(void) mcc_dp2d_enhance(&tiny, &prep, tmp, &err);
		free(tmp);
	}
	UNIT_CHECK(ti_reply_of(c, 207, &r, NULL) && r.status == (uint32_t) err.status &&
			   strcmp(r.message, err.message) == 0 && eng_rd_u32(&r.rd) == 2 && eng_rd_u32(&r.rd) == 3,
			   "DP2D (%s): a probe too small to enhance: its error, side b, index 3", where);
	ip_clear_out(c);
	eng_buf_free(&b);
	free(a.pixels);
	free(tiny.pixels);
	free(wide.pixels);
	for (int i = 0; i < 6; i++)
		free(bs[i].pixels);
	for (int i = 0; i < 4; i++)
		free(prints[i].pixels);
}

/* ---- CHAMFER and ALIGN ---------------------------------------------------- */

/* Is a fit the reference's: bit for bit (exact) or within the GPU's rounding? */
static bool
fit_equal(const ti_fit *f, const mcc_chamfer_result *res, int iterations, bool exact)
{
	if (f->n_params != (uint32_t) res->n_params)
		return false;
	if (exact)
		return memcmp(f->params, res->params, sizeof(double) * f->n_params) == 0 &&
			memcmp(&f->residual, &res->residual, sizeof(double)) == 0 &&
			f->iterations == iterations && f->converged == (uint32_t) (res->converged != 0);
	for (uint32_t i = 0; i < f->n_params; i++)
		if (!(fabs(f->params[i] - res->params[i]) <= 1e-6 * (1 + fabs(res->params[i]))))
			return false;
	return fabs(f->residual - res->residual) <= 1e-6 * (1 + res->residual);
}

/* n points around a centre: an irregular 2D or 3D cloud. */
static double *
cloud(int n, int dim)
{
	double	   *p = malloc(sizeof(double) * n * dim);

	for (int i = 0; i < n * dim; i++)
		p[i] = (tg_unit(&rng) - 0.5) * 100.0 + (i % dim == 0 ? 20.0 : -7.0);
	return p;
}

/* The chamfer fit of obs onto ref through the engine against mcc_chamfer_align. */
static bool
chamfer_ok(eng_server *s, eng_conn *c, uint64_t rid, uint32_t device, const char *where,
		   int dim, const mcc_chamfer_opts *o, const double *obs, int n_obs, const double *ref,
		   int n_ref)
{
	eng_buf		b;
	ti_reply	r;
	uint8_t    *cp;
	ti_fit		fit;
	mcc_chamfer_result res;
	mcc_error	err;
	bool		ok;

	eng_buf_init(&b);
	ti_chamfer(&b, rid, device, dim, o, obs, (uint32_t) n_obs, ref, (uint32_t) n_ref);
	ok = ti_result(s, c, &b, rid, MCC_MSG_CHAMFER_RESULT, &r, &cp) && ti_ran_on(&r, where) &&
		ti_read_fit(&r.rd, &fit) && eng_rd_done(&r.rd) &&
		mcc_chamfer_align(obs, n_obs, ref, n_ref, dim, o, &res, &err) == MCC_OK &&
		fit_equal(&fit, &res, res.iterations, strcmp(where, "cpu") == 0);
	if (!ok)
		printf("# CHAMFER %llu: status %u %s\n", (unsigned long long) rid, r.status, r.message);
	free(cp);
	ip_clear_out(c);
	return ok;
}

static void
test_chamfer(eng_server *s, eng_conn *c, uint32_t device, const char *where)
{
	double	   *ref2 = cloud(400, 2);
	double	   *ref3 = cloud(300, 3);
	double	   *obs2 = malloc(sizeof(double) * 300 * 2);
	double	   *obs3 = malloc(sizeof(double) * 200 * 3);
	double		one[2] = {1, 2};
	mcc_chamfer_opts o;
	eng_buf		b;
	ti_reply	r;
	mcc_chamfer_result res;
	mcc_error	err;

	/* observed: a rotated, scaled, shifted subset with noise */
	for (int i = 0; i < 300; i++)
	{
		double		x = ref2[2 * i],
					y = ref2[2 * i + 1];

		obs2[2 * i] = 1.1 * (cos(0.2) * x - sin(0.2) * y) + 5 + (tg_unit(&rng) - 0.5) * 0.3;
		obs2[2 * i + 1] = 1.1 * (sin(0.2) * x + cos(0.2) * y) - 3 + (tg_unit(&rng) - 0.5) * 0.3;
	}
	for (int i = 0; i < 200 * 3; i++)
		obs3[i] = ref3[i] + (i % 3 == 1 ? 2.5 : 0.0) + (tg_unit(&rng) - 0.5) * 0.2;
	mcc_chamfer_opts_init(&o);
	UNIT_CHECK(chamfer_ok(s, c, 301, device, where, 2, &o, obs2, 300, ref2, 400),
			   "CHAMFER (%s): 2D similarity equals mcc_chamfer_align", where);
	o.transform = MCC_XFORM_AFFINE;
	o.max_distance = 6.0;
	o.resolution = 0.5;
	UNIT_CHECK(chamfer_ok(s, c, 302, device, where, 2, &o, obs2, 300, ref2, 400),
			   "CHAMFER (%s): 2D affine, truncated, resolution 0.5 equals mcc_chamfer_align", where);
	mcc_chamfer_opts_init(&o);
	o.transform = MCC_XFORM_EUCLIDEAN;
	UNIT_CHECK(chamfer_ok(s, c, 303, device, where, 3, &o, obs3, 200, ref3, 300),
			   "CHAMFER (%s): 3D euclidean equals mcc_chamfer_align", where);
	mcc_chamfer_opts_init(&o);
	{
		const double p[4] = {1.05, 0.15, 4, -2};

		(void) mcc_chamfer_params_to_matrix(MCC_XFORM_SIMILARITY, 2, p, o.init, &err);
		o.init_type = MCC_XFORM_SIMILARITY;
	}
	UNIT_CHECK(chamfer_ok(s, c, 304, device, where, 2, &o, obs2, 300, ref2, 400),
			   "CHAMFER (%s): from an initial transform equals mcc_chamfer_align", where);
	mcc_chamfer_opts_init(&o);
	o.min_scale = 0.5;
	o.max_scale = 2.0;
	UNIT_CHECK(chamfer_ok(s, c, 306, device, where, 2, &o, obs2, 300, ref2, 400),
			   "CHAMFER (%s): the search over scales 0.5-2 equals mcc_chamfer_align", where);
	/* one reference point: the core's error */
	mcc_chamfer_opts_init(&o);
	eng_buf_init(&b);
	ti_chamfer(&b, 305, device, 2, &o, obs2, 300, one, 1);
	ip_feed(s, c, &b);
	eng_buf_free(&b);
	ti_pump(s);
	(void) mcc_chamfer_align(obs2, 300, one, 1, 2, &o, &res, &err);
	UNIT_CHECK(ti_reply_of(c, 305, &r, NULL) && r.status == (uint32_t) err.status &&
			   strcmp(r.message, err.message) == 0 && strcmp(r.detail, err.detail) == 0,
			   "CHAMFER (%s): one reference point gives the core's error (%s)", where, r.message);
	ip_clear_out(c);
	free(ref2);
	free(ref3);
	free(obs2);
	free(obs3);
}

/* The alignment of two templates through the engine against mcc_align_minutiae. */
static bool
align_ok(eng_server *s, eng_conn *c, uint64_t rid, uint32_t device, const char *where,
		 const mcc_align_opts *o, const tl_tpl *probe, const tl_tpl *cand)
{
	eng_buf		b;
	ti_reply	r;
	uint8_t    *cp;
	ti_fit		fit;
	mcc_template_view pv,
				cv;
	mcc_minutiae *pm = malloc(sizeof(mcc_minutiae));
	mcc_minutiae *cm = malloc(sizeof(mcc_minutiae));
	mcc_align_result *res = malloc(sizeof(mcc_align_result));
	mcc_error	err;
	bool		exact = strcmp(where, "cpu") == 0;
	bool		ok;
	uint32_t	n;

	eng_buf_init(&b);
	ti_align(&b, rid, device, o, probe, cand);
	(void) mcc_template_open(probe->b, probe->n, &pv, &err);
	(void) mcc_template_open(cand->b, cand->n, &cv, &err);
	mcc_template_minutiae(&pv, pm);
	mcc_template_minutiae(&cv, cm);
	ok = ti_result(s, c, &b, rid, MCC_MSG_ALIGN_RESULT, &r, &cp) && ti_ran_on(&r, where) && ti_read_fit(&r.rd, &fit) &&
		mcc_align_minutiae(pm, cm, o, res, &err) == MCC_OK &&
		fit_equal(&fit, &res->fit, res->iterations, exact) &&
		(n = eng_rd_u32(&r.rd)) == (uint32_t) res->n_probe;
	for (uint32_t i = 0; ok && i < n; i++)
		for (int k = 0; ok && k < 3; k++)
		{
			double		v = eng_rd_f64(&r.rd);

			ok = exact ? memcmp(&v, &res->mapped[i][k], sizeof(double)) == 0 :
				fabs(v - res->mapped[i][k]) <= 1e-6 * (1 + fabs(res->mapped[i][k]));
		}
	ok = ok && (!exact || eng_rd_u32(&r.rd) == (uint32_t) res->paired);
	if (!ok)
		printf("# ALIGN %llu: status %u %s\n", (unsigned long long) rid, r.status, r.message);
	free(cp);
	free(pm);
	free(cm);
	free(res);
	ip_clear_out(c);
	return ok;
}

static void
test_align(eng_server *s, eng_conn *c, uint32_t device, const char *where)
{
	mcc_minutiae master,
				imp;
	tl_tpl		t[3];
	mcc_align_opts o;

	tg_minutiae(&rng, &master, 30, 45, 12.0);
	t[0] = tl_build(&master);
	tg_impression(&rng, &master, &imp, 0.85, 4, 0.1, 3);
	t[1] = tl_build(&imp);
	tg_minutiae(&rng, &imp, 25, 40, 12.0);
	t[2] = tl_build(&imp);
	mcc_align_opts_init(&o);
	UNIT_CHECK(align_ok(s, c, 401, device, where, &o, &t[1], &t[0]),
			   "ALIGN (%s): an impression onto its master equals mcc_align_minutiae", where);
	o.transform = MCC_XFORM_SIMILARITY;
	o.use_directions = 0;
	o.max_distance = 20;
	UNIT_CHECK(align_ok(s, c, 402, device, where, &o, &t[2], &t[0]),
			   "ALIGN (%s): another finger, similarity, the position search, equals mcc_align_minutiae",
			   where);
	o.use_directions = 1;
	o.init_type = MCC_XFORM_EUCLIDEAN;
	{
		const double init[9] = {cos(0.1), -sin(0.1), 4, sin(0.1), cos(0.1), -3, 0, 0, 1};

		memcpy(o.init, init, sizeof(init));
	}
	UNIT_CHECK(align_ok(s, c, 403, device, where, &o, &t[1], &t[0]),
			   "ALIGN (%s): from an initial transform equals mcc_align_minutiae", where);
	for (int i = 0; i < 3; i++)
		free(t[i].b);
}

/* ---- the protocol around jobs --------------------------------------------- */

/* HELLO_OK's flags. */
static uint32_t
hello_flags(eng_server *s, eng_conn *c)
{
	eng_buf		b;
	tl_frame	f;
	uint32_t	flags = 0;

	eng_buf_init(&b);
	tl_hello(&b, 9);
	ip_feed(s, c, &b);
	eng_buf_free(&b);
	if (ip_reply(c, 9, &f, NULL) == 1 && f.h.type == MCC_MSG_HELLO_OK && f.h.length == 16)
		memcpy(&flags, f.p + 12, 4);
	ip_clear_out(c);
	return flags;
}

/* A SAD job that takes a while on two threads (a second or so). */
static void
big_sad(eng_buf *b, uint64_t rid, uint32_t device, mcc_image *t, mcc_image *p)
{
	*t = ti_random_image(&rng, 1500, 1500);
	*p = ti_random_image(&rng, 150, 150);
	ti_sad(b, rid, device, 5, false, t, p);
}

static void
test_protocol(eng_gpu_mode mode)
{
	eng_server	s;
	eng_conn   *c,
			   *c2;
	eng_buf		b;
	mcc_image	t,
				p;
	eng_image_stats st;
	tl_frame	f;
	uint32_t	flags;

	server(&s, mode);
	c = eng_conn_add(&s, -1);
	flags = hello_flags(&s, c);
	UNIT_CHECK((flags & MCC_HELLO_IMAGES) && ((flags & MCC_HELLO_GPU) != 0) == eng_image_has_gpu(&s),
			   "HELLO_OK: image jobs taken, GPU flag %s", (flags & MCC_HELLO_GPU) ? "set" : "clear");

	/* CANCEL right behind the job: no result, the job is dropped */
	eng_buf_init(&b);
	big_sad(&b, 11, MCC_IMG_ANY, &t, &p);
	{
		size_t		fr = eng_frame_begin(&b, MCC_MSG_CANCEL, 12);

		eng_buf_u64(&b, 11);
		eng_frame_end(&b, fr);
	}
	ip_feed(&s, c, &b);
	ti_pump(&s);
	eng_image_get_stats(&s, &st);
	UNIT_CHECK(ip_reply(c, 11, NULL, NULL) == 0 && st.cancelled == 1 && s.images == NULL,
			   "CANCEL stops a job: no reply, nothing left");

	/* a closed connection cancels its jobs */
	c2 = eng_conn_add(&s, -1);
	ti_sad(&b, 13, MCC_IMG_ANY, 5, false, &t, &p);
	ip_feed(&s, c2, &b);
	eng_conn_close(&s, c2);
	ti_pump(&s);
	eng_image_get_stats(&s, &st);
	UNIT_CHECK(st.cancelled == 2 && s.images == NULL, "a closed connection cancels its job");

	/* shutdown: the pending job's client hears why */
	ti_sad(&b, 14, MCC_IMG_ANY, 5, false, &t, &p);
	ip_feed(&s, c, &b);
	eng_server_fail_all(&s, "shutting down");
	ti_pump(&s);
	UNIT_CHECK(ip_reply(c, 14, &f, NULL) == 1 && tl_error_code(&f) == MCC_PERR_CANCELLED,
			   "shutdown answers a running job with MCC_PERR_CANCELLED, once");
	ip_clear_out(c);
	free(t.pixels);
	free(p.pixels);

	/* a GPU demanded where there is none */
	if (!eng_image_has_gpu(&s))
	{
		mcc_image	a = ti_random_image(&rng, 10, 10);

		ti_sad(&b, 15, MCC_IMG_GPU, 1, false, &a, &a);
		ip_feed(&s, c, &b);
		ti_pump(&s);
		UNIT_CHECK(ip_reply(c, 15, &f, NULL) == 1 && tl_error_code(&f) == MCC_PERR_NO_GPU,
				   "MCC_IMG_GPU without a GPU: MCC_PERR_NO_GPU");
		free(a.pixels);
		ip_clear_out(c);
	}

	/* malformed: a cut image, then an unknown device; each closes its connection */
	{
		mcc_image	a = ti_random_image(&rng, 10, 10);
		size_t		fr;

		fr = eng_frame_begin(&b, MCC_MSG_SAD, 16);
		eng_buf_u32(&b, MCC_IMG_ANY);
		eng_buf_u32(&b, 1);
		eng_buf_u32(&b, 0);
		eng_buf_u32(&b, 10);
		eng_buf_u32(&b, 10);
		eng_buf_put(&b, a.pixels, 50);
		eng_frame_end(&b, fr);
		ip_feed(&s, c, &b);
		UNIT_CHECK(c->closing && ip_error_of(c, 16) == MCC_PERR_PROTOCOL,
				   "a SAD frame with a cut image: MCC_PERR_PROTOCOL, connection closing");
		c2 = eng_conn_add(&s, -1);
		ti_sad(&b, 17, 7, 1, false, &a, &a);
		ip_feed(&s, c2, &b);
		UNIT_CHECK(c2->closing && ip_error_of(c2, 17) == MCC_PERR_PROTOCOL,
				   "an unknown device value: MCC_PERR_PROTOCOL");
		free(a.pixels);
	}
	eng_buf_free(&b);
	ti_pump(&s);
	eng_server_destroy(&s);
}

/* Every kind of job on the given path. */
static void
test_jobs(eng_server *s, uint32_t device, const char *where)
{
	eng_conn   *c = eng_conn_add(s, -1);

	test_sad(s, c, device, where);
	test_dp2d(s, c, device, where);
	test_chamfer(s, c, device, where);
	test_align(s, c, device, where);
	eng_conn_close(s, c);
}

/* ---- GPU only ------------------------------------------------------------- */

/* A small SAD job's reply: ran where, and equal to the reference. */
static void
test_gpu_failures(void)
{
	eng_server	s;
	eng_conn   *c;
	eng_buf		b;
	mcc_image	t = ti_random_image(&rng, 60, 40),
				p = ti_random_image(&rng, 12, 9);
	tl_frame	f;
	eng_image_stats st;

	server(&s, ENG_GPU_ON);
	c = eng_conn_add(&s, -1);
	eng_img_gpu_test_inject(s.img_gpu, ENG_IMG_GPU_RETRY);
	UNIT_CHECK(ti_sad_ok(&s, c, 501, MCC_IMG_ANY, "cpu", &t, &p, 3, true),
			   "GPU: a CUDA error sends the job to the CPU, same answer");
	UNIT_CHECK(ti_sad_ok(&s, c, 502, MCC_IMG_ANY, "gpu", &t, &p, 3, true),
			   "GPU: the next job is on the GPU again");
	eng_img_gpu_test_inject(s.img_gpu, ENG_IMG_GPU_RETRY);
	eng_buf_init(&b);
	ti_sad(&b, 503, MCC_IMG_GPU, 3, false, &t, &p);
	ip_feed(&s, c, &b);
	ti_pump(&s);
	UNIT_CHECK(ip_reply(c, 503, &f, NULL) == 1 && tl_error_code(&f) == MCC_PERR_NO_GPU,
			   "GPU: with MCC_IMG_GPU a GPU failure is MCC_PERR_NO_GPU");
	ip_clear_out(c);

	/* a long job on the GPU, cancelled */
	{
		mcc_image	bt,
					bp;

		big_sad(&b, 504, MCC_IMG_GPU, &bt, &bp);
		ip_feed(&s, c, &b);
		eng_server_step(&s);
		eng_image_cancel(&s, c->id, 504);
		ti_pump(&s);
		eng_image_get_stats(&s, &st);
		UNIT_CHECK(ip_reply(c, 504, NULL, NULL) == 0 && st.cancelled == 1,
				   "GPU: CANCEL of a running job: no reply");
		free(bt.pixels);
		free(bp.pixels);
	}

	/* a lost context: no GPU for images nor searches from now on */
	eng_img_gpu_test_inject(s.img_gpu, ENG_IMG_GPU_STICKY);
	UNIT_CHECK(ti_sad_ok(&s, c, 505, MCC_IMG_ANY, "cpu", &t, &p, 3, true),
			   "GPU: a lost context: this job on the CPU, same answer");
	UNIT_CHECK(!eng_image_has_gpu(&s) && !eng_gpu_usable(s.gpu) &&
			   (hello_flags(&s, c) & MCC_HELLO_GPU) == 0,
			   "GPU: then no GPU for image jobs or searches, HELLO_OK says so");
	UNIT_CHECK(ti_sad_ok(&s, c, 506, MCC_IMG_ANY, "cpu", &t, &p, 3, true),
			   "GPU: and jobs run on the CPU");
	eng_buf_free(&b);
	free(t.pixels);
	free(p.pixels);
	eng_server_destroy(&s);
}

int
main(int argc, char **argv)
{
	bool		no_device = argc > 1 && strcmp(argv[1], "--no-device") == 0;
	eng_server	s;

	mcc_lss_init();
	eng_log_set_level(ENG_LOG_ERROR);

	/* the CPU path: asked for, and the fallback of an engine without a GPU */
	server(&s, ENG_GPU_OFF);
	test_jobs(&s, MCC_IMG_CPU, "cpu");
	test_jobs(&s, MCC_IMG_ANY, "cpu");
	eng_server_destroy(&s);
	test_protocol(ENG_GPU_OFF);

	if (!eng_gpu_built())
		UNIT_SKIP("built without the GPU path (make gpu-check builds it with nvcc): GPU image checks skipped");
	else if (no_device)
		test_protocol(ENG_GPU_ON);	/* no device visible: the CPU, and MCC_PERR_NO_GPU */
	else
	{
		bool		gpu;

		server(&s, ENG_GPU_ON);
		gpu = eng_image_has_gpu(&s);
		if (!gpu)
			UNIT_SKIP("no usable GPU: GPU image checks skipped");
		else
		{
			test_jobs(&s, MCC_IMG_GPU, "gpu");
			test_jobs(&s, MCC_IMG_ANY, "gpu");
		}
		eng_server_destroy(&s);
		if (gpu)
			test_gpu_failures();	/* last: it loses the GPU */
	}
	return unit_done();
}
