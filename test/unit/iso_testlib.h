/*
 * iso_testlib.h: what test_iso.c (synthetic records) and
 * test_iso_samples.c (published samples, FVC2002) share: raw minutia field
 * values, the comparisons of a decoded set with them or with another set,
 * and the four formats written.
 */
#ifndef MCC_ISO_TESTLIB_H
#define MCC_ISO_TESTLIB_H

#include <math.h>
#include <stdbool.h>

#include "mcc_iso.h"
#include "mcc_minutiae.h"
#include "testsets.h"

#define TWO_PI 6.28318530717958647692

/* A made-up finger view: raw field values as they are stored. */
typedef struct raw_minutia
{
	int			type;
	int			x;
	int			y;
	int			angle;			/* in the format's unit */
	int			quality;
} raw_minutia;

/*
 * Do the minutiae read equal the raw ones? Angles: the raw value in units
 * of 2pi/units; qualities: the raw value, or 0 when not stored.
 */
static inline bool
same_view(const mcc_minutiae *ms, const raw_minutia *m, int n, int units,
		  bool quality)
{
	if (ms->count != n)
		return false;
	for (int i = 0; i < n; i++)
	{
		const mcc_minutia *g = &ms->m[i];
		double		want = m[i].angle * TWO_PI / units;

		if (g->x != m[i].x || g->y != m[i].y || g->type != m[i].type ||
			g->quality != (quality ? m[i].quality : 0) ||
			fabs(g->theta - want) > 1e-5)
			return false;
	}
	return true;
}

/* The four formats written, with their unit and size of a one-view record. */
static const struct
{
	mcc_record_format fmt;
	int			units;			/* angle units per turn */
	size_t		fixed;			/* bytes besides 6 per minutia */
}			written[] = {
	{MCC_REC_ISO2005, 256, 24 + 4 + 2},
	{MCC_REC_ANSI2004, 180, 26 + 4 + 2},
	{MCC_REC_ISO2011, 256, 15 + 34},
	{MCC_REC_ANSI2009, 180, 21 + 17 + 2},
};

#define N_WRITTEN ((int) (sizeof(written) / sizeof(written[0])))

#endif							/* MCC_ISO_TESTLIB_H */
