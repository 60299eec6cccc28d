/*
 * mcc_profile.c: the parameter sets. Values and sources: mcc_profile.h and
 * docs/profiles.md.
 */
#include "mcc_profile.h"

#include <string.h>

#define PI 3.14159265358979323846

static const mcc_profile profiles[] = {
	{
		.id = MCC_PROFILE_GPU2015,
		.name = "gpu2015",
		.ns = 8,
		.nd = 5,
		.radius = 75.0,
		.sigma_s = 6.0,
		.sigma_d = 5.0 * PI / 36.0,
		.mu_psi = 0.005,
		.omega = 75.0,
		.min_vc = 0.2,
		.min_m = 1,
		.drop_cell = true,
		.ndisc = 51,
		.nbits = 255,
		.words = 4,
		.masks = false,
		.min_me = 0.0,
		.min_me_cells = 0,
		.delta_theta = 64,		/* pi/2, not paper 000's 3pi/4: docs/profiles.md */
		.min_np = 11,
		.max_np = 13,
		.mu_p = 30.0,
		.tau_p = 0.4,
	},
	{
		.id = MCC_PROFILE_TPAMI2010,
		.name = "tpami2010",
		.ns = 16,
		.nd = 6,
		.radius = 70.0,
		.sigma_s = 28.0 / 3.0,
		.sigma_d = 2.0 * PI / 9.0,
		.mu_psi = 0.01,
		.omega = 50.0,
		.min_vc = 0.75,
		.min_m = 2,
		.drop_cell = false,
		.ndisc = 208,
		.nbits = 1248,
		.words = 20,
		.masks = true,
		.min_me = 0.6,
		.min_me_cells = 749,	/* ceil(0.6 * 1248) */
		.delta_theta = 64,		/* pi/2 */
		.min_np = 4,
		.max_np = 12,
		.mu_p = 20.0,
		.tau_p = 0.4,
	},
};

const mcc_profile *
mcc_profile_by_id(int id)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (profiles[i].id == id)
			return &profiles[i];
	return NULL;
}

const mcc_profile *
mcc_profile_by_name(const char *name, int len)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if ((int) strlen(profiles[i].name) == len &&
			memcmp(profiles[i].name, name, (size_t) len) == 0)
			return &profiles[i];
	return NULL;
}
