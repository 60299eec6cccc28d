/*
 * test_soa.c: the structure-of-arrays gallery and its scan: every kernel
 * this CPU can run gives, for every template, exactly mcc_lss_score().
 */
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_lss.h"
#include "mcc_soa.h"

static const char *const kernel_names[] = {"avx512", "avx2", "popcnt", "generic"};

typedef struct gallery
{
	int			n;
	uint8_t   **blob;
	mcc_template_view *v;
} gallery;

/*
 * A random gallery of n templates: impressions of a few fingers (so that
 * high scores occur), unrelated fingers, templates without cylinders, and
 * templates made of arbitrary cylinders including empty ones (popcount 0,
 * the den = 0 case).
 */
static void
make_gallery(tg_rng *r, const mcc_profile *p, const mcc_minutiae *fingers, int n, gallery *g)
{
	static uint64_t w[MCC_MAX_CYL][2 * MCC_MAX_WORDS];
	static uint8_t ang[MCC_MAX_CYL];

	g->n = n;
	g->blob = calloc(n, sizeof(uint8_t *));
	g->v = calloc(n, sizeof(mcc_template_view));
	for (int i = 0; i < n; i++)
	{
		int			kind = i % 10;

		while (g->blob[i] == NULL)
		{
			mcc_minutiae ms;

			if (kind <= 3)
				tg_impression(r, &fingers[kind], &ms, 0.85, 2, 0.1, 3);
			else if (kind == 4)
			{
				/* one minutia: a template with no cylinder */
				tg_minutiae(r, &ms, 1, 1, 0.0);
			}
			else if (kind == 5)
			{
				int			nc = tg_int(r, 1, 60);
				size_t		size;
				mcc_error	err;

				for (int c = 0; c < nc; c++)
				{
					tg_cylinder_words(r, p, c % 5 == 0 ? 0.0 : tg_unit(r) * 0.3, 0.8, w[c]);
					ang[c] = (uint8_t) tg_int(r, 0, 255);
				}
				g->blob[i] = tg_blob(p, nc, (const uint64_t (*)[2 * MCC_MAX_WORDS]) w, ang, &size);
				if (mcc_template_open(g->blob[i], size, &g->v[i], &err) != MCC_OK)
				{
					free(g->blob[i]);
					g->blob[i] = NULL;
				}
				continue;
			}
			else
				tg_minutiae(r, &ms, 20, 60, 8.0);
			g->blob[i] = tg_build_open(&ms, p, &g->v[i]);
		}
	}
}

/* Free a test gallery. */
static void
free_gallery(gallery *g)
{
	for (int i = 0; i < g->n; i++)
		free(g->blob[i]);
	free(g->blob);
	free(g->v);
}

/* The gallery's arrays hold exactly the templates' cylinders, in order. */
static int
layout_ok(const mcc_soa *s, const gallery *g)
{
	uint32_t	j = 0;

	if (s->n_tpl != (uint32_t) g->n || s->first[0] != 0)
		return 0;
	for (int k = 0; k < g->n; k++)
	{
		const mcc_template_view *v = &g->v[k];

		if (s->first[k] != j || s->ncyl[k] != v->n_cyl || s->id[k] != 1000 + k)
			return 0;
		for (int c = 0; c < v->n_cyl; c++, j++)
		{
			uint64_t	w[2 * MCC_MAX_WORDS];

			mcc_template_cyl_bits(v, c, w);
			for (int x = 0; x < s->words; x++)
				if (s->bits[(size_t) x * s->cap_cyl + j] != w[x])
					return 0;
			if (s->angle[j] != mcc_template_cyl_angle(v, c) ||
				s->pc[j] != mcc_template_cyl_popcount(v, c))
				return 0;
		}
	}
	return s->first[g->n] == j && s->n_cyl == j;
}

/* Scan with every usable kernel; count templates whose score differs. */
static void
check_scans(const mcc_profile *p, const mcc_soa *s, const gallery *g, const gallery *probes,
			const char *what, int need_high)
{
	/* only 8-byte aligned, as palloc would give: nothing may assume more */
	char	   *raw = malloc(mcc_probe_size() + 128);
	mcc_probe  *q = (mcc_probe *) (raw + (64 - (uintptr_t) raw % 64) % 64 + 8);
	float	   *sc = malloc(sizeof(float) * (g->n + 1));
	float	   *ref = malloc(sizeof(float) * g->n);

	for (size_t kn = 0; kn < sizeof(kernel_names) / sizeof(kernel_names[0]); kn++)
	{
		long		diff = 0;
		long		checked = 0;
		long		high = 0;
		long		view_diff = 0;

		if (mcc_soa_set_kernel(kernel_names[kn]) != 0)
		{
			UNIT_SKIP("%s %s: kernel %s is not supported by this CPU", p->name, what, kernel_names[kn]);
			continue;
		}
		for (int pi = 0; pi < probes->n; pi++)
		{
			uint32_t	t0 = (uint32_t) (pi * 7 % 5);	/* sub-ranges too */
			uint32_t	t1 = (uint32_t) g->n - (uint32_t) (pi % 3);

			mcc_probe_init(q, &probes->v[pi]);
			for (int k = 0; k < g->n; k++)
				ref[k] = mcc_lss_score(q, &g->v[k]);
			sc[t1 - t0] = 12345.0f;		/* must stay: no write past the range */
			mcc_soa_scan(q, s, t0, t1, sc);
			for (uint32_t k = t0; k < t1; k++)
			{
				checked++;
				diff += memcmp(&sc[k - t0], &ref[k], sizeof(float)) != 0;
				high += ref[k] > 0.5f;
			}
			diff += sc[t1 - t0] != 12345.0f;
			/* one template at a time, read in place */
			for (int k = 0; k < g->n; k++)
			{
				float		v = mcc_soa_score_view(q, &g->v[k]);

				view_diff += memcmp(&v, &ref[k], sizeof(float)) != 0;
				if (k % 7 == 0)
				{
					/* a copy at an odd address, as mcc_template_open_stored opens it */
					uint8_t    *u = malloc(g->v[k].size + 1);
					mcc_template_view uv;
					mcc_error	err;

					memcpy(u + 1, g->v[k].base, g->v[k].size);
					if (mcc_template_open_stored(u + 1, g->v[k].size, &uv, &err) != MCC_OK)
						view_diff++;
					else
					{
						v = mcc_soa_score_view(q, &uv);
						view_diff += memcmp(&v, &ref[k], sizeof(float)) != 0;
					}
					free(u);
				}
			}
		}
		UNIT_CHECK(diff == 0 && (high > 0 || !need_high),
				   "%s %s, kernel %s: %ld scores equal mcc_lss_score bit for bit (%ld differ, %ld above 0.5)",
				   p->name, what, kernel_names[kn], checked, diff, high);
		UNIT_CHECK(view_diff == 0,
				   "%s %s, kernel %s: every template scored in place (mcc_soa_score_view) equals mcc_lss_score bit for bit (%ld differ)",
				   p->name, what, kernel_names[kn], view_diff);
	}
	mcc_soa_set_kernel(NULL);
	free(raw);
	free(sc);
	free(ref);
}

/* Gallery layout and scans, both profiles, then a 256-cylinder probe. */
int
main(void)
{
	tg_rng		r = {31337};
	mcc_error	err;

	mcc_lss_init();
	UNIT_CHECK(mcc_soa_set_kernel("generic") == 0 && strcmp(mcc_soa_kernel_name(), "generic") == 0,
			   "the generic kernel can always be forced");
	UNIT_CHECK(mcc_soa_set_kernel("no-such-kernel") == -1, "an unknown kernel name is refused");
	UNIT_CHECK(mcc_soa_set_kernel(NULL) == 0, "back to the automatic choice");
	printf("# automatic kernel on this CPU: %s\n", mcc_soa_kernel_name());

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		int			n = id == MCC_PROFILE_GPU2015 ? 400 : 120;
		gallery		g;
		gallery		probes;
		mcc_soa		big;
		mcc_soa		tiny;
		mcc_minutiae fingers[4];
		int			ok = 1;

		for (int f = 0; f < 4; f++)
			tg_minutiae(&r, &fingers[f], 30, 50, 8.0);
		make_gallery(&r, p, fingers, n, &g);
		make_gallery(&r, p, fingers, id == MCC_PROFILE_GPU2015 ? 12 : 6, &probes);

		/* one allocation up front, and growth from capacity 1 */
		UNIT_CHECK(mcc_soa_init(&big, p, n, 64 * n, &err) == MCC_OK &&
				   mcc_soa_init(&tiny, p, 1, 1, &err) == MCC_OK, "%s: galleries initialised", p->name);
		for (int k = 0; k < n; k++)
			ok &= mcc_soa_append(&big, &g.v[k], 1000 + k, &err) == MCC_OK &&
				mcc_soa_append(&tiny, &g.v[k], 1000 + k, &err) == MCC_OK;
		UNIT_CHECK(ok && layout_ok(&big, &g), "%s: %d templates appended, layout as documented", p->name, n);
		UNIT_CHECK(layout_ok(&tiny, &g) && tiny.cap_cyl >= tiny.n_cyl && tiny.cap_tpl >= tiny.n_tpl,
				   "%s: growth from capacity 1 keeps the layout (cap %u/%u)", p->name,
				   tiny.cap_tpl, tiny.cap_cyl);
		check_scans(p, &big, &g, &probes, "gallery", 1);
		check_scans(p, &tiny, &g, &probes, "grown gallery", 1);
		/* another rounding mode: a kernel relying on round-to-nearest must step aside */
		fesetround(FE_UPWARD);
		check_scans(p, &big, &g, &probes, "gallery rounding upward", 1);
		fesetround(FE_TONEAREST);

		/* clear keeps capacity; a template of another profile is refused */
		mcc_soa_clear(&tiny);
		UNIT_CHECK(tiny.n_tpl == 0 && tiny.n_cyl == 0 && tiny.cap_cyl > 0, "%s: clear empties", p->name);
		{
			const mcc_profile *other = mcc_profile_by_id(id == MCC_PROFILE_GPU2015 ?
														 MCC_PROFILE_TPAMI2010 : MCC_PROFILE_GPU2015);
			mcc_minutiae ms;
			mcc_template_view ov;
			uint8_t    *ob;

			tg_minutiae(&r, &ms, 40, 40, 8.0);
			ob = tg_build_open(&ms, other, &ov);
			UNIT_CHECK(ob && mcc_soa_append(&tiny, &ov, 1, &err) == MCC_ERR_VALUE,
					   "%s: a %s template is refused: %s", p->name, other->name, err.message);
			free(ob);
		}
		mcc_soa_free(&big);
		mcc_soa_free(&tiny);
		free_gallery(&g);
		free_gallery(&probes);
	}

	/* a probe with many cylinders: long gate runs, wrap-around, all lanes */
	{
		const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
		mcc_minutiae ms;
		gallery		probes;
		gallery		g;
		mcc_soa		s;
		mcc_minutiae fingers[4];

		tg_frame(&ms, 1000, 1000, 500);
		for (int i = 0; i < MCC_MAX_MINUTIAE; i++)
		{
			ms.m[i].x = (int16_t) (200 + (i % 16) * 30 + tg_int(&r, 0, 9));
			ms.m[i].y = (int16_t) (200 + (i / 16) * 30 + tg_int(&r, 0, 9));
			ms.m[i].theta = mcc_angle_normalize(tg_unit(&r) * MCC_TWO_PI);
			ms.count++;
		}
		probes.n = 1;
		probes.blob = calloc(1, sizeof(uint8_t *));
		probes.v = calloc(1, sizeof(mcc_template_view));
		probes.blob[0] = tg_build_open(&ms, p, &probes.v[0]);
		UNIT_CHECK(probes.blob[0] && probes.v[0].n_cyl > 200, "a probe of %d cylinders", probes.v[0].n_cyl);
		for (int f = 0; f < 4; f++)
			tg_minutiae(&r, &fingers[f], 30, 50, 8.0);
		make_gallery(&r, p, fingers, 100, &g);
		mcc_soa_init(&s, p, 0, 0, &err);
		for (int k = 0; k < g.n; k++)
			mcc_soa_append(&s, &g.v[k], 1000 + k, &err);
		check_scans(p, &s, &g, &probes, "large probe", 0);
		mcc_soa_free(&s);
		free_gallery(&g);
		free_gallery(&probes);
	}
	return unit_done();
}
