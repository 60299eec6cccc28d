/*
 * test_refine_gpu_emu.c: the GPU refinement kernel's code, run on the CPU.
 *
 * kernels/impl/mcc_refine_body.h holds everything a block of the kernel
 * computes for a pair, phase by phase; kernels/impl/mcc_refine_pack.h what the
 * host prepares (sides in minutia order, gallery geometry records, the
 * unit-vector table, the plan of a method). Here the body is compiled as C
 * and "launched" by looping over the block's threads in every phase (a
 * phase ends where the kernel has a barrier), for candidates given as
 * templates and for candidates read from an emulated device gallery whose
 * cylinders sit in scrambled slots (as the tiles of kernels/ put them), with
 * several block sizes and key-buffer capacities (the small ones force the
 * paths of big templates: Gamma and rho in global memory, ranking in
 * rounds). Every score must equal mcc_match_candidate()'s, bit for bit, for
 * every method the GPU runs, with the CPU's generic kernel: the GPU is held
 * to the scalar definition itself (test_match_kernels holds the SIMD
 * kernels to it). The CUDA side adds only launches and copies;
 * make gpu-check runs the real kernel where there is a GPU
 * (test/gpu/gpu_check_refine.c, on the same kinds of data).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RB_DRIVER static
#define RB_PHASE(...) do { for (int tid = 0; tid < nt; tid++) { __VA_ARGS__; } } while (0)
#define RB_WSTEP RB_PHASE
#include "../../kernels/impl/mcc_refine_pack.h"

#include "mcc_soa.h"
#include "refine_testdata.h"
#include "unit.h"

static const int methods[] = {MCC_FUSED, MCC_LSS_DTR, MCC_LSS_R, MCC_LGS, MCC_LGS_R, MCC_LGS_DTR, MCC_LSS};
#define NMETH ((int) (sizeof(methods) / sizeof(methods[0])))

/* Every template of a set as a kernel side, and as an emulated device gallery. */
typedef struct emu
{
	rb_cyl	   *cyl;
	rb_side    *sides;
	/* the gallery: slots scrambled, records as kernels/impl/mcc_gpu_refine_data.cu writes them */
	mcc_soa		soa;
	mcc_gpu_geom geo;
	rp_utab		u;
	uint32_t   *lo;
	uint32_t   *hi;
	uint32_t   *meta;
	uint32_t   *tcoff;
	uint16_t   *tncyl;
	uint32_t   *sslot;
	uint8_t    *rperm;
	uint32_t   *rxy;
	uint32_t   *ruix;
} emu;

static int
emu_build(emu *e, const rt_set *s, uint64_t seed)
{
	mcc_error	err;
	uint32_t	off = 0;
	uint32_t	n;
	uint32_t   *slot;
	tg_rng		r = {seed};

	memset(e, 0, sizeof(*e));
	e->cyl = calloc((size_t) s->n * MCC_MAX_CYL + 1, sizeof(rb_cyl));
	e->sides = calloc((size_t) s->n + 1, sizeof(rb_side));
	if (mcc_soa_init(&e->soa, mcc_profile_by_id(MCC_PROFILE_GPU2015), 64, 1024, &err) != MCC_OK ||
		rp_geom_init(&e->geo, 64, 1024) != 0)
		return -1;
	for (int t = 0; t < s->n; t++)
	{
		int			k = rp_side(&s->v[t], e->cyl + off);

		if (k < 0 || mcc_soa_append(&e->soa, &s->v[t], t, &err) != MCC_OK ||
			rp_geom_append(&e->geo, &s->v[t]) != 0)
			return -1;
		e->sides[t].off = off;
		e->sides[t].n = (uint32_t) k;
		off += (uint32_t) k;
	}
	n = e->soa.n_cyl;
	/*
	 * Seed 1 (the synthetic fingers): the direction hash full before the
	 * gallery, as in a gallery of millions of synthetic templates, so every
	 * record gets an entry of its own, past every de-duplicated one.
	 */
	for (uint32_t i = 0; seed == 1 && i < RP_UHASH_MAX; i++)
	{
		uint32_t	idx;

		if (rp_utab_index(&e->u, (float) (-1.0 - i * 1e-4), &idx) != 0)
			return -1;
	}
	/* scrambled slots: soa cylinder j lives at slot[j] */
	slot = malloc(sizeof(uint32_t) * (n + 1));
	for (uint32_t j = 0; j < n; j++)
		slot[j] = j;
	for (uint32_t j = n; j > 1; j--)
	{
		uint32_t	i = (uint32_t) tg_int(&r, 0, (int) j - 1);
		uint32_t	t = slot[j - 1];

		slot[j - 1] = slot[i];
		slot[i] = t;
	}
	e->lo = calloc(4 * (size_t) n + 4, 4);
	e->hi = calloc(4 * (size_t) n + 4, 4);
	e->meta = calloc((size_t) n + 1, 4);
	e->tcoff = calloc((size_t) s->n + 1, 4);
	e->tncyl = calloc((size_t) s->n + 1, 2);
	e->sslot = calloc((size_t) n + 1, 4);
	e->rperm = calloc((size_t) n + 1, 1);
	e->rxy = calloc((size_t) n + 1, 4);
	e->ruix = calloc((size_t) n + 1, 4);
	for (uint32_t j = 0; j < n; j++)
	{
		uint32_t	d = slot[j];

		for (int w = 0; w < 4; w++)
		{
			uint64_t	x = e->soa.bits[(size_t) w * e->soa.cap_cyl + j];
			uint32_t   *dst = w < 2 ? e->lo : e->hi;

			dst[4 * (size_t) d + 2 * (w & 1)] = (uint32_t) x;
			dst[4 * (size_t) d + 2 * (w & 1) + 1] = (uint32_t) (x >> 32);
		}
		e->meta[d] = e->soa.angle[j] | 7u << 8 | (uint32_t) e->soa.pc[j] << 16 | 1u << 31;
	}
	for (int t = 0; t < s->n; t++)
	{
		uint32_t	f = e->soa.first[t];

		e->tcoff[t] = f;
		e->tncyl[t] = e->soa.ncyl[t];
		for (uint32_t i = 0; i < e->soa.ncyl[t]; i++)
			e->sslot[f + i] = slot[f + i];
		if (e->geo.first[t] != f ||
			rp_geom_records(&e->geo, (uint32_t) t, &e->u, e->rperm + f, e->rxy + f, e->ruix + f) != 0)
			return -1;
	}
	free(slot);
	return 0;
}

static void
emu_free(emu *e)
{
	free(e->cyl);
	free(e->sides);
	mcc_soa_free(&e->soa);
	rp_geom_free(&e->geo);
	rp_utab_free(&e->u);
	free(e->lo);
	free(e->hi);
	free(e->meta);
	free(e->tcoff);
	free(e->tncyl);
	free(e->sslot);
	free(e->rperm);
	free(e->rxy);
	free(e->ruix);
}

/* A launch configuration: threads per block and key capacity (0 = the class's). */
typedef struct cfg
{
	int			nt;
	uint32_t	kcap;
	int			max_side;		/* pairs with a larger side are skipped */
} cfg;

/* The pairs behind a relaxed score (mcc_match_last_pairs): minutia indices and final lambdas. */
typedef struct lastp
{
	int			n;
	int			r[MCC_MAX_CYL];
	int			c[MCC_MAX_CYL];
	double		v[MCC_MAX_CYL];
} lastp;

/* Minutia index of each cylinder rank of a template (the order of its side). */
static void
minutia_of_rank(const mcc_template_view *t, int *mi)
{
	int			order[MCC_MAX_CYL];
	int			n = rp_order(t, order);

	for (int k = 0; k < n; k++)
		mi[k] = mcc_template_cyl_minutia(t, order[k]);
}

/*
 * One pair as a block of the kernel would score it: the class, the
 * shared memory and scratch the host would give it, then rb_pair. With
 * last, the last relaxed set's selected pairs as mcc_match_last_pairs
 * reports them (the block's shared memory read after the pair).
 */
static float
emu_pair(const emu *e, const rt_set *s, const rb_plan *plan, const mcc_match_params *mp, int method,
		 const cfg *c, int a, int b, int from_gallery, int nlast, lastp *last)
{
	rb_args		args;
	rb_ws		ws;
	rb_pair_desc d;
	uint32_t	na = e->sides[a].n;
	uint32_t	nb = e->sides[b].n;
	int			cls = rp_class(na, nb);
	uint32_t	nmax = rp_class_nmax[cls];
	uint32_t	kcap = c->kcap ? c->kcap : rp_class_kcap[cls];
	uint32_t	m = na < nb ? na : nb;
	unsigned char *smem;
	float		out = -2.0f;
	int			nt = c->nt;

	memset(&args, 0, sizeof(args));
	memset(&d, 0, sizeof(d));
	d.a = (uint32_t) a;
	d.b = (uint32_t) b;
	d.bside = (uint8_t) !from_gallery;
	rp_np(d.np, method, mp, mcc_profile_by_id(MCC_PROFILE_GPU2015), (int) m);
	args.pairs = &d;
	args.npairs = 1;
	args.cyl = e->cyl;
	args.sides = e->sides;
	args.gal.lo = e->lo;
	args.gal.hi = e->hi;
	args.gal.meta = e->meta;
	args.gal.tcoff = e->tcoff;
	args.gal.tncyl = e->tncyl;
	args.gal.sslot = e->sslot;
	args.gal.rperm = e->rperm;
	args.gal.rxy = e->rxy;
	args.gal.ruix = e->ruix;
	args.gal.utab = e->u.v;
	args.tabs = &mp->tab[0][0];
	args.sqrt_tab = NULL;
	args.plan = *plan;
	args.delta = mcc_profile_by_id(MCC_PROFILE_GPU2015)->delta_theta;
	args.nmax = nmax;
	args.kcap = kcap;
	args.out = &out;
	{
		static uint32_t sq[RB_LUT];

		for (int i = 0; i < RB_LUT; i++)
			sq[i] = i <= 256 ? mcc_lss_sqrt_fx(i) : 0;
		args.sqrt_tab = sq;
	}
	if ((uint64_t) na * nb > kcap)
	{
		args.gstride = (uint64_t) na * nb;
		args.gscr = malloc(sizeof(float) * args.gstride);
	}
	if ((uint64_t) m * m > kcap)
	{
		args.rstride = (uint64_t) m * m;
		args.rscr = malloc(sizeof(double) * args.rstride);
	}
	smem = malloc(rb_ws_carve(&ws, NULL, nmax, kcap));
	/* poison: the kernel must not read what it did not write */
	memset(smem, 0xA5, rb_ws_carve(&ws, NULL, nmax, kcap));
	rb_ws_carve(&ws, smem, nmax, kcap);
	RB_PHASE(rb_ph_init(&ws, &args, tid, nt));
	rb_pair(&ws, &args, 0, 0, nt);
	if (last && plan->nsets > 0 && plan->relax[plan->nsets - 1])
	{
		int			set = plan->nsets - 1;
		int			mia[MCC_MAX_CYL];
		int			mib[MCC_MAX_CYL];
		const double *lam = nlast >= 2 && plan->rx[set].n_rel % 2 ? ws.nxt : ws.lam;

		minutia_of_rank(&s->v[a], mia);
		minutia_of_rank(&s->v[b], mib);
		last->n = nlast;
		for (int i = 0; i < nlast; i++)
		{
			int			t = ws.sel[i];

			last->r[i] = t < MCC_MAX_CYL ? mia[ws.pr[set][t]] : -1;
			last->c[i] = t < MCC_MAX_CYL ? mib[ws.pcc[set][t]] : -1;
			last->v[i] = t < MCC_MAX_CYL ? lam[t] : -1.0;
		}
	}
	free(smem);
	free(args.gscr);
	free(args.rscr);
	return out;
}

static const char *
kcap_name(uint32_t kcap)
{
	static char buf[32];

	if (kcap == 0)
		return "per class";
	snprintf(buf, sizeof(buf), "%u", kcap);
	return buf;
}

/*
 * Every pair of s with every method and configuration, as templates and
 * from the gallery, against mcc_match_candidate.
 */
static void
check_set(const char *what, const rt_set *s, const emu *e, const cfg *cfgs, int ncfg)
{
	mcc_match_work *w = malloc(mcc_match_work_size());
	const mcc_match_params *mp = mcc_match_params_std();
	long		bad[8][NMETH];
	long		badl[8][NMETH];
	long		done[8];
	mcc_error	err;
	static lastp cl[NMETH];
	static lastp gl;

	memset(bad, 0, sizeof(bad));
	memset(badl, 0, sizeof(badl));
	memset(done, 0, sizeof(done));
	mcc_match_work_init(w);
	for (int i = 0; i < s->npairs; i++)
	{
		int			a = s->pa[i];
		int			b = s->pb[i];
		int			big = s->v[a].n_cyl > s->v[b].n_cyl ? s->v[a].n_cyl : s->v[b].n_cyl;
		float		ref[NMETH];

		mcc_match_set_probe(w, &s->v[a]);
		for (int mi = 0; mi < NMETH; mi++)
		{
			if (mcc_match_candidate(w, &s->v[b], methods[mi], NULL, &ref[mi], &err) != MCC_OK)
				ref[mi] = -3.0f;
			cl[mi].n = mcc_match_last_pairs(w, cl[mi].r, cl[mi].c, cl[mi].v, MCC_MAX_CYL);
		}
		for (int ci = 0; ci < ncfg; ci++)
		{
			if (big > cfgs[ci].max_side)
				continue;
			done[ci]++;
			for (int mi = 0; mi < NMETH; mi++)
			{
				rb_plan		plan;
				float		g;

				if (s->v[a].n_cyl == 0 || s->v[b].n_cyl == 0)
					continue;	/* scored 0 on the host: no launch */
				rp_plan(&plan, methods[mi], mp);
				for (int from = 0; from < 2; from++)
				{
					g = emu_pair(e, s, &plan, mp, methods[mi], &cfgs[ci], a, b, from, cl[mi].n, &gl);
					if (plan.nsets > 0 && plan.relax[plan.nsets - 1] &&
						(memcmp(gl.r, cl[mi].r, sizeof(int) * cl[mi].n) != 0 ||
						 memcmp(gl.c, cl[mi].c, sizeof(int) * cl[mi].n) != 0 ||
						 memcmp(gl.v, cl[mi].v, sizeof(double) * cl[mi].n) != 0))
					{
						if (badl[ci][mi] < 3)
							printf("#   %s, %d threads, kcap %u, %s: pair %d: the selected pairs or their final lambdas differ\n",
								   what, cfgs[ci].nt, cfgs[ci].kcap, mcc_method_name(methods[mi]), i);
						badl[ci][mi]++;
					}
					if (memcmp(&g, &ref[mi], 4) != 0)
					{
						if (bad[ci][mi] < 3)
							printf("#   %s, %d threads, kcap %u, %s, %s: pair %d (%d x %d cylinders): %.9g, CPU %.9g\n",
								   what, cfgs[ci].nt, cfgs[ci].kcap, mcc_method_name(methods[mi]),
								   from ? "gallery" : "template", i, s->v[a].n_cyl, s->v[b].n_cyl,
								   g, ref[mi]);
						bad[ci][mi]++;
					}
				}
			}
		}
	}
	for (int ci = 0; ci < ncfg; ci++)
		for (int mi = 0; mi < NMETH; mi++)
			UNIT_CHECK(bad[ci][mi] == 0 && badl[ci][mi] == 0,
					   "%s, %d threads, key buffer %s: %s equals mcc_match_candidate on %ld pairs "
					   "(templates and gallery; score, and the final lambdas of the selected pairs)",
					   what, cfgs[ci].nt, kcap_name(cfgs[ci].kcap), mcc_method_name(methods[mi]), done[ci]);
	free(w);
}

/* The bitonic steps sort random keys of every size in descending order. */
static void
test_sort(void)
{
	tg_rng		r = {5};
	int			ok = 1;
	uint32_t	kcap = 1024;
	rb_ws		ws = {0};
	unsigned char *smem = malloc(rb_ws_carve(&ws, NULL, 8, kcap));

	rb_ws_carve(&ws, smem, 8, kcap);
	for (uint32_t m = 1; m <= kcap && ok; m += 1 + m / 3)
		for (int nt = 1; nt <= 64; nt *= 4)
		{
			uint32_t	p = rb_pow2(m);

			for (uint32_t i = 0; i < m; i++)
				ws.keys[i] = (tg_next(&r) >> 17) | 1;
			if (m > 3)
				ws.keys[m - 1] = ws.keys[0];	/* a duplicate */
			rb_sort_round(&ws, m, nt);
			for (uint32_t i = 1; i < p; i++)
				ok &= ws.keys[i - 1] >= ws.keys[i];
			ok &= ws.keys[m - 1] != 0 && (p == m || ws.keys[m] == 0);
		}
	UNIT_CHECK(ok, "bitonic steps sort 1 .. 1024 keys in descending order, any block size");
	free(smem);
}

/*
 * rb_sort_round's warp steps: for every distance jj < 32, the thread that
 * exchanges a key belongs to one warp, the same for every such step (what
 * lets those steps end at warp barriers on the GPU), for the block sizes
 * the GPU library launches and every key count up to 8192.
 */
static void
test_sort_warps(void)
{
	static int	owner[8192];
	int			ok = 1;

	for (int nt = 64; nt <= 256; nt *= 2)
		for (uint32_t p = 2; p <= 8192; p <<= 1)
		{
			for (uint32_t x = 0; x < p; x++)
				owner[x] = -1;
			for (uint32_t jj = 1; jj < 32 && jj < p; jj <<= 1)
				for (uint32_t i = 0; i < p / 2; i++)
				{
					uint32_t	l = (i / jj) * 2 * jj + (i % jj);
					int			w = (int) (i % (uint32_t) nt) / 32;

					ok &= owner[l] < 0 || owner[l] == w;
					ok &= owner[l + jj] < 0 || owner[l + jj] == w;
					owner[l] = owner[l + jj] = w;
				}
		}
	UNIT_CHECK(ok, "the sort's steps of distance below 32 touch each key from one warp only "
			   "(64, 128 and 256 threads, 2 .. 8192 keys)");
}

/* Keys order as mcc_entry_key does and give back Gamma, r and c. */
static void
test_keys(void)
{
	int			ok = 1;
	float		g[] = {1.0f, 0.5f, 0.25f, 1e-30f, 0.999999f};

	for (int i = 0; i < 5; i++)
		for (uint32_t r = 0; r < 256; r += 51)
			for (uint32_t c = 0; c < 256; c += 17)
			{
				uint64_t	k = mcc_entry_key(g[i], (int) r, (int) c);

				ok &= mcc_key_gamma(k) == g[i] && (uint32_t) mcc_key_row(k) == r && (uint32_t) mcc_key_col(k) == c;
				ok &= k > mcc_entry_key(g[i], (int) r, (int) c + 1) || c == 255;
				ok &= k > mcc_entry_key(g[i], (int) r + 1, (int) c) || r == 255;
				ok &= i == 0 || k < mcc_entry_key(1.0f, 255, 255);
			}
	UNIT_CHECK(ok, "keys: Gamma, then smaller r, then smaller c, and back");
}

/* The unit-vector table: exact vectors, duplicates shared up to the cap, none beyond. */
static void
test_utab(void)
{
	rp_utab		u;
	int			ok = 1;
	uint32_t	idx = 0;
	uint32_t	first = 0;

	memset(&u, 0, sizeof(u));
	/* quantized angles: 256 distinct directions, each seen many times */
	for (int rep = 0; rep < 4; rep++)
		for (int b = 0; b < 256; b++)
		{
			float		th = mcc_angle_normalize(b * (MCC_TWO_PI / 256));
			double		s;
			double		c;

			ok &= rp_utab_index(&u, th, &idx) == 0;
			mcc_dm_sincos((double) th, &s, &c);
			ok &= u.v[2 * idx] == c && u.v[2 * idx + 1] == s;
		}
	UNIT_CHECK(ok && u.n == 256, "unit vectors of 256 quantized directions: %u entries, each exact", u.n);
	/* continuous directions beyond the de-duplication cap */
	for (uint32_t i = 0; i < RP_UHASH_MAX + 5000; i++)
	{
		float		th = (float) (i * 9.5e-5);
		double		s;
		double		c;

		ok &= rp_utab_index(&u, th, &idx) == 0;
		if (i == 0)
			first = idx;
		mcc_dm_sincos((double) th, &s, &c);
		ok &= u.v[2 * idx] == c && u.v[2 * idx + 1] == s;
	}
	/* the hash full: a known direction gets an entry of its own, with the same vector */
	ok &= rp_utab_index(&u, 0.0f, &idx) == 0 && idx == u.n - 1 && idx != first &&
		memcmp(&u.v[2 * idx], &u.v[2 * first], 16) == 0 && u.nv == u.n;
	UNIT_CHECK(ok && u.nh == RP_UHASH_MAX, "beyond %u directions every one gets its own entry (%u), all exact",
			   RP_UHASH_MAX, u.n);
	rp_utab_free(&u);
}

/*
 * Records of geo's templates sent in chunks of `chunk` with items in
 * reverse order inside each chunk (as partitions interleave them): by one
 * rp_geom_records loop into ref, by rp_records_build on nth threads into
 * got. Same records, same table entries, bit for bit?
 */
static int
records_same(const mcc_gpu_geom *geo, uint32_t chunk, int nth, uint32_t *entries, uint32_t *hashed)
{
	size_t		total = geo->first[geo->n_tpl];
	uint8_t    *p1 = malloc(total + 1),
			   *p2 = malloc(total + 1);
	uint32_t   *x1 = malloc(4 * total + 4),
			   *x2 = malloc(4 * total + 4),
			   *u1 = malloc(4 * total + 4),
			   *u2 = malloc(4 * total + 4);
	rp_rec_item *items = malloc(sizeof(rp_rec_item) * (chunk + 1));
	double	   *vnew = malloc(16 * total + 16);
	rp_utab		ref;
	rp_utab		got;
	int			ok = p1 && p2 && x1 && x2 && u1 && u2 && items && vnew;

	memset(&ref, 0, sizeof(ref));
	memset(&got, 0, sizeof(got));
	for (uint32_t t0 = 0; ok && t0 < geo->n_tpl; t0 += chunk)
	{
		uint32_t	t1 = geo->n_tpl - t0 > chunk ? t0 + chunk : geo->n_tpl;
		uint32_t	n = 0;
		uint32_t	n0 = got.n;

		for (uint32_t t = t1; t-- > t0;)
		{
			items[n].tpl = t;
			items[n].n = geo->first[t + 1] - geo->first[t];
			items[n].off = geo->first[t];
			ok &= rp_geom_records(geo, t, &ref, p1 + geo->first[t], x1 + geo->first[t],
								  u1 + geo->first[t]) == 0;
			n++;
		}
		ok &= rp_records_build(&got, geo, items, n, nth, p2, x2, u2, vnew) == 0;
		/* the call's new entries in vnew (what the device gets) are the one loop's */
		ok = ok && ref.n == got.n && memcmp(vnew, ref.v + 2 * (size_t) n0, 16 * (size_t) (got.n - n0)) == 0;
	}
	ok = ok && memcmp(p1, p2, total) == 0 && memcmp(x1, x2, 4 * total) == 0 &&
		memcmp(u1, u2, 4 * total) == 0 && ref.n == got.n && ref.nh == got.nh && got.nv <= got.n &&
		memcmp(ref.v, got.v, 16 * (size_t) got.nv) == 0;
	*entries = got.n;
	*hashed = got.nh;
	rp_utab_free(&ref);
	rp_utab_free(&got);
	free(p1);
	free(p2);
	free(x1);
	free(x2);
	free(u1);
	free(u2);
	free(items);
	free(vnew);
	return ok;
}

/*
 * The geometry of every template of s from its parts, the cylinders'
 * minutia indices one byte apart (as the engine's cache keeps them), equals
 * the geometry from the template's view, record for record.
 */
static int
parts_same(const rt_set *s)
{
	mcc_gpu_geom a;
	mcc_gpu_geom b;
	int			ok = rp_geom_init(&a, 64, 1024) == 0 && rp_geom_init(&b, 64, 1024) == 0;

	for (int t = 0; ok && t < s->n; t++)
	{
		const mcc_template_view *v = &s->v[t];
		uint8_t		cmin[MCC_MAX_CYL + 1];

		for (int c = 0; c < v->n_cyl; c++)
			cmin[c] = (uint8_t) mcc_template_cyl_minutia(v, c);
		ok = rp_geom_append(&a, v) == 0 &&
			rp_geom_append_parts(&b, v->n_min, v->minutiae, v->n_cyl, cmin, 1) == 0;
	}
	ok = ok && a.n_tpl == b.n_tpl && a.n_cyl == b.n_cyl && a.n_tpl == (uint32_t) s->n &&
		memcmp(a.first, b.first, 4 * ((size_t) a.n_tpl + 1)) == 0 &&
		memcmp(a.perm, b.perm, a.n_cyl) == 0 && memcmp(a.xy, b.xy, 4 * (size_t) a.n_cyl) == 0 &&
		memcmp(a.theta, b.theta, 4 * (size_t) a.n_cyl) == 0;
	/* one cylinder per minutia, or refused: two cylinders naming one minutia */
	if (ok && s->v[0].n_cyl >= 2)
	{
		const mcc_template_view *v = &s->v[0];
		uint8_t		cmin[MCC_MAX_CYL + 1];

		for (int c = 0; c < v->n_cyl; c++)
			cmin[c] = (uint8_t) mcc_template_cyl_minutia(v, c);
		cmin[1] = cmin[0];
		ok = rp_geom_append_parts(&b, v->n_min, v->minutiae, v->n_cyl, cmin, 1) == -2;
	}
	rp_geom_free(&a);
	rp_geom_free(&b);
	return ok;
}

/*
 * The records of a gallery built on several threads (what an attach sends)
 * equal one loop's: continuous synthetic directions (the hash fills up
 * within the first chunks, then every direction is new) and the same
 * quantized to 256 (every direction found after the first chunk).
 */
static void
test_records_threads(void)
{
	rt_set		s;
	mcc_gpu_geom geo;
	uint32_t	entries = 0;
	uint32_t	hashed = 0;
	int			ok;

	memset(&s, 0, sizeof(s));
	rt_add_synth(&s, 800, 0, 99);
	UNIT_CHECK(parts_same(&s), "geometry from a template's parts (minutiae, one byte per cylinder) "
			   "equals its view's for %d templates", s.n);
	ok = rp_geom_init(&geo, 64, 1024) == 0;
	for (int t = 0; ok && t < s.n; t++)
		ok = rp_geom_append(&geo, &s.v[t]) == 0;
	UNIT_CHECK(ok && geo.first[geo.n_tpl] > RP_UHASH_MAX, "%u templates, %u cylinders",
			   geo.n_tpl, geo.first[geo.n_tpl]);
	for (int nth = 1; nth <= 7; nth += 3)
	{
		ok = records_same(&geo, 300, nth, &entries, &hashed);
		UNIT_CHECK(ok && hashed == RP_UHASH_MAX && entries > RP_UHASH_MAX,
				   "continuous directions on %d thread(s): records and %u table entries equal one loop's",
				   nth, entries);
	}
	for (uint32_t i = 0; i < geo.first[geo.n_tpl]; i++)
		geo.theta[i] = mcc_angle_normalize((float) (roundf(geo.theta[i] * (256 / MCC_TWO_PI)) *
													(MCC_TWO_PI / 256)));
	ok = records_same(&geo, 300, 5, &entries, &hashed);
	UNIT_CHECK(ok && entries <= 257, "quantized directions on 5 threads: records and %u table entries "
			   "equal one loop's", entries);
	rp_geom_free(&geo);
	rt_free(&s);
}

/* The kernel runs the methods that have a plan; LSA and consolidation stay on the CPU. */
static void
test_methods(void)
{
	int			ok = 1;

	for (int m = 0; m < MCC_NMETHODS; m++)
	{
		int			gpu = m != MCC_LSA && m != MCC_LSA_R && m != MCC_LSA_DTR && m != MCC_CONSOLIDATION;

		ok &= rp_method_ok(m) == gpu;
	}
	UNIT_CHECK(ok, "GPU methods: fused, lss, lss-r, lss-dtr, lgs, lgs-r, lgs-dtr");
}

int
main(void)
{
	rt_set		s;
	emu			e;
	int			ok;
	const char *data;
	static const cfg small[] = {{128, 0, 256}, {64, 64, 129}, {256, 1024, 129}, {32, 256, 129}};

	mcc_lss_init();
	UNIT_CHECK(mcc_match_set_kernel("generic") == 0, "the CPU reference is the generic kernel");
	test_keys();
	test_sort();
	test_sort_warps();
	test_utab();
	test_records_threads();
	test_methods();

	memset(&s, 0, sizeof(s));
	rt_add_synth(&s, 32, 8, 2024);
	ok = emu_build(&e, &s, 1) == 0;
	UNIT_CHECK(ok && rp_utab_frozen(&e.u) && e.u.n == RP_UHASH_MAX + e.soa.n_cyl,
			   "synthetic fingers: %d templates, %d pairs (direction hash full: %u entries)", s.n, s.npairs, e.u.n);
	check_set("synthetic fingers", &s, &e, small, 3);
	emu_free(&e);
	rt_free(&s);

	rt_add_sizes(&s, 77, 0);
	printf("# sizes: %d templates (largest %d cylinders), %d pairs, %d with a side of 200 or more\n",
		   s.n, rt_max_cyl(&s), s.npairs, rt_count_pairs(&s, 200));
	UNIT_CHECK(rt_max_cyl(&s) >= 200 && emu_build(&e, &s, 2) == 0,
			   "templates of 0 .. %d cylinders", rt_max_cyl(&s));
	UNIT_CHECK(parts_same(&s), "their geometry from their parts equals their views'");
	check_set("sizes", &s, &e, small, 4);
	emu_free(&e);
	rt_free(&s);

	if ((data = unit_shared_data_or_skip("FVC2002 records not emulated")) != NULL)
	{
		int			n1 = rt_add_fvc(&s, data, 1, "xyt", 8);
		int			n2 = rt_add_fvc(&s, data, 3, "ist", 8);

		if (n1 + n2 == 0)
			UNIT_SKIP("FVC2002 records not found under %s", data);
		else
		{
			UNIT_CHECK(emu_build(&e, &s, 3) == 0, "FVC2002 DB1 xyt and DB3 ISO: %d templates (largest %d cylinders), %d pairs",
					   s.n, rt_max_cyl(&s), s.npairs);
			check_set("FVC2002", &s, &e, small, 2);
			emu_free(&e);
		}
		rt_free(&s);
	}
	return unit_done();
}
