/*
 * mcc_profile.h: MCC parameter sets ("profiles").
 *
 * A profile fixes how cylinders are built and how two cylinders and two
 * templates are compared. Every template records the profile it was built
 * with; templates of different profiles are never compared.
 *
 *  - MCC_PROFILE_GPU2015 (id 1, "gpu2015"): paper 000 (Cappelli, Ferrara,
 *    Maltoni 2015), Table III, with the values of [11] for the rest:
 *    N_S=8, N_D=5, 255-bit cylinders (one outer disc cell dropped per layer),
 *    R=75, sigma_S=6, sigma_D=5pi/36, mu_psi=0.005, omega=75, min_VC=0.2,
 *    min_M=1, no validity masks at match time, n_P from (11, 13, 30, 2/5);
 *    the angular gate delta_theta=pi/2 of TPAMI 2010, not [11]'s 3pi/4
 *    (measured better: docs/profiles.md). This is the default.
 *  - MCC_PROFILE_TPAMI2010 (id 2, "tpami2010"): the bit-based MCC of TPAMI
 *    2010 with validity masks: N_S=16, N_D=6 (1248 bits), R=70,
 *    sigma_S=28/3, sigma_D=2pi/9, mu_psi=0.01, omega=50, min_VC=0.75,
 *    min_M=2, min_ME=0.6, delta_theta=pi/2, n_P from (4, 12, 20, 2/5).
 *
 * Profile ids are part of the stored format: never renumber them.
 */
#ifndef MCC_PROFILE_H
#define MCC_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#define MCC_PROFILE_GPU2015		1
#define MCC_PROFILE_TPAMI2010	2
#define MCC_PROFILE_DEFAULT		MCC_PROFILE_GPU2015

#define MCC_W			64		/* LSS buckets (paper 000, w) */
#define MCC_Z			256		/* angle quantization (paper 000, z) */
#define MCC_MAX_CYL		256		/* MaxC: cylinders per template */
#define MCC_MAX_BITS	1248	/* largest cylinder of any profile */
#define MCC_MAX_WORDS	20		/* uint64 words for MCC_MAX_BITS */

typedef struct mcc_profile
{
	uint8_t		id;				/* stored in every template */
	const char *name;

	/* cylinder geometry and creation (mcc-spec §3) */
	int			ns;				/* N_S, cells along the diameter */
	int			nd;				/* N_D, sections */
	double		radius;			/* R, pixels */
	double		sigma_s;
	double		sigma_d;
	double		mu_psi;			/* bit threshold on the accumulated value */
	double		omega;			/* convex hull dilation, pixels */
	double		min_vc;			/* fraction of disc cells that must be valid */
	int			min_m;			/* neighbours needed within R + 3 sigma_S */
	bool		drop_cell;		/* drop disc cell (a,b)=(-3.5,-1.5) per layer */
	int			ndisc;			/* disc cells per layer kept in the bit vector */
	int			nbits;			/* ndisc * nd */
	int			words;			/* uint64 words of value bits per cylinder */

	/* local similarity (mcc-spec §4) */
	bool		masks;			/* match with validity masks (TPAMI bit form) */
	double		min_me;			/* masks only: fraction of nbits valid in both */
	int			min_me_cells;	/* ceil(min_me * nbits) */
	int			delta_theta;	/* angular gate in byte units (z = 256) */

	/* LSS (paper 000 eq. 2) */
	int			min_np;
	int			max_np;
	double		mu_p;
	double		tau_p;
} mcc_profile;

/* Profile by stored id, or NULL if the id is unknown. */
const mcc_profile *mcc_profile_by_id(int id);

/* Profile by name ("gpu2015", "tpami2010"), or NULL if unknown. */
const mcc_profile *mcc_profile_by_name(const char *name, int len);

/* uint64 words stored per cylinder: value bits, then mask bits if masks. */
static inline int
mcc_profile_cyl_words(const mcc_profile *p)
{
	return p->masks ? 2 * p->words : p->words;
}

#endif							/* MCC_PROFILE_H */
