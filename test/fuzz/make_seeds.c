/*
 * make_seeds.c: writes the fuzz seeds in test/fuzz/seeds/ from made-up
 * minutiae, with our own writers (and, for the record layouts we read but
 * do not write, a re-packing of our ISO 2005 / ANSI 2004 records).
 *
 *   cc -std=c11 -Isrc/core test/fuzz/make_seeds.c build/libmcccore.a -lm \
 *      -o build/make_seeds && build/make_seeds test/fuzz/seeds
 *
 * The seeds are committed; rerun only when a format changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_iso.h"
#include "mcc_json.h"
#include "mcc_xyt.h"

/* Write n bytes to dir/name; exit on failure. */
static void
save(const char *dir, const char *name, const void *buf, size_t n)
{
	char		path[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(buf, 1, n, f) != n || fclose(f) != 0)
	{
		fprintf(stderr, "make_seeds: cannot write %s\n", path);
		exit(1);
	}
}

/* Store a big-endian 16-bit value. */
static void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t) (v >> 8);
	p[1] = (uint8_t) v;
}

/* Store a big-endian 32-bit value. */
static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/*
 * Re-pack a one-view ANSI 2004 record (26-byte header) as ANSI 2009
 * (cert = 1) or the 2007 draft layout (cert = 0). Returns the size.
 */
static size_t
ansi_2009(const uint8_t *a, uint8_t *out, int cert, const char *version)
{
	size_t		n = 0,
				count = a[26 + 3];

	memcpy(out, "FMR\0", 4);
	memcpy(out + 4, version, 4);
	n = 12;
	memcpy(out + n, a + 10, 4);	/* CBEFF product id */
	n += 4;
	if (cert)
		out[n++] = 0;
	memcpy(out + n, a + 14, 2);	/* device */
	n += 2;
	out[n++] = 1;
	out[n++] = 0;
	out[n++] = a[26];			/* position */
	out[n++] = 0;				/* view number */
	out[n++] = 0;				/* impression */
	out[n++] = a[28];			/* quality */
	put32(out + n, 0x00010001);	/* quality algorithm */
	n += 4;
	memcpy(out + n, a + 16, 8);	/* width, height, resolutions */
	n += 8;
	out[n++] = (uint8_t) count;
	memcpy(out + n, a + 30, 6 * count);
	n += 6 * count;
	put16(out + n, 0);
	n += 2;
	put32(out + 8, (uint32_t) n);
	return n;
}

/* Re-pack a one-view ISO 2005 record (24-byte header) as ISO 2011. */
static size_t
iso_2011(const uint8_t *r, uint8_t *out)
{
	size_t		n,
				count = r[24 + 3],
				rep;

	memcpy(out, "FMR\0" "030\0", 8);
	put16(out + 12, 1);
	out[14] = 0;
	n = rep = 15;
	n += 4;
	memset(out + n, 0xff, 9);	/* capture date and time not given */
	n += 9;
	out[n++] = 0;				/* technology */
	put16(out + n, 0);			/* vendor */
	put16(out + n + 2, 0);		/* device type */
	n += 4;
	out[n++] = 0;				/* no quality blocks */
	out[n++] = r[24];			/* position */
	out[n++] = 0;				/* view number */
	memcpy(out + n, r + 18, 4); /* resolutions */
	n += 4;
	out[n++] = 0;				/* impression */
	memcpy(out + n, r + 14, 4); /* width, height */
	n += 4;
	out[n++] = 0x60;			/* 6-byte minutiae */
	out[n++] = (uint8_t) count;
	memcpy(out + n, r + 28, 6 * count);
	n += 6 * count;
	put16(out + n, 4 + 3);		/* one vendor extension block */
	put16(out + n + 2, 0x0101);
	put16(out + n + 4, 4 + 3);
	memcpy(out + n + 6, "abc", 3);
	n += 2 + 7;
	put32(out + rep, (uint32_t) (n - rep));
	put32(out + 8, (uint32_t) n);
	return n;
}

/* Write every seed under the directory given. */
int
main(int argc, char **argv)
{
	char		dir[1024];
	mcc_minutiae ms;
	mcc_error	err;
	uint8_t		iso[512],
				ansi[512],
				other[512];
	char		text[2048];
	size_t		n_iso = sizeof(iso),
				n_ansi = sizeof(ansi),
				n;

	if (argc != 2)
	{
		fprintf(stderr, "usage: make_seeds SEEDS_DIR\n");
		return 2;
	}

	/* made-up minutiae: a few of each type, edge coordinates and angles */
	memset(&ms, 0, sizeof(ms));
	ms.width = 256;
	ms.height = 320;
	ms.dpi = 500;
	ms.count = 5;
	ms.m[0] = (mcc_minutia) {0, 0, 0.0f, MCC_TYPE_ENDING, 80};
	ms.m[1] = (mcc_minutia) {255, 319, 3.1415927f, MCC_TYPE_BIFURCATION, 100};
	ms.m[2] = (mcc_minutia) {100, 150, 1.5707964f, MCC_TYPE_OTHER, 0};
	ms.m[3] = (mcc_minutia) {17, 203, 4.712389f, MCC_TYPE_ENDING, 1};
	ms.m[4] = (mcc_minutia) {128, 64, 6.2f, MCC_TYPE_BIFURCATION, 55};

	if (mcc_iso_write(&ms, MCC_REC_ISO2005, iso, &n_iso, &err) != MCC_OK ||
		mcc_iso_write(&ms, MCC_REC_ANSI2004, ansi, &n_ansi, &err) != MCC_OK)
	{
		fprintf(stderr, "make_seeds: %s\n", err.message);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/fuzz_iso", argv[1]);
	save(dir, "iso2005.fmr", iso, n_iso);
	save(dir, "ansi2004.fmr", ansi, n_ansi);
	n = ansi_2009(ansi, other, 1, "030\0");
	save(dir, "ansi2009.fmr", other, n);
	n = ansi_2009(ansi, other, 1, "035\0");
	save(dir, "ansi2009am1.fmr", other, n);
	n = ansi_2009(ansi, other, 0, "030\0");
	save(dir, "ansi2007.fmr", other, n);
	n = iso_2011(iso, other);
	save(dir, "iso2011.fmr", other, n);

	snprintf(dir, sizeof(dir), "%s/fuzz_xyt", argv[1]);
	n = mcc_xyt_write(&ms, text, sizeof(text));
	save(dir, "five.xyt", text, n);

	snprintf(dir, sizeof(dir), "%s/fuzz_json", argv[1]);
	n = mcc_json_write(&ms, NULL, text, sizeof(text));
	save(dir, "five.json", text, n);
	ms.count = 1;
	n = (size_t) snprintf(text, sizeof(text),
						  "{\"minutiae\": [{\"x\": %d, \"y\": %d, \"theta\": 1.5e0, "
						  "\"type\": \"bifurcation\", \"quality\": 9}],\n"
						  " \"dpi\": 569, \"height\": %u, \"width\": %u, \"profile\": \"tpami2010\"}\n",
						  ms.m[0].x, ms.m[0].y, ms.height, ms.width);
	save(dir, "object-form.json", text, n);
	return 0;
}
