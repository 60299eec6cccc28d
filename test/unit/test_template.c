/*
 * test_template.c: the stored template format: round trip, every class of
 * malformed blob, and a mutation loop that must never crash open() or make
 * it accept inconsistent data.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_cylinder.h"
#include "mcc_template.h"

static mcc_cylinder cyls[MCC_MAX_CYL];

/* Open a copy of blob placed at the very end of an exact-size allocation. */
static mcc_status
open_copy(const uint8_t *blob, size_t size, mcc_error *err)
{
	uint8_t    *copy = malloc(size ? size : 1);
	mcc_template_view v;
	mcc_status	st;

	memcpy(copy, blob, size);
	st = mcc_template_open(copy, size, &v, err);
	free(copy);
	return st;
}

/* Read a uint16 at any alignment. */
static uint16_t
get16(const uint8_t *b, size_t off)
{
	uint16_t	v;

	memcpy(&v, b + off, 2);
	return v;
}

/* Write a uint16 at any alignment. */
static void
put16(uint8_t *b, size_t off, uint16_t v)
{
	memcpy(b + off, &v, 2);
}

/*
 * The invariants of an accepted blob, checked independently of
 * mcc_template.c: exact size from the header counts, counts in range,
 * minutiae valid, cylinder metadata consistent with bits and minutiae,
 * strictly sorted, no stray bits. Returns 1 if they all hold.
 */
static int
consistent(const uint8_t *b, size_t size)
{
	const mcc_profile *p;
	int			n_min;
	int			n_cyl;
	int			words;
	size_t		boff;
	size_t		moff;
	mcc_minutiae ms;
	mcc_error	err;
	int			prev = -1;

	if (size < 24 || b[4] != 1 || (p = mcc_profile_by_id(b[5])) == NULL)
		return 0;
	n_min = get16(b, 14);
	n_cyl = get16(b, 16);
	words = get16(b, 18);
	if (n_min < 1 || n_min > 256 || n_cyl > n_min || words != (p->masks ? 2 : 1) * p->words)
		return 0;
	boff = (24 + 12 * (size_t) n_min + 7) / 8 * 8;
	moff = boff + (size_t) n_cyl * words * 8;
	if (size != moff + 4 * (size_t) n_cyl)
		return 0;
	tg_frame(&ms, get16(b, 8), get16(b, 10), get16(b, 12));
	ms.count = n_min;
	for (int i = 0; i < n_min; i++)
	{
		const uint8_t *r = b + 24 + 12 * i;

		memcpy(&ms.m[i].x, r, 2);
		memcpy(&ms.m[i].y, r + 2, 2);
		memcpy(&ms.m[i].theta, r + 4, 4);
		ms.m[i].type = r[8];
		ms.m[i].quality = r[9];
	}
	if (mcc_minutiae_validate(&ms, &err) != MCC_OK)
		return 0;
	for (int c = 0; c < n_cyl; c++)
	{
		const uint8_t *m = b + moff + 4 * c;
		uint64_t	w[2 * MCC_MAX_WORDS];
		int			pc = 0;

		if (m[3] >= n_min || m[2] * 256 + m[3] <= prev)
			return 0;
		prev = m[2] * 256 + m[3];
		if (m[2] != mcc_angle_to_byte(ms.m[m[3]].theta))
			return 0;
		memcpy(w, b + boff + (size_t) c * words * 8, words * 8);
		for (int i = 0; i < p->words; i++)
			pc += __builtin_popcountll(w[i]);
		if (pc != get16(m, 0))
			return 0;
		for (int bit = p->nbits; bit < p->words * 64; bit++)
			if ((w[bit / 64] >> (bit % 64) & 1) ||
				(p->masks && (w[p->words + bit / 64] >> (bit % 64) & 1)))
				return 0;
	}
	return 1;
}

/* Build, open and read back: minutiae and cylinders survive unchanged. */
static void
test_round_trip(void)
{
	tg_rng		r = {1};

	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		int			ok = 0;
		int			sets = 20;

		for (int s = 0; s < sets; s++)
		{
			mcc_minutiae ms;
			mcc_minutiae back;
			mcc_template_view v;
			mcc_error	err;
			size_t		size;
			uint8_t    *b;
			int			n;
			int			good;

			tg_minutiae(&r, &ms, 20, 60, 8.0);
			b = tg_build_blob(&ms, p, &size);
			if (b == NULL)
				continue;
			mcc_cylinders_create(&ms, p, cyls, &n, &err);
			good = b[0] == 0xAB && b[3] == 0xAB &&
				mcc_template_open(b, size, &v, &err) == MCC_OK &&
				size == mcc_template_size(p, ms.count, n) &&
				v.profile == p && v.n_min == ms.count && v.n_cyl == n &&
				v.words == mcc_profile_cyl_words(p) && consistent(b, size);
			mcc_template_minutiae(&v, &back);
			good = good && back.width == ms.width && back.height == ms.height &&
				back.dpi == ms.dpi && back.count == ms.count;
			for (int i = 0; good && i < ms.count; i++)
				good = back.m[i].x == ms.m[i].x && back.m[i].y == ms.m[i].y &&
					back.m[i].theta == ms.m[i].theta && back.m[i].type == ms.m[i].type &&
					back.m[i].quality == ms.m[i].quality;
			for (int c = 0; good && c < n; c++)
			{
				uint64_t	w[2 * MCC_MAX_WORDS];

				mcc_template_cyl_bits(&v, c, w);
				good = memcmp(w, cyls[c].bits, v.words * 8) == 0 &&
					mcc_template_cyl_popcount(&v, c) == cyls[c].popcount &&
					mcc_template_cyl_angle(&v, c) == cyls[c].angle &&
					mcc_template_cyl_minutia(&v, c) == cyls[c].minutia;
			}
			ok += good;
			free(b);
		}
		UNIT_CHECK(ok == sets, "%s: %d of %d templates round-trip", p->name, ok, sets);
	}
}

/* Build refuses what it must refuse. */
static void
test_build_errors(void)
{
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	mcc_minutiae ms;
	mcc_error	err;
	size_t		size = 0;
	uint8_t		small[64];
	mcc_status	st;

	tg_frame(&ms, 300, 400, 500);
	UNIT_CHECK(mcc_template_build(&ms, p, NULL, &size, &err) == MCC_ERR_VALUE &&
			   strcmp(err.message, "template has no minutiae") == 0,
			   "empty set refused: %s", err.message);
	ms.count = 1;
	ms.m[0].x = 300;
	UNIT_CHECK(mcc_template_build(&ms, p, NULL, &size, &err) == MCC_ERR_RANGE,
			   "minutia outside the image refused: %s", err.message);
	ms.m[0].x = 10;
	size = 0;
	st = mcc_template_build(&ms, p, NULL, &size, &err);
	UNIT_CHECK(st == MCC_OK && size == 40,
			   "one minutia, no cylinder: 24 + 12 + 4 padding = 40 bytes (%zu)", size);
	size = 39;
	UNIT_CHECK(mcc_template_build(&ms, p, small, &size, &err) != MCC_OK,
			   "too small an output buffer refused");
}

/* A blob and the name of what was done to it. */
typedef struct mutant
{
	const char *what;
	mcc_status	expect;			/* MCC_OK: any failure will do */
} mutant;

/* Every class of malformed blob is refused. */
static void
test_malformed(void)
{
	tg_rng		r = {5};
	mcc_minutiae ms;
	const mcc_profile *gp = mcc_profile_by_id(MCC_PROFILE_GPU2015);
	const mcc_profile *tp = mcc_profile_by_id(MCC_PROFILE_TPAMI2010);
	size_t		gsize;
	size_t		tsize;
	uint8_t    *g;
	uint8_t    *t;
	uint8_t    *b;
	mcc_error	err;
	size_t		boff;
	size_t		moff;
	int			n_cyl;
	int			n_min;

	do
	{
		tg_minutiae(&r, &ms, 30, 40, 8.0);
		g = tg_build_blob(&ms, gp, &gsize);
	} while (g == NULL || get16(g, 16) < 3);
	t = tg_build_blob(&ms, tp, &tsize);
	n_min = get16(g, 14);
	n_cyl = get16(g, 16);
	boff = (24 + 12 * (size_t) n_min + 7) / 8 * 8;
	moff = boff + (size_t) n_cyl * 4 * 8;
	b = malloc(gsize + 16);

#define MUTATE(desc, expect_st, size_expr, ...) \
	do { \
		size_t sz = (size_expr); \
		memcpy(b, g, gsize); \
		memset(b + gsize, 0, 16); \
		__VA_ARGS__; \
		mcc_status st_ = open_copy(b, sz, &err); \
		UNIT_CHECK(st_ != MCC_OK && ((expect_st) == MCC_OK || st_ == (expect_st)), \
				   "refused: %s (%s%s%s)", desc, err.message, err.detail[0] ? ": " : "", err.detail); \
	} while (0)

	UNIT_CHECK(open_copy(g, gsize, &err) == MCC_OK, "the unmodified blob opens");
	MUTATE("empty blob", MCC_ERR_TRUNCATED, 0,);
	MUTATE("header cut short", MCC_ERR_TRUNCATED, 23,);
	MUTATE("one byte missing", MCC_ERR_TRUNCATED, gsize - 1,);
	MUTATE("one byte too many", MCC_ERR_VALUE, gsize + 1,);
	MUTATE("version 0", MCC_ERR_VERSION, gsize, b[4] = 0);
	MUTATE("version 2", MCC_ERR_VERSION, gsize, b[4] = 2);
	MUTATE("profile 0", MCC_ERR_VERSION, gsize, b[5] = 0);
	MUTATE("profile 3", MCC_ERR_VERSION, gsize, b[5] = 3);
	MUTATE("flags set", MCC_ERR_VALUE, gsize, b[6] = 1);
	MUTATE("reserved header byte set", MCC_ERR_VALUE, gsize, b[22] = 1);
	MUTATE("zero minutiae", MCC_OK, gsize, put16(b, 14, 0));
	MUTATE("257 minutiae", MCC_OK, gsize, put16(b, 14, 257));
	MUTATE("more cylinders than minutiae", MCC_OK, gsize, put16(b, 16, n_min + 1));
	MUTATE("cylinder count one higher", MCC_OK, gsize, put16(b, 16, n_cyl + 1));
	MUTATE("cylinder count one lower", MCC_OK, gsize, put16(b, 16, n_cyl - 1));
	MUTATE("8 words per cylinder for a mask-less profile", MCC_ERR_VALUE, gsize, put16(b, 18, 8));
	MUTATE("3 words per cylinder", MCC_ERR_VALUE, gsize, put16(b, 18, 3));
	MUTATE("tpami2010 profile id on a gpu2015 body", MCC_ERR_VALUE, gsize, b[5] = MCC_PROFILE_TPAMI2010);
	MUTATE("width 0", MCC_ERR_RANGE, gsize, put16(b, 8, 0));
	MUTATE("width too small for the minutiae", MCC_ERR_RANGE, gsize, put16(b, 8, 1));
	MUTATE("dpi 0", MCC_ERR_RANGE, gsize, put16(b, 12, 0));
	MUTATE("minutia x negative", MCC_ERR_RANGE, gsize, put16(b, 24, 0xFFFF));
	MUTATE("minutia theta NaN", MCC_ERR_RANGE, gsize, { float f = NAN; memcpy(b + 28, &f, 4); });
	MUTATE("minutia theta 2pi", MCC_ERR_RANGE, gsize, { float f = (float) (2 * M_PI); memcpy(b + 28, &f, 4); });
	MUTATE("minutia theta negative", MCC_ERR_RANGE, gsize, { float f = -0.5f; memcpy(b + 28, &f, 4); });
	MUTATE("minutia type 3", MCC_ERR_VALUE, gsize, b[32] = 3);
	MUTATE("minutia quality 101", MCC_ERR_RANGE, gsize, b[33] = 101);
	MUTATE("minutia reserved bytes set", MCC_ERR_VALUE, gsize, b[34] = 1);
	if (boff > 24 + 12 * (size_t) n_min)
		MUTATE("padding byte set", MCC_ERR_VALUE, gsize, b[boff - 1] = 1);
	MUTATE("cylinder minutia index out of range", MCC_ERR_VALUE, gsize, b[moff + 3] = (uint8_t) n_min);
	MUTATE("cylinder angle differs from its minutia", MCC_ERR_VALUE, gsize, b[moff + 2] ^= 0x80);
	MUTATE("cylinder popcount off by one", MCC_ERR_VALUE, gsize, put16(b, moff, get16(b, moff) + 1));
	MUTATE("cylinder value bit flipped", MCC_ERR_VALUE, gsize, b[boff] ^= 1);
	MUTATE("bit 255 set (popcount adjusted)", MCC_ERR_VALUE, gsize,
		   b[boff + 31] |= 0x80; put16(b, moff, get16(b, moff) + 1));
	MUTATE("cylinders out of order", MCC_ERR_VALUE, gsize,
		   { uint8_t tmp[32]; uint8_t m[4];
			 memcpy(tmp, b + boff, 32); memcpy(b + boff, b + boff + 32, 32); memcpy(b + boff + 32, tmp, 32);
			 memcpy(m, b + moff, 4); memcpy(b + moff, b + moff + 4, 4); memcpy(b + moff + 4, m, 4); });
	MUTATE("a cylinder repeated", MCC_ERR_VALUE, gsize,
		   memcpy(b + boff + 32, b + boff, 32); memcpy(b + moff + 4, b + moff, 4));
#undef MUTATE

	/*
	 * mcc_template_open_stored (the backend scan's check) trusts what
	 * mcc_template_open checked at storing time except each popcount, which
	 * it must keep within the profile's bits (the kernels index a table by
	 * it): equal passes, one over is refused, naming the first such cylinder.
	 */
	{
		mcc_template_view sv;

		memcpy(b, g, gsize);
		UNIT_CHECK(mcc_template_open_stored(b, gsize, &sv, &err) == MCC_OK && sv.n_cyl == n_cyl,
				   "open_stored: the unmodified blob opens (%d cylinders)", n_cyl);
		put16(b, moff + 4 * (size_t) (n_cyl - 1), gp->nbits);
		UNIT_CHECK(mcc_template_open_stored(b, gsize, &sv, &err) == MCC_OK,
				   "open_stored: a popcount of all %d bits passes", gp->nbits);
		put16(b, moff + 4 * (size_t) (n_cyl - 1), gp->nbits + 7);
		put16(b, moff + 4, gp->nbits + 1);
		UNIT_CHECK(mcc_template_open_stored(b, gsize, &sv, &err) == MCC_ERR_VALUE &&
				   strstr(err.detail, "Cylinder 2 records popcount") != NULL,
				   "open_stored: refused: popcounts over the profile's bits, the first named (%s)", err.detail);
		memcpy(b, g, gsize);
		put16(b, moff, gp->nbits + 1);
		UNIT_CHECK(mcc_template_open_stored(b, gsize, &sv, &err) == MCC_ERR_VALUE &&
				   strstr(err.detail, "Cylinder 1 records popcount") != NULL,
				   "open_stored: refused: the first cylinder's popcount over the bits (%s)", err.detail);
	}

	/* masked profile: mask words and the value-inside-mask rule */
	{
		int			tn = get16(t, 16);
		size_t		tb = (24 + 12 * (size_t) get16(t, 14) + 7) / 8 * 8;
		size_t		tm = tb + (size_t) tn * 40 * 8;
		uint8_t    *c = malloc(tsize);
		int			planted = 0;

		UNIT_CHECK(tn > 0 && open_copy(t, tsize, &err) == MCC_OK, "tpami2010 blob opens (%d cylinders)", tn);
		memcpy(c, t, tsize);
		c[tb + 160 + 1248 / 8] |= 1;		/* mask bit 1248: beyond nbits */
		UNIT_CHECK(open_copy(c, tsize, &err) == MCC_ERR_VALUE, "refused: mask bit beyond bit 1247 (%s)", err.detail);
		/* a value bit in an invalid cell of some cylinder, popcount adjusted */
		memcpy(c, t, tsize);
		for (int cy = 0; cy < tn && !planted; cy++)
			for (int bit = 0; bit < 1248 && !planted; bit++)
			{
				size_t		w = tb + (size_t) cy * 320;

				if (c[w + 160 + bit / 8] >> (bit % 8) & 1)
					continue;
				c[w + bit / 8] |= (uint8_t) (1 << (bit % 8));
				put16(c, tm + 4 * cy, get16(c, tm + 4 * cy) + 1);
				planted = 1;
			}
		UNIT_CHECK(planted && open_copy(c, tsize, &err) == MCC_ERR_VALUE,
				   "refused: value bit in an invalid cell (%s)", err.detail);
		memcpy(c, t, tsize);
		put16(c, 18, 20);
		UNIT_CHECK(open_copy(c, tsize, &err) == MCC_ERR_VALUE,
				   "refused: masked profile without mask words (%s)", err.detail);
		free(c);
	}
	free(b);
	free(g);
	free(t);
}

/*
 * Flip bytes, truncate and extend valid blobs at random: open() must never
 * crash (run under valgrind or ASan to see reads outside the blob), and
 * whatever it accepts must satisfy every invariant.
 */
static void
test_mutations(void)
{
	tg_rng		r = {11};
	long		tries = 0;
	long		accepted = 0;
	long		bad = 0;

	for (int s = 0; s < 40; s++)
	{
		const mcc_profile *p = mcc_profile_by_id(s % 4 == 3 ? MCC_PROFILE_TPAMI2010 : MCC_PROFILE_GPU2015);
		mcc_minutiae ms;
		size_t		size;
		uint8_t    *g;

		tg_minutiae(&r, &ms, 1, 40, 8.0);
		g = tg_build_blob(&ms, p, &size);
		if (g == NULL)
			continue;
		for (int k = 0; k < 1500; k++)
		{
			size_t		sz = size;
			uint8_t    *b = malloc(size + 64);
			mcc_template_view v;
			mcc_error	err;
			uint8_t    *copy;
			int			kind = tg_int(&r, 0, 5);

			memcpy(b, g, size);
			memset(b + size, 0, 64);
			if (kind <= 2)
				for (int f = tg_int(&r, 1, 4); f > 0; f--)
				{
					size_t		at = tg_next(&r) % size;

					if (kind == 0)
						b[at] ^= (uint8_t) (1 << tg_int(&r, 0, 7));
					else if (kind == 1)
						b[at] = (uint8_t) tg_next(&r);
					else
						b[4 + tg_next(&r) % 20] = (uint8_t) tg_next(&r);	/* header */
				}
			else if (kind == 3)
				sz = tg_next(&r) % size;
			else if (kind == 4)
				sz = size + tg_int(&r, 1, 64);
			else
			{
				/* a count changed with the size following it */
				put16(b, 14 + 2 * tg_int(&r, 0, 1), (uint16_t) tg_int(&r, 0, 300));
				sz = tg_next(&r) % (size + 64);
			}
			copy = malloc(sz ? sz : 1);
			memcpy(copy, b, sz);
			tries++;
			if (mcc_template_open(copy, sz, &v, &err) == MCC_OK)
			{
				accepted++;
				if (!consistent(copy, sz) || v.size != sz)
					bad++;
			}
			free(copy);
			free(b);
		}
		free(g);
	}
	printf("# %ld mutants, %ld accepted\n", tries, accepted);
	UNIT_CHECK(bad == 0, "mutation loop: %ld of %ld accepted mutants were inconsistent (%ld tried)",
			   bad, accepted, tries);
	UNIT_CHECK(accepted > 0 && accepted < tries, "mutation loop both accepts and refuses");
}

/* Run every template test. */
int
main(void)
{
	test_round_trip();
	test_build_errors();
	test_malformed();
	test_mutations();
	return unit_done();
}
