/*
 * mccextract: minutiae of fingerprint images (mcc_extract.h), for accuracy
 * runs and inspection (docs/images.md, "Minutiae extraction";
 * docs/accuracy.md, section 11).
 *
 *   mccextract [options] IMAGE...
 *
 *   --out DIR          write DIR/NAME.json for each IMAGE (NAME: its file
 *                      name without extension), the JSON text form that
 *                      mcceval and mcc_template_from_json read
 *   --format json|xyt|iso   the records' format (default json; xyt in
 *                      NBIS's frame, iso: ISO/IEC 19794-2:2005 as .ist)
 *   --dpi N            the images' resolution (default 500)
 *   --set NAME=VALUE   an extraction parameter (mcc_extract_params_set)
 *   --dump DIR         also write DIR/NAME.png: the image with its background
 *                      darkened, the skeleton (orange), endings (green) and
 *                      bifurcations (blue) with their directions
 *   --zoom N           magnify the --dump images N times
 *   --plain            --dump the image alone (no skeleton, no minutiae)
 *   --crop X,Y,W,H     only this rectangle of the --dump images
 *   --ref DIR          draw DIR/NAME.xyt (NBIS minutiae) on the --dump
 *                      images too, in red
 *   --repeat N         extract each image N times and keep its least CPU
 *                      time (a loaded machine inflates single runs)
 *   --quiet            no line per image
 *
 * Prints one line per image (minutiae, what each rule removed, times) and
 * a summary: extraction time per image (CPU time of this thread, and wall
 * time), mean, median and maximum. Images are read one after another on
 * one core; decoding is timed apart from extraction.
 */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcc_extract.h"
#include "mcc_image.h"
#include "mcc_iso.h"
#include "mcc_json.h"
#include "mcc_profile.h"
#include "mcc_xyt.h"
#include "../unit/testargs.h"
#include "../unit/testclock.h"
#include "../unit/testfile.h"
#include "../unit/testsort.h"

static int
write_file(const char *path, const void *data, size_t len)
{
	FILE	   *f = fopen(path, "wb");
	int			ok = f && fwrite(data, 1, len, f) == len;

	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		fprintf(stderr, "mccextract: cannot write %s: %s\n", path, strerror(errno));
	return ok;
}

/* NAME of DIR/NAME.EXT */
static void
base_name(const char *path, char *out, size_t cap)
{
	const char *s = strrchr(path, '/');
	const char *dot;
	size_t		n;

	s = s ? s + 1 : path;
	dot = strrchr(s, '.');
	n = dot ? (size_t) (dot - s) : strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

/* Write an RGB PNG (rgb: w h 3 bytes); returns 0 on failure. */
static int
write_png(const char *path, const uint8_t *rgb, uint32_t w, uint32_t h)
{
	FILE	   *f = fopen(path, "wb");
	png_structp png;
	png_infop	info;

	if (!f)
		return 0;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info || setjmp(png_jmpbuf(png)))
	{
		png_destroy_write_struct(&png, &info);
		fclose(f);
		return 0;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
				 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (uint32_t y = 0; y < h; y++)
		png_write_row(png, (png_const_bytep) (rgb + (size_t) y * w * 3));
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return fclose(f) == 0;
}

static void
put_rgb(uint8_t *rgb, uint32_t w, uint32_t h, int x, int y, int r, int g, int b)
{
	if (x < 0 || y < 0 || x >= (int) w || y >= (int) h)
		return;
	rgb[((size_t) y * w + x) * 3] = (uint8_t) r;
	rgb[((size_t) y * w + x) * 3 + 1] = (uint8_t) g;
	rgb[((size_t) y * w + x) * 3 + 2] = (uint8_t) b;
}

/*
 * DIR/NAME.png: the image (dimmed), the background (darker), the ridges'
 * skeleton (orange), endings (green) and bifurcations (blue) as small
 * squares with a line along their direction.
 */
static uint32_t zoom = 1;
static int	plain = 0;			/* --dump the image alone */
static uint32_t crop[4];		/* x, y, w, h of the dump (0: all) */

static void
draw_minutiae(uint8_t *rgb, uint32_t w, uint32_t h, const mcc_minutiae *ms, int ref)
{
	for (int i = 0; ms && i < ms->count; i++)
	{
		const mcc_minutia *m = &ms->m[i];
		int			r = ref ? 255 : 0,
					g = ref ? 0 : m->type == MCC_TYPE_ENDING ? 200 : 0,
					b = ref ? 0 : m->type == MCC_TYPE_ENDING ? 0 : 255,
					s = ref ? 3 : 2;

		for (int d = -s; d <= s; d++)
		{
			put_rgb(rgb, w, h, m->x + d, m->y - s, r, g, b);
			put_rgb(rgb, w, h, m->x + d, m->y + s, r, g, b);
			put_rgb(rgb, w, h, m->x - s, m->y + d, r, g, b);
			put_rgb(rgb, w, h, m->x + s, m->y + d, r, g, b);
		}
		for (int t = s + 1; t <= 10; t++)
			put_rgb(rgb, w, h, (int) lround(m->x + t * cos(m->theta)),
					(int) lround(m->y - t * sin(m->theta)), r, g, b);
	}
}

/* Reference minutiae for the dump: REFDIR/NAME.xyt (NBIS), or none. */
static const char *refdir = NULL;

static int
read_ref(const char *name, const mcc_image *im, mcc_minutiae *ms)
{
	char		path[4096];
	size_t		len;
	unsigned char *t;
	mcc_error	err;
	int			ok;

	if (!refdir)
		return 0;
	snprintf(path, sizeof(path), "%s/%s.xyt", refdir, name);
	if ((t = unit_read_file(path, &len)) == NULL)
		return 0;
	ok = mcc_xyt_read((const char *) t, len, (int) im->width, (int) im->height, 500, ms,
					  &err) == MCC_OK;
	free(t);
	return ok;
}

static void
dump(const char *dir, const char *name, const mcc_image *im, const mcc_extract_images *st,
	 const mcc_minutiae *ms)
{
	mcc_minutiae ref;
	uint32_t	w = im->width,
				h = im->height;
	uint8_t    *rgb = malloc((size_t) w * h * 3);
	char		path[4096];

	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
		{
			size_t		k = (size_t) y * w + x;
			int			v = 96 + im->pixels[y * im->stride + x] * 159 / 255;

			if (!st->mask[k])
				v /= 2;
			put_rgb(rgb, w, h, (int) x, (int) y, v, v, v);
			if (st->skeleton[k] == 0 && !plain)
				put_rgb(rgb, w, h, (int) x, (int) y, 255, 140, 0);
		}
	if (!plain && read_ref(name, im, &ref))
		draw_minutiae(rgb, w, h, &ref, 1);
	if (!plain)
		draw_minutiae(rgb, w, h, ms, 0);
	if (crop[2] > 0 && crop[3] > 0 && crop[0] + crop[2] <= w && crop[1] + crop[3] <= h)
	{
		uint8_t    *part = malloc((size_t) crop[2] * crop[3] * 3);

		for (uint32_t y = 0; y < crop[3]; y++)
			memcpy(part + (size_t) y * crop[2] * 3,
				   rgb + ((size_t) (y + crop[1]) * w + crop[0]) * 3, (size_t) crop[2] * 3);
		free(rgb);
		rgb = part;
		w = crop[2];
		h = crop[3];
	}
	if (zoom > 1)
	{
		uint8_t    *big = malloc((size_t) w * h * 3 * zoom * zoom);

		for (uint32_t y = 0; y < h * zoom; y++)
			for (uint32_t x = 0; x < w * zoom; x++)
				memcpy(big + ((size_t) y * w * zoom + x) * 3,
					   rgb + ((size_t) (y / zoom) * w + x / zoom) * 3, 3);
		free(rgb);
		rgb = big;
		w *= zoom;
		h *= zoom;
	}
	snprintf(path, sizeof(path), "%s/%s.png", dir, name);
	if (!write_png(path, rgb, w, h))
		fprintf(stderr, "mccextract: cannot write %s\n", path);
	free(rgb);
}

/* Write the record of ms; returns 0 on failure. */
static int
write_record(const char *dir, const char *name, const char *format, const mcc_minutiae *ms)
{
	char		path[4096];
	size_t		len = 0;
	int			ok;

	if (strcmp(format, "json") == 0)
	{
		const mcc_profile *p = mcc_profile_by_name("gpu2015", 7);
		char	   *s;

		len = mcc_json_write(ms, p, NULL, 0);
		s = malloc(len + 1);
		mcc_json_write(ms, p, s, len + 1);
		snprintf(path, sizeof(path), "%s/%s.json", dir, name);
		ok = write_file(path, s, len);
		free(s);
	}
	else if (strcmp(format, "xyt") == 0)
	{
		char	   *s;

		len = mcc_xyt_write(ms, NULL, 0);
		s = malloc(len + 1);
		mcc_xyt_write(ms, s, len + 1);
		snprintf(path, sizeof(path), "%s/%s.xyt", dir, name);
		ok = write_file(path, s, len);
		free(s);
	}
	else
	{
		mcc_error	err;
		uint8_t    *b;

		if (mcc_iso_write(ms, MCC_REC_ISO2005, NULL, &len, &err) != MCC_OK)
		{
			fprintf(stderr, "mccextract: %s: %s\n", name, err.message);
			return 0;
		}
		b = malloc(len);
		mcc_iso_write(ms, MCC_REC_ISO2005, b, &len, &err);
		snprintf(path, sizeof(path), "%s/%s.ist", dir, name);
		ok = write_file(path, b, len);
		free(b);
	}
	return ok;
}

/* --set NAME=VALUE: an extraction parameter (mcc_extract_params_set). */
static void
set_param(const char *kv, void *dst)
{
	char		name[64];
	const char *eq = strchr(kv, '=');
	mcc_error	err;

	if (!eq || (size_t) (eq - kv) >= sizeof(name))
	{
		fprintf(stderr, "mccextract: --set wants NAME=VALUE, not \"%s\"\n", kv);
		exit(2);
	}
	memcpy(name, kv, (size_t) (eq - kv));
	name[eq - kv] = 0;
	if (mcc_extract_params_set(dst, name, atof(eq + 1), &err) != MCC_OK)
	{
		fprintf(stderr, "mccextract: %s\n", err.message);
		exit(2);
	}
}

/* --crop X,Y,W,H */
static void
set_crop(const char *v, void *dst)
{
	uint32_t   *c = dst;

	if (sscanf(v, "%u,%u,%u,%u", &c[0], &c[1], &c[2], &c[3]) != 4)
	{
		fprintf(stderr, "mccextract: --crop wants X,Y,W,H, not \"%s\"\n", v);
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	mcc_extract_params p;
	const char *outdir = NULL,
			   *dumpdir = NULL,
			   *format = "json";
	int			quiet = 0,
				repeat = 1,
				nfiles = 0,
				failed = 0;
	const char **files = calloc((size_t) argc, sizeof(char *));
	double	   *cpu,
			   *wall,
				decode_total = 0;
	long		total_min = 0;

	mcc_extract_params_default(&p);
	{
		const targ_opt opts[] = {
			OPT_STR("--out", &outdir, "DIR"), OPT_STR("--format", &format, "json|xyt|iso"),
			OPT_U32("--dpi", &p.dpi, "N"), OPT_FN("--set", set_param, &p, "NAME=VALUE"),
			OPT_STR("--dump", &dumpdir, "DIR"), OPT_U32("--zoom", &zoom, "N"), OPT_SET("--plain", &plain, 1),
			OPT_FN("--crop", set_crop, crop, "X,Y,W,H"), OPT_STR("--ref", &refdir, "DIR"),
			OPT_INT("--repeat", &repeat, "N"), OPT_SET("--quiet", &quiet, 1),
			OPT_OPERANDS(files, &nfiles, "IMAGE...")
		};

		targ_parse(argc, argv, opts);
		if (nfiles == 0 || (strcmp(format, "json") && strcmp(format, "xyt") && strcmp(format, "iso")))
			targ_usage(argv[0], opts);
	}
	zoom = zoom < 1 ? 1 : zoom;
	repeat = repeat < 1 ? 1 : repeat;
	cpu = calloc((size_t) nfiles, sizeof(double));
	wall = calloc((size_t) nfiles, sizeof(double));

	for (int i = 0; i < nfiles; i++)
	{
		size_t		len = 0;
		unsigned char *data = unit_read_file(files[i], &len);
		mcc_image_info info;
		mcc_image	im;
		mcc_minutiae ms;
		mcc_extract_stats st;
		mcc_extract_images imgs = {0};
		mcc_error	err;
		char		name[256];
		double		t0,
					c0;
		int			ok;

		base_name(files[i], name, sizeof(name));
		if (data == NULL)
		{
			fprintf(stderr, "mccextract: cannot read %s\n", files[i]);
			failed++;
			continue;
		}
		t0 = tclock_cpu_s();
		if (mcc_image_probe(data, len, &info, &err) != MCC_OK)
		{
			fprintf(stderr, "mccextract: %s: %s\n", files[i], err.message);
			failed++;
			free(data);
			continue;
		}
		im.stride = info.width;
		im.pixels = malloc((size_t) info.width * info.height);
		ok = mcc_image_decode(data, len, &im, &err) == MCC_OK;
		decode_total += tclock_cpu_s() - t0;
		free(data);
		if (!ok)
		{
			fprintf(stderr, "mccextract: %s: %s\n", files[i], err.message);
			failed++;
			free(im.pixels);
			continue;
		}
		if (dumpdir)
		{
			size_t		n = (size_t) im.width * im.height;

			imgs.mask = malloc(n);
			imgs.ridges = malloc(n);
			imgs.skeleton = malloc(n);
		}
		for (int r = 0; r < repeat; r++)
		{
			double		c,
						t;

			c0 = tclock_cpu_s();
			t0 = tclock_wall_s();
			ok = mcc_extract_minutiae(&im, &p, &ms, &st, dumpdir ? &imgs : NULL, &err) == MCC_OK;
			t = tclock_wall_s() - t0;
			c = tclock_cpu_s() - c0;
			if (r == 0 || c < cpu[i])
				cpu[i] = c;
			if (r == 0 || t < wall[i])
				wall[i] = t;
		}
		if (!ok)
		{
			fprintf(stderr, "mccextract: %s: %s%s%s\n", files[i], err.message,
					err.detail[0] ? ": " : "", err.detail);
			failed++;
		}
		else
		{
			total_min += ms.count;
			if (!quiet)
				printf("%s\t%u minutiae\tcandidates %u\tremoved: short %u spur %u bridge %u "
					   "gap %u close %u coherence %u clarity %u border %u capped %u\t%.1f ms cpu\n",
					   name, ms.count, st.candidates, st.short_ridge, st.spur, st.bridge,
					   st.gap, st.close, st.coherence, st.clarity, st.border, st.capped, cpu[i] * 1e3);
			if (outdir && !write_record(outdir, name, format, &ms))
				failed++;
		}
		if (dumpdir)
		{
			dump(dumpdir, name, &im, &imgs, ok ? &ms : NULL);
			free(imgs.mask);
			free(imgs.ridges);
			free(imgs.skeleton);
		}
		free(im.pixels);
	}
	{
		double		sum = 0,
					wsum = 0;

		for (int i = 0; i < nfiles; i++)
		{
			sum += cpu[i];
			wsum += wall[i];
		}
		qsort(cpu, (size_t) nfiles, sizeof(double), tsort_double_asc);
		qsort(wall, (size_t) nfiles, sizeof(double), tsort_double_asc);
		printf("# %d images, %d failed, %.1f minutiae per image; extraction per image, one core: "
			   "cpu mean %.1f ms, median %.1f ms, max %.1f ms; wall mean %.1f ms, median %.1f ms; "
			   "decoding %.1f ms\n",
			   nfiles, failed, nfiles > failed ? (double) total_min / (nfiles - failed) : 0.0,
			   sum / nfiles * 1e3, cpu[nfiles / 2] * 1e3, cpu[nfiles - 1] * 1e3,
			   wsum / nfiles * 1e3, wall[nfiles / 2] * 1e3, decode_total / nfiles * 1e3);
	}
	free(cpu);
	free(wall);
	free(files);
	return failed ? 1 : 0;
}
