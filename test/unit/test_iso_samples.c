/*
 * test_iso_samples.c: ISO/IEC 19794-2 and ANSI/INCITS 378 records of the
 * shared data (../shared/data, skipped when absent): published samples
 * from other implementations, read and rewritten, cut short, and the
 * FVC2002 records against their xyt files. Synthetic records: test_iso.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "iso_testlib.h"
#include "unit.h"
#include "testfvc.h"
#include "../tools/record_file.h"
#include "mcc_iso.h"
#include "mcc_xyt.h"

/* ---- shared data: published samples and FVC2002 ---- */

/* A view decoded by FingerprintIO: raw field values. */
typedef struct fpio_view
{
	int			count;
	raw_minutia m[256];
} fpio_view;

/* Load data/<rel> into a fresh buffer; NULL if absent. */
static unsigned char *
load(const char *data, const char *rel, size_t *len)
{
	char		path[1024];

	snprintf(path, sizeof(path), "%s/%s", data, rel);
	return unit_read_file(path, len);
}

/* The integer after `"key" : ` at or after p, before `end`; -1 if none. */
static int
json_int_after(const char **p, const char *end, const char *key)
{
	char		pat[64];
	const char *q;

	snprintf(pat, sizeof(pat), "\"%s\" : ", key);
	q = strstr(*p, pat);
	if (q == NULL || q >= end)
		return -1;
	q += strlen(pat);
	*p = q;
	return atoi(q);
}

/*
 * Scan FingerprintIO's JSON decoding for the minutiae of each fingerprint:
 * each "minutiae" array runs to the fingerprint's "counts" key; each
 * minutia is "type", "positionX", "positionY", "angle", "quality" in that
 * order. Returns the number of fingerprints.
 */
static int
scan_fpio_json(const char *json, fpio_view *views, int max)
{
	const char *p = json;
	int			n = 0;

	while (n < max && (p = strstr(p, "\"minutiae\" : [")) != NULL)
	{
		const char *end = strstr(p, "\"counts\"");
		fpio_view  *v = &views[n++];

		if (end == NULL)
			end = p + strlen(p);
		v->count = 0;
		for (;;)
		{
			const char *t = strstr(p, "\"type\" : \"");
			raw_minutia *m = &v->m[v->count];

			if (t == NULL || t >= end || v->count == 256)
				break;
			t += strlen("\"type\" : \"");
			m->type = strncmp(t, "ENDING\"", 7) == 0 ? 1 :
				strncmp(t, "BIFURCATION\"", 12) == 0 ? 2 : 0;
			p = t;
			m->x = json_int_after(&p, end, "positionX");
			m->y = json_int_after(&p, end, "positionY");
			m->angle = json_int_after(&p, end, "angle");
			m->quality = json_int_after(&p, end, "quality");
			v->count++;
		}
		p = end;
	}
	return n;
}

/*
 * A sample record against its FingerprintIO decoding: every view imports
 * to the raw values (angles in `units` per turn; qualities 254/255 read as
 * 0). Returns the views compared, -1 on any mismatch.
 */
static int
check_sample(const char *data, const char *name, int units, mcc_record_format fmt)
{
	char		rel[256];
	unsigned char *rec,
			   *json;
	size_t		rlen,
				jlen;
	static fpio_view views[4];
	int			nv,
				ok = 0;

	snprintf(rel, sizeof(rel), "format-samples/fingerprintio/%s.dat", name);
	rec = load(data, rel, &rlen);
	snprintf(rel, sizeof(rel), "format-samples/fingerprintio/%s.json", name);
	json = load(data, rel, &jlen);
	if (rec == NULL || json == NULL)
	{
		free(rec);
		free(json);
		return -1;
	}
	nv = scan_fpio_json((const char *) json, views, 4);
	for (int v = 0; v < nv; v++)
	{
		mcc_minutiae ms;
		mcc_record_info info;
		mcc_error	err;

		for (int i = 0; i < views[v].count; i++)
			if (views[v].m[i].quality >= 254)
				views[v].m[i].quality = 0;
		if (mcc_iso_read(rec, rlen, v + 1, &ms, &info, &err) == MCC_OK &&
			info.format == fmt && info.n_views == nv && ms.width == 512 &&
			ms.height == 512 && ms.dpi == 500 &&
			same_view(&ms, views[v].m, views[v].count, units, true))
			ok++;
		else
			printf("# %s view %d: %s\n", name, v + 1, err.message);
	}
	free(rec);
	free(json);
	return nv > 0 && ok == nv ? nv : -1;
}

/* Angle units per turn of the format a record was read as. */
static int
angle_units_of(mcc_record_format fmt)
{
	return (fmt == MCC_REC_ISO2005 || fmt == MCC_REC_ISO2011) ? 256 : 180;
}

/*
 * Is b the set a written in a format of `units` angle units and read back:
 * equal but for angles, which are within half a unit?
 */
static bool
near_set(const mcc_minutiae *a, const mcc_minutiae *b, int units)
{
	if (a->width != b->width || a->height != b->height || a->dpi != b->dpi ||
		a->count != b->count)
		return false;
	for (int i = 0; i < a->count; i++)
	{
		double		d = fabs(a->m[i].theta - b->m[i].theta);

		d = fmin(d, TWO_PI - d);
		if (a->m[i].x != b->m[i].x || a->m[i].y != b->m[i].y ||
			a->m[i].type != b->m[i].type || a->m[i].quality != b->m[i].quality ||
			d > TWO_PI / units / 2 + 1e-6)
			return false;
	}
	return true;
}

/*
 * Every view of a published sample, written in each format and read back,
 * gives the minutiae read from the sample: the same set in a format of the
 * sample's angle unit, angles within half a unit in the other.
 */
static void
check_sample_rewrites(const char *data, const char *rel)
{
	mcc_minutiae ms,
				back;
	mcc_record_info info;
	mcc_error	err;
	uint8_t		buf[2048];
	size_t		n;
	unsigned char *rec = load(data, rel, &n);
	int			views = 0,
				bad = 0,
				checked = 0;

	if (rec != NULL && mcc_iso_read(rec, n, 1, &ms, &info, &err) == MCC_OK)
		views = info.n_views;
	for (int v = 1; v <= views; v++)
	{
		if (mcc_iso_read(rec, n, v, &ms, &info, &err) != MCC_OK)
		{
			bad++;
			continue;
		}
		for (int f = 0; f < N_WRITTEN; f++)
		{
			size_t		len = sizeof(buf);
			int			units = written[f].units;

			checked++;
			if (mcc_iso_write(&ms, written[f].fmt, buf, &len, &err) != MCC_OK ||
				mcc_iso_read(buf, len, 1, &back, NULL, &err) != MCC_OK ||
				!(units == angle_units_of(info.format) ? same_set(&back, &ms) : near_set(&ms, &back, units)))
				bad++;
		}
	}
	free(rec);
	UNIT_CHECK(bad == 0 && checked > 0, "%s: %d views rewritten in the %d formats read back (%d bad)",
			   rel, views, N_WRITTEN, bad);
}

/* Read a shared file's view; status, with the set in ms. */
static mcc_status
read_shared(const char *data, const char *rel, size_t cut, int view,
			mcc_minutiae *ms, mcc_record_info *info, mcc_error *err)
{
	size_t		len;
	unsigned char *buf = load(data, rel, &len);
	mcc_status	st;

	if (buf == NULL)
		return mcc_error_set(err, MCC_ERR_INTERNAL, "cannot read %s", rel);
	mcc_error_clear(err);
	st = mcc_iso_read(buf, cut && cut < len ? cut : len, view, ms, info, err);
	free(buf);
	return st;
}

/* The published samples, each per its quirk (docs/formats.md). */
static void
test_samples(const char *data)
{
	mcc_minutiae a,
				b;
	mcc_record_info info;
	mcc_error	err;
	mcc_status	st;
	static fpio_view views[4];
	unsigned char *json;
	size_t		jlen;
	int			maxangle = -1;

	UNIT_CHECK(check_sample(data, "iso19794p2v2005-sample", 256, MCC_REC_ISO2005) == 2,
			   "ISO 2005 sample: both views import as FingerprintIO decodes them");
	UNIT_CHECK(check_sample(data, "iso19794p2v2011-sample", 256, MCC_REC_ISO2011) == 2,
			   "ISO 2011 sample (extension length counting its header): both views import");
	UNIT_CHECK(check_sample(data, "ansi378v2009-sample", 180, MCC_REC_ANSI2009) == 2,
			   "ANSI 2009 sample (record length 363 of 364 bytes): both views import");
	UNIT_CHECK(check_sample(data, "ansi378v2009am1-sample", 180, MCC_REC_ANSI2009AM1) == 2,
			   "ANSI 2009/AM1 sample: both views import");

	/* ANSI 2004 sample: "020" is read, but its angles are ISO bytes */
	json = load(data, "format-samples/fingerprintio/ansi378v2004-sample.json", &jlen);
	if (json && scan_fpio_json((const char *) json, views, 4) == 2)
		for (int i = 0; i < views[1].count; i++)
			if (views[1].m[i].angle > maxangle)
				maxangle = views[1].m[i].angle;
	free(json);
	st = read_shared(data, "format-samples/fingerprintio/ansi378v2004-sample.dat", 0, 1,
					 &a, NULL, &err);
	UNIT_CHECK(maxangle > 179 && st == MCC_ERR_RANGE && strstr(err.message, "ANSI/INCITS 378-2004") &&
			   strstr(err.message, "outside 0..179"),
			   "ANSI 2004 sample (angles up to %d) is refused: %s", maxangle, err.message);

	/*
	 * ...and only the angles: halved into 0..127, the same bytes read, "020"
	 * and the record length 340 of 342 bytes notwithstanding (tolerance 1)
	 */
	{
		size_t		len;
		unsigned char *buf = load(data, "format-samples/fingerprintio/ansi378v2004-sample.dat", &len);
		bool		ok = false;

		mcc_error_clear(&err);
		if (buf && len == 342 && buf[194 + 3] == views[1].count)
		{
			for (int i = 0; i < views[1].count; i++)
			{
				buf[198 + 6 * i + 4] /= 2;
				views[1].m[i].angle /= 2;
			}
			ok = mcc_iso_read(buf, len, 2, &a, &info, &err) == MCC_OK &&
				info.format == MCC_REC_ANSI2004 &&
				same_view(&a, views[1].m, views[1].count, 180, true) &&
				mcc_iso_read(buf, len, 1, &b, &info, &err) == MCC_OK &&
				same_view(&b, views[0].m, views[0].count, 180, true);
		}
		free(buf);
		UNIT_CHECK(ok, "ANSI 2004 sample with its view 2 angles halved imports (%s)", err.message);
	}

	/* the same two fingers in every format */
	for (int v = 1; v <= 2; v++)
	{
		bool		same;

		read_shared(data, "format-samples/fingerprintio/iso19794p2v2005-sample.dat", 0, v, &a, NULL, &err);
		read_shared(data, "format-samples/fingerprintio/iso19794p2v2011-sample.dat", 0, v, &b, NULL, &err);
		UNIT_CHECK(same_set(&a, &b), "ISO 2005 and ISO 2011 samples agree on view %d", v);
		read_shared(data, "format-samples/fingerprintio/ansi378v2009-sample.dat", 0, v, &a, NULL, &err);
		st = read_shared(data, "format-samples/libbiomeval/fmr.ansi2007", 0, v, &b, &info, &err);
		same = st == MCC_OK && info.format == MCC_REC_ANSI2007 && same_set(&a, &b);
		UNIT_CHECK(same, "libbiomeval fmr.ansi2007 (no certification byte) equals the ANSI 2009 sample, view %d (%s)",
				   v, err.message);
		st = read_shared(data, "format-samples/libbiomeval/fmr.ansi2004", 0, v, &b, &info, &err);
		UNIT_CHECK(st == MCC_OK && info.n_views == 3 && same_set(&a, &b),
				   "libbiomeval fmr.ansi2004 (42-vs-44 block) equals the ANSI 2009 sample, view %d (%s)",
				   v, err.message);
	}
	check_sample_rewrites(data, "format-samples/fingerprintio/iso19794p2v2005-sample.dat");
	check_sample_rewrites(data, "format-samples/fingerprintio/iso19794p2v2011-sample.dat");
	check_sample_rewrites(data, "format-samples/fingerprintio/ansi378v2009-sample.dat");
	check_sample_rewrites(data, "format-samples/fingerprintio/ansi378v2009am1-sample.dat");
	check_sample_rewrites(data, "format-samples/libbiomeval/fmr.ansi2004");
	st = read_shared(data, "format-samples/libbiomeval/fmr.ansi2004", 0, 3, &a, &info, &err);
	UNIT_CHECK(st == MCC_OK && a.count == 28 && info.finger_position == 3 &&
			   mcc_minutiae_validate(&a, &err) == MCC_OK,
			   "libbiomeval fmr.ansi2004 view 3 imports 28 minutiae (%s)", err.message);
	st = read_shared(data, "format-samples/libbiomeval/fmr.iso2005", 0, 1, &a, &info, &err);
	UNIT_CHECK(st == MCC_ERR_TRUNCATED && strstr(err.message, "extended data of finger view 2"),
			   "libbiomeval fmr.iso2005 (block claiming 42 of 41 bytes) is refused: %s", err.message);
	for (int i = 0; i < 3; i++)
	{
		const char *f[] = {"type9.an2k", "type9-13.an2k", "type9-efs.an2k"};
		char		rel[128];

		snprintf(rel, sizeof(rel), "format-samples/libbiomeval/%s", f[i]);
		st = read_shared(data, rel, 0, 1, &a, NULL, &err);
		UNIT_CHECK(st == MCC_ERR_SYNTAX && strstr(err.message, "not a finger minutiae record"),
				   "%s (ANSI/NIST-ITL, not FMR) is refused: %s", f[i], err.message);
	}
	for (int i = 1; i <= 3; i++)
	{
		char		rel[128];

		snprintf(rel, sizeof(rel), "format-samples/openafis-invalid/101_1_truncate_%d_byte%s.iso",
				 i, i > 1 ? "s" : "");
		st = read_shared(data, rel, 0, 1, &a, NULL, &err);
		UNIT_CHECK(st == MCC_ERR_TRUNCATED && strstr(err.message, "record length 30"),
				   "openafis record cut by %d byte%s is refused: %s", i, i > 1 ? "s" : "",
				   err.message);
	}

	/* SourceAFIS: the record length, not the 384-byte buffer, decides */
	for (int i = 0; i < 3; i++)
	{
		const char *f[] = {"iso-probe.dat", "iso-matching.dat", "iso-nonmatching.dat"};
		char		rel[128];
		size_t		len;
		unsigned char *buf;
		size_t		reclen;

		snprintf(rel, sizeof(rel), "format-samples/sourceafis/%s", f[i]);
		buf = load(data, rel, &len);
		if (buf == NULL)
		{
			UNIT_CHECK(0, "cannot read %s", rel);
			continue;
		}
		reclen = ((size_t) buf[8] << 24) | ((size_t) buf[9] << 16) | ((size_t) buf[10] << 8) | buf[11];
		free(buf);
		st = read_shared(data, rel, 0, 1, &a, NULL, &err);
		UNIT_CHECK(st == MCC_OK && len == 384 && reclen < len &&
				   reclen == 24 + 4 + 6 * (size_t) a.count + 2 + 5 &&
				   read_shared(data, rel, reclen, 1, &b, NULL, &err) == MCC_OK && same_set(&a, &b),
				   "SourceAFIS %s: %u minutiae, the %zu bytes of zero padding ignored (%s)",
				   f[i], a.count, len - reclen, err.message);
	}

	/* FingerJetFX: one view, no extended data: size = 30 + 6 * count */
	{
		const char *f[] = {"a001_03p", "a001_04p", "a001_05p", "a001_06p", "a001_07p",
		"a004_05p", "b001_04p", "b001_06p", "b001_08p"};
		int			good = 0;

		for (int i = 0; i < 9; i++)
		{
			char		rel[128];
			size_t		len;
			unsigned char *buf;

			snprintf(rel, sizeof(rel), "format-samples/fingerjetfx/%s.ist", f[i]);
			buf = load(data, rel, &len);
			free(buf);
			if (buf && read_shared(data, rel, 0, 1, &a, &info, &err) == MCC_OK &&
				info.n_views == 1 && len == 30 + 6 * (size_t) a.count &&
				mcc_minutiae_validate(&a, &err) == MCC_OK)
				good++;
			else
				printf("# %s: %s\n", rel, err.message);
		}
		UNIT_CHECK(good == 9, "FingerJetFX samples: %d of 9 import", good);
	}
}

/*
 * Every importable sample cut short at every length is TRUNCATED: the cuts
 * run through real headers, views and extension blocks.
 */
static void
test_sample_cuts(const char *data)
{
	static const char *const files[] = {
		"fingerprintio/iso19794p2v2005-sample.dat", "fingerprintio/iso19794p2v2011-sample.dat",
		"fingerprintio/ansi378v2009-sample.dat", "fingerprintio/ansi378v2009am1-sample.dat",
		"libbiomeval/fmr.ansi2004", "libbiomeval/fmr.ansi2007", "sourceafis/iso-probe.dat",
		"fingerjetfx/a001_05p.ist"
	};
	int			cuts = 0,
				bad = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++)
	{
		char		rel[256];
		size_t		len,
					reclen;
		unsigned char *buf;

		snprintf(rel, sizeof(rel), "format-samples/%s", files[f]);
		if ((buf = load(data, rel, &len)) == NULL || len < 12)
		{
			bad++;
			free(buf);
			continue;
		}
		/* all of these have a 4-byte length at 8, or ANSI's 2-byte one */
		reclen = buf[8] == 0 && buf[9] == 0 ?
			((size_t) buf[10] << 8 | buf[11]) : ((size_t) buf[8] << 8 | buf[9]);
		for (size_t cut = 0; cut < len && cut < reclen; cut++)
		{
			mcc_minutiae ms;
			mcc_error	err;
			mcc_status	st;

			mcc_error_clear(&err);
			st = mcc_iso_read(buf, cut, 1, &ms, NULL, &err);
			cuts++;
			if (st != MCC_ERR_TRUNCATED)
			{
				if (bad++ < 3)
					printf("# %s cut to %zu: %s\n", files[f], cut, err.message);
			}
		}
		free(buf);
	}
	UNIT_CHECK(cuts > 2000 && bad == 0, "published samples cut at %d lengths: all TRUNCATED (%d not)",
			   cuts, bad);
}

/* Every FVC2002 record of the three binary encodings imports. */
static void
test_fvc_records(const char *data)
{
	static const struct
	{
		const char *dir;
		const char *ext;
		mcc_record_format fmt;
	}			enc[3] = {
		{"fingerjetfx-iso19794-2-2005", "ist", MCC_REC_ISO2005},
		{"secugen-iso19794-2-2005", "iso", MCC_REC_ISO2005},
		{"nbis-minex-ansi378-2004", "fmr", MCC_REC_ANSI2004},
	};

	for (int e = 0; e < 3; e++)
	{
		int			files = 0,
					good = 0,
					minutiae = 0,
					lo = 1000,
					hi = 0;

		for (int k = 0; k < TFVC_PRINTS; k++)
		{
			const tfvc_print p = tfvc_print_at(k);
			size_t		len;
			unsigned char *buf;
			mcc_minutiae ms;
			mcc_record_info info;
			mcc_error	err;
			bool		size_ok;

			if ((buf = tfvc_read_minutiae(data, enc[e].dir, p.db, p.finger, p.imp, enc[e].ext, &len)) == NULL)
				continue;
			files++;
			mcc_error_clear(&err);
			/* SecuGen stretched every image to 300x400 (README) */
			if (mcc_iso_read(buf, len, 1, &ms, &info, &err) == MCC_OK &&
				info.format == enc[e].fmt && info.n_views == 1 &&
				mcc_minutiae_validate(&ms, &err) == MCC_OK)
			{
				size_ok = e == 1 ? (ms.width == 300 && ms.height == 400) :
					(ms.width == p.db->width && ms.height == p.db->height);
				if (size_ok)
				{
					good++;
					minutiae += ms.count;
					lo = ms.count < lo ? ms.count : lo;
					hi = ms.count > hi ? ms.count : hi;
				}
				else
					printf("# %s %s/%d_%d: image %ux%u\n", enc[e].dir, p.db->db, p.finger, p.imp,
						   ms.width, ms.height);
			}
			else
				printf("# %s %s/%d_%d: %s\n", enc[e].dir, p.db->db, p.finger, p.imp, err.message);
			free(buf);
		}
		UNIT_CHECK(files > 0 && good == files,
				   "FVC2002 %s: %d of %d records import (%d minutiae, %d..%d per record)",
				   enc[e].dir, good, files, minutiae, lo, hi);
	}
}

/*
 * NBIS-MINEX ANSI records hold a subset of mindtct's minutiae (README):
 * each must coincide with an xyt minutia once both are in our frame: x and
 * y exactly, the angle within the 2-degree unit, the same quality.
 */
static void
test_minex_vs_xyt(const char *data)
{
	int			records = 0,
				matched = 0,
				total = 0,
				bad_records = 0;

	for (int k = 0; k < TFVC_PRINTS; k++)
	{
		const tfvc_print p = tfvc_print_at(k);
		mcc_minutiae fmr,
					xyt;
		mcc_error	err;
		int			here = 0;

		if (rf_read_print(data, "nbis-minex-ansi378-2004", p.db, p.finger, p.imp, "fmr", &fmr, &err) != MCC_OK ||
			rf_read_print(data, "nbis-mindtct-xyt", p.db, p.finger, p.imp, "xyt", &xyt, &err) != MCC_OK)
		{
			bad_records++;
			continue;
		}
		records++;
		for (int i = 0; i < fmr.count; i++)
		{
			const mcc_minutia *a = &fmr.m[i];

			for (int j = 0; j < xyt.count; j++)
			{
				const mcc_minutia *b = &xyt.m[j];
				double		da = fabs(a->theta - b->theta) * 360.0 / TWO_PI;

				da = fmin(da, 360.0 - da);
				if (a->x == b->x && a->y == b->y && da <= 1.0 + 1e-3 &&
					a->quality == b->quality)
				{
					here++;
					break;
				}
			}
		}
		matched += here;
		total += fmr.count;
	}
	UNIT_CHECK(records > 0 && bad_records == 0 && matched == total,
			   "NBIS-MINEX ANSI minutiae coincide with mindtct xyt ones: %d of %d in %d records",
			   matched, total, records);
}

/* Synthetic records always; shared samples and FVC2002 when present. */

int
main(void)
{
	const char *data = unit_shared_data_or_skip("published samples and FVC2002 records not read");

	if (data == NULL)
		return unit_done();
	test_samples(data);
	test_sample_cuts(data);
	test_fvc_records(data);
	test_minex_vs_xyt(data);
	return unit_done();
}
