/*
 * test_extract.c: minutiae extraction (mcc_extract.h) on synthetic ridge
 * patterns whose minutiae are known by construction, and on the FVC2002
 * images of ../shared/data (skipped when absent).
 *
 * The synthetic prints are parallel ridges of period 9 with a phase
 * dislocation at each wanted minutia: the phase 2 pi y / 9 + off + sum of
 * s_k atan2(y - y_k, x - x_k) adds or removes one ridge around (x_k, y_k).
 * A pair of opposite dislocations on one row makes a ridge (offset 0) or a
 * valley (offset pi) between them: two endings pointing at each other, or
 * two bifurcations whose branches point at each other. A bifurcation lies
 * where the two ridges meet, a few pixels towards its stem from the
 * dislocation, so positions are checked within 7 pixels (14 at 1000 dpi). Rotating the whole
 * pattern must rotate the minutiae and their directions; a pattern drawn
 * twice as large at 1000 dpi (resampled to 500 dpi inside) must give the
 * same minutiae at twice the coordinates, in the image's frame, with step
 * images of the image's size; the side limits hold at 500 dpi too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_extract.h"
#include "mcc_image.h"
#include "mcc_xyt.h"
#include "unit.h"
#include "testfvc.h"

#define PI 3.14159265358979323846

/* An expected minutia: image position, ISO direction, type. */
typedef struct want
{
	double		x;
	double		y;
	double		theta;
	int			type;
} want;

/*
 * A synthetic print of side `side` (scale: pixels per 500-dpi pixel),
 * dislocations at (x_k, y_k) of a 256-pixel design with signs s_k, turned
 * by `rot` radians about the centre (counter-clockwise on screen), ridges
 * inside a disc of radius 120, light background outside. stride: side + 5.
 */
static mcc_image
render(double scale, const double *dx, const double *dy, const int *sg, int n, double off,
	   double rot)
{
	int			side = (int) lround(256 * scale);
	mcc_image	im;

	im.width = im.height = (uint32_t) side;
	im.stride = (size_t) side + 5;
	im.pixels = malloc(im.stride * side);
	memset(im.pixels, 7, im.stride * side);
	for (int y = 0; y < side; y++)
		for (int x = 0; x < side; x++)
		{
			/* the design's coordinates: the pixel turned back by rot about the centre */
			double		u = (x + 0.5) / scale - 128,
						v = (y + 0.5) / scale - 128;
			double		xd = 128 + u * cos(rot) - v * sin(rot),
						yd = 128 + u * sin(rot) + v * cos(rot);
			double		ph = 2 * PI * yd / 9.0 + off;

			for (int k = 0; k < n; k++)
				ph += sg[k] * atan2(yd - dy[k], xd - dx[k]);
			im.pixels[(size_t) y * im.stride + x] = hypot(u, v) < 120
				? (uint8_t) lround(128 + 100 * cos(ph)) : 230;
		}
	return im;
}

/* Angle difference, 0..pi. */
static double
adiff(double a, double b)
{
	double		d = fmod(fabs(a - b), 2 * PI);

	return d > PI ? 2 * PI - d : d;
}

/*
 * Each expected minutia found once within tol pixels, with its type and
 * its direction within 20 degrees, and nothing else.
 */
static void
check_found(const char *name, const mcc_minutiae *ms, const want *w, int n, double tol)
{
	int			used[MCC_MAX_MINUTIAE] = {0};

	UNIT_CHECK(ms->count == n, "%s: %d minutiae (want %d)", name, ms->count, n);
	for (int k = 0; k < n; k++)
	{
		int			best = -1;
		double		bd = tol;

		for (int i = 0; i < ms->count; i++)
		{
			double		d = hypot(ms->m[i].x - w[k].x, ms->m[i].y - w[k].y);

			if (!used[i] && d <= bd)
			{
				bd = d;
				best = i;
			}
		}
		if (!UNIT_CHECK(best >= 0, "%s: minutia %d near (%.0f, %.0f)", name, k, w[k].x, w[k].y))
		{
			for (int i = 0; i < ms->count; i++)
				printf("#   found (%d, %d) %.0f degrees, %s\n", ms->m[i].x, ms->m[i].y,
					   ms->m[i].theta * 180 / PI, mcc_minutia_type_name(ms->m[i].type));
			continue;
		}
		used[best] = 1;
		UNIT_CHECK(ms->m[best].type == w[k].type, "%s: minutia %d is a%s", name, k,
				   w[k].type == MCC_TYPE_ENDING ? "n ending" : " bifurcation");
		UNIT_CHECK(adiff(ms->m[best].theta, w[k].theta) < 20 * PI / 180,
				   "%s: minutia %d points at %.0f degrees (want %.0f)", name, k,
				   ms->m[best].theta * 180 / PI, w[k].theta * 180 / PI);
		UNIT_CHECK(ms->m[best].quality >= 1 && ms->m[best].quality <= 100,
				   "%s: minutia %d quality %d in 1..100", name, k, ms->m[best].quality);
	}
}

/*
 * Four dislocations on one row (y = 126 = 14 periods: the middle of a
 * valley), signs alternating: each one's atan2 term is 0 or pi on the row,
 * so they cancel at the others and each pair inserts exactly one ridge (or
 * valley) segment between its two points.
 */
static const double DX[4] = {52, 102, 154, 204};
static const double DY[4] = {126, 126, 126, 126};
static const int SG[4] = {1, -1, 1, -1};

/* The expected minutiae of the 4-dislocation design, turned by rot, scaled. */
static void
expected(double off, double rot, double scale, want *w)
{
	int			type = off == 0 ? MCC_TYPE_ENDING : MCC_TYPE_BIFURCATION;

	for (int k = 0; k < 4; k++)
	{
		double		u = DX[k] - 128,
					v = DY[k] - 128;

		/* design -> image: turn by -rot in the y-down frame (rot counter-clockwise on screen) */
		w[k].x = (128 + u * cos(rot) + v * sin(rot)) * scale;
		w[k].y = (128 - u * sin(rot) + v * cos(rot)) * scale;
		/* the left one of each pair points right (0), the right one left (pi) */
		w[k].theta = fmod((k % 2 == 0 ? 0 : PI) + rot + 2 * PI, 2 * PI);
		w[k].type = type;
	}
}

static void
test_synthetic(void)
{
	mcc_extract_params p;
	mcc_extract_stats st;
	mcc_minutiae ms,
				again;
	mcc_error	err;
	want		w[4];
	char		name[96];

	mcc_extract_params_default(&p);
	for (int t = 0; t < 2; t++)
	{
		double		off = t == 0 ? 0 : PI;

		for (int r = 0; r < 4; r++)
		{
			double		rot = r * PI / 6 + (r == 3 ? 0.4 : 0);
			mcc_image	im = render(1, DX, DY, SG, 4, off, rot);

			snprintf(name, sizeof(name), "%s, turned %.2f rad",
					 t == 0 ? "endings" : "bifurcations", rot);
			if (UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, &st, NULL, &err) == MCC_OK,
						   "%s: extracts (%s)", name, err.message))
			{
				expected(off, rot, 1, w);
				check_found(name, &ms, w, 4, 7);
				UNIT_CHECK(ms.width == 256 && ms.height == 256 && ms.dpi == 500,
						   "%s: frame 256 x 256 at 500 dpi", name);
				UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_OK, "%s: valid minutiae", name);
				UNIT_CHECK(st.candidates >= ms.count && st.foreground > 30000,
						   "%s: stats (%u candidates, %u foreground pixels)", name,
						   st.candidates, st.foreground);
			}
			if (t == 0 && r == 0)
			{
				/* the same image again, and packed with stride = width: the same minutiae */
				mcc_image	packed = {im.width, im.height, im.width, malloc(256 * 256)};

				for (int y = 0; y < 256; y++)
					memcpy(packed.pixels + y * 256, im.pixels + y * im.stride, 256);
				mcc_extract_minutiae(&packed, &p, &again, NULL, NULL, &err);
				UNIT_CHECK(memcmp(&again, &ms, sizeof(ms)) == 0,
						   "a packed copy gives the same minutiae, bit for bit");
				free(packed.pixels);
			}
			free(im.pixels);
		}
	}

	/* twice as large at 1000 dpi: twice the coordinates */
	{
		mcc_image	im = render(2, DX, DY, SG, 4, 0, 0.3);

		p.dpi = 1000;
		if (UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_OK,
					   "1000 dpi: extracts (%s)", err.message))
		{
			expected(0, 0.3, 2, w);
			check_found("1000 dpi, twice the size", &ms, w, 4, 14);
			UNIT_CHECK(ms.dpi == 1000 && ms.width == im.width && ms.height == im.height,
					   "1000 dpi: the minutiae say 1000 dpi, in the image's frame");
		}
		/* the step images come back in the image's pixels, the skeleton on the ridges */
		{
			size_t		n = (size_t) im.width * im.height;
			uint8_t    *buf = malloc(3 * n);
			mcc_extract_images xi = {buf, buf + n, buf + 2 * n};
			size_t		skel = 0,
						on_ridge = 0;

			if (UNIT_CHECK(buf && mcc_extract_minutiae(&im, &p, &ms, NULL, &xi, &err) == MCC_OK,
						   "1000 dpi with step images: %s", buf ? err.message : "no memory"))
			{
				for (size_t k = 0; k < n; k++)
					if (xi.skeleton[k] == 0)
					{
						skel++;
						on_ridge += xi.ridges[k] == 0 && xi.mask[k] == 255;
					}
				UNIT_CHECK(skel > 0 && on_ridge * 10 >= skel * 9,
						   "1000 dpi: %zu skeleton pixels, %zu of them on ridges in the mask",
						   skel, on_ridge);
			}
			free(buf);
		}
		p.dpi = 500;
		free(im.pixels);
	}

	/* min_minutiae: four are enough for 4, not for 5 */
	{
		mcc_image	im = render(1, DX, DY, SG, 4, 0, 0);

		p.min_minutiae = 4;
		UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_OK,
				   "min_minutiae 4 with 4 minutiae: fine");
		p.min_minutiae = 5;
		UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_ERR_VALUE &&
				   strstr(err.message, "too few minutiae") && strstr(err.detail, "Found 4"),
				   "min_minutiae 5 with 4 minutiae: %s (%s)", err.message, err.detail);
		p.min_minutiae = 0;
		free(im.pixels);
	}

	/* plain parallel ridges: no minutiae at all */
	{
		mcc_image	im = render(1, DX, DY, SG, 0, 0, 0.2);
		mcc_status	rc = mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err);

		UNIT_CHECK(rc == MCC_OK && ms.count == 0, "parallel ridges: %d minutiae", ms.count);
		free(im.pixels);
	}
}

/* The stage images come back with the promised values. */
static void
test_images(void)
{
	mcc_extract_params p;
	mcc_minutiae ms;
	mcc_error	err;
	mcc_image	im = render(1, DX, DY, SG, 4, 0, 0);
	mcc_extract_images out;
	int			ok = 1;
	size_t		ridge = 0,
				skel = 0,
				fg = 0;

	mcc_extract_params_default(&p);
	out.mask = malloc(256 * 256);
	out.ridges = malloc(256 * 256);
	out.skeleton = malloc(256 * 256);
	mcc_extract_minutiae(&im, &p, &ms, NULL, &out, &err);
	for (size_t k = 0; k < 256 * 256; k++)
	{
		ok &= (out.mask[k] == 0 || out.mask[k] == 255) &&
			(out.ridges[k] == 0 || out.ridges[k] == 255) &&
			(out.skeleton[k] == 0 || out.skeleton[k] == 255);
		/* the skeleton lies on ridges, ridges in the foreground */
		ok &= out.skeleton[k] == 255 || out.ridges[k] == 0;
		ok &= out.ridges[k] == 255 || out.mask[k] == 255;
		fg += out.mask[k] == 255;
		ridge += out.ridges[k] == 0;
		skel += out.skeleton[k] == 0;
	}
	UNIT_CHECK(ok, "stage images: 0/255, skeleton inside ridges inside the foreground");
	/*
	 * the disc is 45,000 pixels, its 16 x 16 tiles up to 60,000; ridges
	 * cover about half, the skeleton about a ninth of the disc
	 */
	UNIT_CHECK(fg > 40000 && fg < 70000 && ridge > fg / 3 && ridge < 2 * fg / 3 &&
			   skel > fg / 20 && skel < fg / 5,
			   "stage images: %zu foreground, %zu ridge, %zu skeleton pixels", fg, ridge, skel);
	free(out.mask);
	free(out.ridges);
	free(out.skeleton);
	free(im.pixels);
}

/*
 * The foreground of im (mask image), with the default edge_floor or f when
 * f >= 0: its pixel count, its farthest pixel from (128, 128) and the
 * background pixels inside radius 118 (holes).
 */
static void
mask_reach(const mcc_image *im, double f, size_t *count, double *reach, size_t *holes)
{
	mcc_extract_params p;
	mcc_minutiae ms;
	mcc_error	err;
	uint8_t    *mask = malloc(256 * 256);
	mcc_extract_images out = {mask, NULL, NULL};

	mcc_extract_params_default(&p);
	if (f >= 0)
		p.edge_floor = f;
	*count = 0;
	*reach = 0;
	*holes = 256 * 256;
	if (mcc_extract_minutiae(im, &p, &ms, NULL, &out, &err) == MCC_OK)
	{
		*holes = 0;
		for (int y = 0; y < 256; y++)
			for (int x = 0; x < 256; x++)
			{
				double		r = hypot(x + 0.5 - 128, y + 0.5 - 128);

				if (mask[y * 256 + x])
				{
					(*count)++;
					*reach = fmax(*reach, r);
				}
				else if (r < 118)
					(*holes)++;
			}
	}
	free(mask);
}

/*
 * The foreground at the print's edge: the 16 x 16 tiles that the disc's
 * edge crosses reach past it into the flat background (the tiles' corners
 * by up to 16 sqrt 2 pixels); refined to pixels (edge_floor, the default),
 * the mask ends where the local window (a square of radius 8) no longer
 * holds ridges, within 8 sqrt 2 pixels of the disc, and still holds the
 * whole disc.
 */
static void
test_edge(void)
{
	mcc_image	im = render(1, DX, DY, SG, 4, 0, 0);
	size_t		n_tile,
				n_pix,
				h_tile,
				h_pix;
	double		r_tile,
				r_pix;

	mask_reach(&im, 0, &n_tile, &r_tile, &h_tile);
	mask_reach(&im, -1, &n_pix, &r_pix, &h_pix);
	UNIT_CHECK(r_tile > 130, "edge: the tile mask reaches %.1f px from the centre (disc: 120)",
			   r_tile);
	UNIT_CHECK(r_pix >= 119 && r_pix <= 120 + 8 * sqrt(2.0) + 1,
			   "edge: refined to pixels it reaches %.1f px (disc 120, square window of radius 8)",
			   r_pix);
	UNIT_CHECK(h_tile == 0 && h_pix == 0 && n_pix < n_tile,
			   "edge: no hole inside the disc (%zu, %zu); %zu foreground pixels refined, %zu on "
			   "tiles", h_tile, h_pix, n_pix, n_tile);
	free(im.pixels);
}

static void
test_errors(void)
{
	static const struct
	{
		uint32_t	w;
		uint32_t	h;
		uint32_t	dpi;
		mcc_status	st;
		const char *says;
	}			sides[] = {
		{47, 100, 500, MCC_ERR_VALUE, "is too small"},
		{2049, 50, 500, MCC_ERR_LIMIT, "is too large"},
		{90, 100, 1000, MCC_ERR_VALUE, "too small at 1000 dpi"},
		{1100, 50, 250, MCC_ERR_LIMIT, "too large at 250 dpi"},
	};
	mcc_extract_params p,
				q;
	mcc_minutiae ms;
	mcc_error	err;
	mcc_image	im;

	mcc_extract_params_default(&p);
	UNIT_CHECK(mcc_extract_params_check(&p, &err) == MCC_OK, "the defaults are valid");

	/* sides out of range; the limits hold at 500 dpi: 90 px at 1000 dpi are 45, 1100 at 250 are 2200 */
	im.pixels = calloc(100 * 2049, 1);
	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++)
	{
		char		at[24] = "";

		im.width = im.stride = sides[i].w;
		im.height = sides[i].h;
		p.dpi = sides[i].dpi;
		if (p.dpi != 500)
			snprintf(at, sizeof(at), " at %u dpi", p.dpi);
		UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == sides[i].st &&
				   strstr(err.message, sides[i].says), "%u x %u%s: %s", im.width, im.height, at, err.message);
	}
	p.dpi = 500;

	/* a flat image has no ridges */
	im.width = im.height = 100;
	im.stride = 100;
	memset(im.pixels, 200, 100 * 100);
	UNIT_CHECK(mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_ERR_VALUE &&
			   strstr(err.message, "no fingerprint ridges"), "flat image: %s", err.message);
	free(im.pixels);

	q = p;
	q.dpi = 249;
	UNIT_CHECK(mcc_extract_params_check(&q, &err) == MCC_ERR_RANGE, "249 dpi: %s", err.message);
	q.dpi = 1001;
	UNIT_CHECK(mcc_extract_params_check(&q, &err) == MCC_ERR_RANGE, "1001 dpi: %s", err.message);
	q = p;
	q.block = 3;
	UNIT_CHECK(mcc_extract_params_check(&q, &err) == MCC_ERR_VALUE, "block 3: %s", err.message);
	q = p;
	q.period = NAN;
	UNIT_CHECK(mcc_extract_params_check(&q, &err) == MCC_ERR_VALUE, "period NaN: %s",
			   err.message);
	q = p;
	q.min_minutiae = MCC_MAX_MINUTIAE + 1;
	UNIT_CHECK(mcc_extract_params_check(&q, &err) == MCC_ERR_VALUE, "min_minutiae 257: %s",
			   err.message);
	q = p;
	UNIT_CHECK(mcc_extract_params_set(&q, "gap", 12, &err) == MCC_OK && q.gap == 12,
			   "set gap 12");
	UNIT_CHECK(mcc_extract_params_set(&q, "dpi", 600, &err) == MCC_ERR_VALUE,
			   "dpi is not a tuning parameter: %s", err.message);
}

/*
 * FVC2002 set B, fingers 101-103 of each database: every image gives a
 * sensible number of minutiae, most of them within 10 pixels of one of
 * NBIS mindtct's, with directions that agree (shared data README: mindtct's
 * xyt frame). We measured 66-79 % of ours near mindtct's over all 80
 * images of each database, with a median direction difference of 5 degrees.
 */
static void
test_fvc(void)
{
	const char *data = unit_shared_data_or_skip("FVC2002 images not read");
	char		path[1024];

	if (data == NULL)
		return;
	for (int d = 0; d < TFVC_DBS; d++)
	{
		int			images = 0,
					ok = 0,
					sane = 0,
					near = 0,
					total = 0,
					agree = 0;

		for (int f = 101; f <= 103; f++)
			for (int i = 1; i <= 8; i++)
			{
				size_t		len,
							tlen;
				unsigned char *png,
						   *xyt;
				mcc_image_info info;
				mcc_image	im;
				mcc_minutiae ms,
							ref;
				mcc_extract_params p;
				mcc_error	err;

				tfvc_image_path(path, sizeof(path), data, &tfvc_dbs[d], f, i);
				if ((png = unit_read_file(path, &len)) == NULL)
					continue;
				images++;
				if (mcc_image_probe(png, len, &info, &err) != MCC_OK)
				{
					free(png);
					continue;
				}
				im.stride = info.width;
				im.pixels = malloc((size_t) info.width * info.height);
				mcc_extract_params_default(&p);
				p.dpi = (uint32_t) tfvc_dbs[d].dpi;
				if (mcc_image_decode(png, len, &im, &err) == MCC_OK &&
					mcc_extract_minutiae(&im, &p, &ms, NULL, NULL, &err) == MCC_OK)
				{
					ok++;
					sane += ms.count >= 8 && ms.count <= 150;
					if ((xyt = tfvc_read_minutiae(data, "nbis-mindtct-xyt", &tfvc_dbs[d], f, i, "xyt", &tlen)) != NULL &&
						mcc_xyt_read((const char *) xyt, tlen, (int) im.width, (int) im.height,
									 500, &ref, &err) == MCC_OK)
						for (int a = 0; a < ms.count; a++)
						{
							int			best = -1;
							double		bd = 10;

							for (int b = 0; b < ref.count; b++)
							{
								double		dd = hypot(ms.m[a].x - ref.m[b].x,
													   ms.m[a].y - ref.m[b].y);

								if (dd <= bd)
								{
									bd = dd;
									best = b;
								}
							}
							total++;
							if (best >= 0)
							{
								near++;
								agree += adiff(ms.m[a].theta, ref.m[best].theta) < PI / 6;
							}
						}
					free(xyt);
				}
				free(im.pixels);
				free(png);
			}
		if (images == 0)
		{
			UNIT_SKIP("%s images absent", tfvc_dbs[d].db);
			continue;
		}
		UNIT_CHECK(ok == images, "%s: %d of %d images extracted", tfvc_dbs[d].db, ok, images);
		UNIT_CHECK(sane == ok, "%s: %d of %d with 8..150 minutiae", tfvc_dbs[d].db, sane, ok);
		UNIT_CHECK(total > 0 && near >= total / 2,
				   "%s: %d of %d minutiae within 10 px of mindtct's (at least half)", tfvc_dbs[d].db,
				   near, total);
		UNIT_CHECK(near > 0 && agree >= near * 8 / 10,
				   "%s: %d of %d of those within 30 degrees of mindtct's direction", tfvc_dbs[d].db,
				   agree, near);
	}
}

int
main(void)
{
	test_synthetic();
	test_images();
	test_edge();
	test_errors();
	test_fvc();
	return unit_done();
}
