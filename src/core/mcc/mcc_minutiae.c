/*
 * mcc_minutiae.c: validation and angle helpers for minutiae sets.
 */
#include "mcc_minutiae.h"

#include <math.h>
#include <string.h>

static const char *const type_names[] = {"other", "ending", "bifurcation"};

const char *
mcc_minutia_type_name(int type)
{
	if (type < 0 || type > MCC_TYPE_BIFURCATION)
		return "invalid";
	return type_names[type];
}

int
mcc_minutia_type_parse(const char *name, int len)
{
	for (int t = 0; t <= MCC_TYPE_BIFURCATION; t++)
	{
		if ((int) strlen(type_names[t]) == len &&
			memcmp(type_names[t], name, (size_t) len) == 0)
			return t;
	}
	return -1;
}

/*
 * nearbyint(x) without a call into libm (on x86-64 without SSE4.1 a call
 * per cylinder of every template the engine loads and checks, 9 % of its
 * load CPU with mcc_angle_to_byte): for |x| < 2^51, x + 1.5 * 2^52 lies
 * where doubles are 1 apart, so the sum is x rounded in the current
 * rounding mode, as nearbyint rounds it, and taking 1.5 * 2^52 away again
 * is exact. (The sum is not folded away: no -ffast-math.)
 */
static inline double
round_nearby(double x)
{
	const double shift = 0x1.8p52;

	return fabs(x) < 0x1p51 ? (x + shift) - shift : nearbyint(x);
}

uint8_t
mcc_angle_to_byte(double theta)
{
	double		q = round_nearby(theta * 256.0 / MCC_TWO_PI);
	long		v = (long) q % 256;

	if (v < 0)
		v += 256;
	return (uint8_t) v;
}

float
mcc_angle_normalize(double theta)
{
	double		t = fmod(theta, MCC_TWO_PI);
	float		f;

	if (t < 0)
		t += MCC_TWO_PI;
	f = (float) t;
	/* float rounding can land exactly on 2pi: that angle is 0 */
	if (f >= (float) MCC_TWO_PI)
		f = 0.0f;
	return f;
}

mcc_status
mcc_minutiae_validate(const mcc_minutiae *ms, mcc_error *err)
{
	if (ms->width < 1 || ms->width > MCC_MAX_IMAGE_SIDE ||
		ms->height < 1 || ms->height > MCC_MAX_IMAGE_SIDE)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "image size %ux%u is out of range",
							 ms->width, ms->height),
			mcc_error_detail(err, "Width and height must be between 1 and %d pixels.",
							 MCC_MAX_IMAGE_SIDE);
	if (ms->dpi < 1 || ms->dpi > MCC_MAX_DPI)
		return mcc_error_set(err, MCC_ERR_RANGE,
							 "resolution %u dpi is out of range", ms->dpi),
			mcc_error_detail(err, "Resolution must be between 1 and %d dpi.",
							 MCC_MAX_DPI);
	if (ms->count > MCC_MAX_MINUTIAE)
		return mcc_error_set(err, MCC_ERR_LIMIT,
							 "too many minutiae: %u", ms->count),
			mcc_error_detail(err, "A template holds at most %d minutiae.",
							 MCC_MAX_MINUTIAE);
	for (int i = 0; i < ms->count; i++)
	{
		const mcc_minutia *m = &ms->m[i];

		if (m->x < 0 || m->x >= ms->width || m->y < 0 || m->y >= ms->height)
			return mcc_error_set(err, MCC_ERR_RANGE,
								 "minutia %d at (%d, %d) lies outside the %ux%u image",
								 i + 1, m->x, m->y, ms->width, ms->height);
		if (!isfinite(m->theta) || m->theta < 0.0f ||
			m->theta >= (float) MCC_TWO_PI)
			return mcc_error_set(err, MCC_ERR_RANGE,
								 "minutia %d has angle %g outside [0, 2pi)",
								 i + 1, (double) m->theta);
		if (m->type > MCC_TYPE_BIFURCATION)
			return mcc_error_set(err, MCC_ERR_VALUE,
								 "minutia %d has invalid type %u", i + 1, m->type);
		if (m->quality > 100)
			return mcc_error_set(err, MCC_ERR_RANGE,
								 "minutia %d has quality %u outside 0..100",
								 i + 1, m->quality);
	}
	return MCC_OK;
}
