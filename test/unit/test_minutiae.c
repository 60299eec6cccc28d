/*
 * test_minutiae.c: minutiae validation and angle helpers.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "unit.h"
#include "mcc_minutiae.h"

static void
one_minutia(mcc_minutiae *ms)
{
	memset(ms, 0, sizeof(*ms));
	ms->width = 100;
	ms->height = 50;
	ms->dpi = 500;
	ms->count = 1;
	ms->m[0].x = 10;
	ms->m[0].y = 20;
	ms->m[0].theta = 1.0f;
	ms->m[0].type = MCC_TYPE_ENDING;
	ms->m[0].quality = 60;
}

/* The byte angle as mcc_angle_to_byte computed it with libm's nearbyint. */
static uint8_t
angle_byte_ref(double theta)
{
	long		v = (long) nearbyint(theta * 256.0 / MCC_TWO_PI) % 256;

	return (uint8_t) (v < 0 ? v + 256 : v);
}

/* mcc_angle_to_byte agrees with the reference: ties, their neighbours, a sweep, odd values. */
static bool
angle_bytes_as_nearbyint(void)
{
	const double odd[] = {0.0, -0.0, 1e-300, -1e-300, 1e15, -1e15, 3e17, -3e17};
	bool		same = true;

	for (int k = -2048; k <= 2048; k++)
	{
		double		t = (k + 0.5) * MCC_TWO_PI / 256.0;
		double		n[3] = {nextafter(t, -INFINITY), t, nextafter(t, INFINITY)};

		for (int i = 0; i < 3; i++)
			same &= mcc_angle_to_byte(n[i]) == angle_byte_ref(n[i]);
	}
	for (int i = 0; i < 2000000; i++)
	{
		double		t = -1000.0 + 2000.0 * i / 2000000.0;

		same &= mcc_angle_to_byte(t) == angle_byte_ref(t);
	}
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		same &= mcc_angle_to_byte(odd[i]) == angle_byte_ref(odd[i]);
	return same;
}

int
main(void)
{
	mcc_minutiae ms;
	mcc_error	err;

	UNIT_CHECK(mcc_angle_to_byte(0.0) == 0, "byte angle of 0");
	UNIT_CHECK(mcc_angle_to_byte(M_PI) == 128, "byte angle of pi");
	UNIT_CHECK(mcc_angle_to_byte(2 * M_PI - 1e-9) == 0, "byte angle just below 2pi wraps to 0");
	UNIT_CHECK(mcc_angle_to_byte(-M_PI / 2) == 192, "byte angle of -pi/2");
	UNIT_CHECK(angle_bytes_as_nearbyint(), "byte angles as nearbyint gives them: every half step "
			   "and its neighbours, 2 million angles in [-1000, 1000], huge and odd values");
	UNIT_CHECK(mcc_angle_normalize(-0.5) > 5.78f && mcc_angle_normalize(-0.5) < 5.79f,
			   "normalize -0.5");
	UNIT_CHECK(mcc_angle_normalize(2 * M_PI) == 0.0f, "normalize 2pi is 0");
	UNIT_CHECK(mcc_angle_normalize(nextafter(2 * M_PI, 0)) < (float) (2 * M_PI),
			   "normalize never returns 2pi");

	one_minutia(&ms);
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_OK, "valid set accepted");
	ms.m[0].x = 100;
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_RANGE &&
			   strstr(err.message, "outside") != NULL, "x == width rejected: %s", err.message);
	one_minutia(&ms);
	ms.m[0].theta = NAN;
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_RANGE, "NaN angle rejected");
	ms.m[0].theta = (float) (2 * M_PI);
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_RANGE, "angle 2pi rejected");
	one_minutia(&ms);
	ms.m[0].quality = 101;
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_RANGE, "quality 101 rejected");
	one_minutia(&ms);
	ms.width = 0;
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_RANGE, "width 0 rejected");
	one_minutia(&ms);
	ms.dpi = 0;
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_RANGE, "dpi 0 rejected");
	one_minutia(&ms);
	ms.m[0].type = 7;
	UNIT_CHECK(mcc_minutiae_validate(&ms, &err) == MCC_ERR_VALUE, "type 7 rejected");
	UNIT_CHECK(mcc_minutia_type_parse("bifurcation", 11) == MCC_TYPE_BIFURCATION, "parse type");
	UNIT_CHECK(mcc_minutia_type_parse("bif", 3) == -1, "unknown type");
	return unit_done();
}
