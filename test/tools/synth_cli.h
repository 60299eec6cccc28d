/*
 * synth_cli.h: what the synthetic-data tools (mccgen, mccsyneval) share:
 * error exit, strict number parsing, the start and end of option parsing,
 * and the model options of mcc_synth_params, described by one table so that
 * parsing, --help and the defaults shown there cannot drift apart.
 */
#ifndef SYNTH_CLI_H
#define SYNTH_CLI_H

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_profile.h"
#include "mcc_synth.h"

static const char *cli_progname = "mcc";

/* Print an error and exit 1. */
static void
cli_die(const char *fmt,...)
	__attribute__((format(printf, 1, 2), noreturn));

static void
cli_die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", cli_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Parse an unsigned decimal integer strictly, at most max. */
static uint64_t
cli_u64(const char *name, const char *s, uint64_t max)
{
	char	   *end;
	unsigned long long v;

	errno = 0;
	if (*s == '-' || *s == '+' || *s == '\0' || *s == ' ')
		cli_die("invalid value for --%s: \"%s\"", name, s);
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0')
		cli_die("invalid value for --%s: \"%s\"", name, s);
	if (v > max)
		cli_die("--%s %s is out of range (at most %" PRIu64 ")", name, s, max);
	return (uint64_t) v;
}

/* Parse a finite number strictly. */
static double
cli_double(const char *name, const char *s)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end != '\0' || end == s || !isfinite(v))
		cli_die("invalid value for --%s: \"%s\"", name, s);
	return v;
}

/* One model option: a field of mcc_synth_params. */
typedef struct cli_model_opt
{
	const char *name;
	char		kind;			/* 'i' int, 'd' double, 'u' uint64 */
	size_t		off;
	const char *unit;
	const char *help;
} cli_model_opt;

#define CLI_F(field) offsetof(mcc_synth_params, field)

static const cli_model_opt cli_model_opts[] = {
	{"seed", 'u', CLI_F(seed), "", "seed of every random stream"},
	{"width", 'i', CLI_F(width), "px", "sensor image width"},
	{"height", 'i', CLI_F(height), "px", "sensor image height"},
	{"dpi", 'i', CLI_F(dpi), "", "resolution; finger sizes scale with dpi/500"},
	{"min-minutiae", 'i', CLI_F(min_minutiae), "", "master: fewest minutiae"},
	{"max-minutiae", 'i', CLI_F(max_minutiae), "", "master: most minutiae"},
	{"spacing", 'd', CLI_F(min_spacing), "px", "master: least distance between minutiae"},
	{"rotation", 'd', CLI_F(max_rotation), "deg", "impression: rotation, uniform +-"},
	{"translation", 'd', CLI_F(max_translation), "px", "impression: shift in x and y, uniform +-"},
	{"distortion", 'd', CLI_F(distortion), "", "plastic distortion strength (0: none)"},
	{"contact-loss", 'd', CLI_F(contact_loss), "", "contact ellipse shrinks by up to this fraction"},
	{"border", 'i', CLI_F(border), "px", "nothing detected this close to the window edge"},
	{"missing", 'd', CLI_F(p_missing), "", "chance a minutia is not detected (quality weighted)"},
	{"spurious", 'd', CLI_F(max_spurious), "", "spurious minutiae, up to this fraction of the detected"},
	{"pos-noise", 'd', CLI_F(pos_noise), "px", "position noise, standard deviation"},
	{"angle-noise", 'd', CLI_F(angle_noise), "deg", "direction noise, standard deviation"},
	{"type-flip", 'd', CLI_F(p_type_flip), "", "chance ending <-> bifurcation (angle kept)"},
	{"dir-flip", 'd', CLI_F(p_dir_flip), "", "chance the direction is reversed"},
	{"quality-noise", 'd', CLI_F(quality_noise), "", "minutia quality noise, standard deviation"},
	{"variability", 'd', CLI_F(variability), "", "per impression, noise/missing/spurious scale by 1 +- this"},
};

#define CLI_N_MODEL ((int) (sizeof(cli_model_opts) / sizeof(cli_model_opts[0])))

/* Option codes: the tool's own below CLI_MODEL_BASE, model options above. */
#define CLI_MODEL_BASE	1000
#define CLI_CLEAN		999
#define CLI_PROFILE		998
#define CLI_HELP		997

/*
 * The long options of a tool: its own (own, terminated by a NULL name)
 * followed by the model options, --clean, --profile and --help. malloc'ed, never freed.
 */
static struct option *
cli_options(const struct option *own)
{
	int			n_own = 0,
				k = 0;
	struct option *all;

	while (own[n_own].name)
		n_own++;
	all = calloc((size_t) (n_own + CLI_N_MODEL + 4), sizeof(struct option));
	if (!all)
		cli_die("out of memory");
	for (int i = 0; i < n_own; i++)
		all[k++] = own[i];
	for (int i = 0; i < CLI_N_MODEL; i++)
	{
		all[k].name = cli_model_opts[i].name;
		all[k].has_arg = required_argument;
		all[k].val = CLI_MODEL_BASE + i;
		k++;
	}
	all[k].name = "clean";
	all[k].has_arg = no_argument;
	all[k].val = CLI_CLEAN;
	k++;
	all[k].name = "profile";
	all[k].has_arg = required_argument;
	all[k].val = CLI_PROFILE;
	k++;
	all[k].name = "help";
	all[k].has_arg = no_argument;
	all[k].val = CLI_HELP;
	return all;
}

/* Apply --clean wherever it is, so that later model options refine it. */
static void
cli_pre_clean(int argc, char **argv, mcc_synth_params *sp)
{
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--clean") == 0)
			mcc_synth_clean(sp);
	}
}

/* Handle option code c if it is a model option; returns 1 if it was. */
static int
cli_model_option(int c, const char *arg, mcc_synth_params *sp)
{
	const cli_model_opt *mo;
	char	   *field;

	if (c == CLI_CLEAN)
		return 1;
	if (c < CLI_MODEL_BASE || c >= CLI_MODEL_BASE + CLI_N_MODEL)
		return 0;
	mo = &cli_model_opts[c - CLI_MODEL_BASE];
	field = (char *) sp + mo->off;
	if (mo->kind == 'i')
	{
		int			v = (int) cli_u64(mo->name, arg, INT_MAX);

		memcpy(field, &v, sizeof(v));
	}
	else if (mo->kind == 'u')
	{
		uint64_t	v = cli_u64(mo->name, arg, UINT64_MAX);

		memcpy(field, &v, sizeof(v));
	}
	else
	{
		double		v = cli_double(mo->name, arg);

		memcpy(field, &v, sizeof(v));
	}
	return 1;
}

/* --profile NAME: the profile so named, or exit with an error. */
static const mcc_profile *
cli_profile(const char *name)
{
	const mcc_profile *p = mcc_profile_by_name(name, (int) strlen(name));

	if (!p)
		cli_die("unknown profile \"%s\"", name);
	return p;
}

/*
 * The start of a tool's option parsing: the model's defaults in sp with
 * --clean applied wherever it stands, getopt at argv[1], and the tool's long
 * options (cli_options(own)) for cli_next_option.
 */
static struct option *
cli_begin(int argc, char **argv, const struct option *own, mcc_synth_params *sp)
{
	mcc_synth_defaults(sp);
	cli_pre_clean(argc, argv, sp);
	optind = 1;
	return cli_options(own);
}

/*
 * The next of a tool's own options on its command line (lo from
 * cli_options): returns its code, -1 at the end, and its long name in
 * *name. The shared options are handled on the way: a model option or
 * --clean applies to sp, --profile sets *profile, -h or --help prints usage
 * on stdout and exits 0, a missing value or an unknown option exits 1.
 */
static int
cli_next_option(int argc, char **argv, const struct option *lo, mcc_synth_params *sp,
				const mcc_profile **profile, void (*usage) (FILE *), const char **name)
{
	int			c,
				idx = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, &idx)) != -1)
	{
		if (cli_model_option(c, optarg, sp))
			continue;
		if (c == CLI_PROFILE)
			*profile = cli_profile(optarg);
		else if (c == 'h' || c == CLI_HELP)
		{
			usage(stdout);
			exit(0);
		}
		else if (c == ':')
			cli_die("option \"%s\" needs a value\nTry \"%s --help\" for more information.",
					argv[optind - 1], cli_progname);
		else if (c == '?')
			cli_die("unrecognized option \"%s\"\nTry \"%s --help\" for more information.",
					argv[optind - 1], cli_progname);
		else
		{
			*name = lo[idx].name;
			return c;
		}
	}
	return -1;
}

/* Check the model parameters, exiting with the generator's message. */
static void
cli_check_model(const mcc_synth_params *sp)
{
	mcc_error	err;

	if (mcc_synth_check(sp, &err) != MCC_OK)
		cli_die("%s\nDETAIL:  %s", err.message, err.detail);
}

/* The end of a tool's option parsing: no operand after the options, a valid model. */
static void
cli_end(int argc, char **argv, const mcc_synth_params *sp)
{
	if (optind < argc)
		cli_die("unexpected argument \"%s\"", argv[optind]);
	cli_check_model(sp);
}

/* The model options with their defaults, for --help. */
static void
cli_model_usage(FILE *f)
{
	mcc_synth_params d;

	mcc_synth_defaults(&d);
	fprintf(f, "Model options (docs/synthetic.md; default in brackets):\n");
	for (int i = 0; i < CLI_N_MODEL; i++)
	{
		const cli_model_opt *mo = &cli_model_opts[i];
		const char *field = (const char *) &d + mo->off;
		char		val[64],
					left[64];

		if (mo->kind == 'i')
		{
			int			v;

			memcpy(&v, field, sizeof(v));
			snprintf(val, sizeof(val), "%d", v);
		}
		else if (mo->kind == 'u')
		{
			uint64_t	v;

			memcpy(&v, field, sizeof(v));
			snprintf(val, sizeof(val), "%" PRIu64, v);
		}
		else
		{
			double		v;

			memcpy(&v, field, sizeof(v));
			snprintf(val, sizeof(val), "%g", v);
		}
		snprintf(left, sizeof(left), "--%s %s", mo->name, *mo->unit ? mo->unit : "X");
		fprintf(f, "  %-22s %s [%s]\n", left, mo->help, val);
	}
	fprintf(f, "  %-22s %s\n", "--clean", "no perturbation at all (other options may follow)");
}

#endif							/* SYNTH_CLI_H */
