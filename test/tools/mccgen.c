/*
 * mccgen.c: synthetic fingerprint minutiae for demos, tests, benchmarks and
 * accuracy runs (docs/synthetic.md). Output is a pure function of the
 * arguments: the same command writes the same bytes on any machine.
 *
 *   mccgen gallery --fingers N [--first F] [--impression I] ...
 *   mccgen probes  --count P --gallery-fingers N [--mated-fraction X] --truth FILE ...
 *   mccgen pairs   --fingers N --impressions K [--impostors fvc|all] --truth FILE ...
 *   mccgen master | impression --finger F [--impression I] ...
 *
 * `mccgen --help` lists every option.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include "mcc_iso.h"
#include "mcc_json.h"
#include "mcc_profile.h"
#include "mcc_rng.h"
#include "mcc_synth.h"
#include "mcc_xyt.h"
#include "synth_cli.h"

/* ids are SQL bigint: keep finger numbers and ids below 2^62 */
#define MAX_ID		(UINT64_C(1) << 62)

/* Keys of mccgen's own random streams (distinct from the generator's). */
#define STREAM_PROBES	UINT64_C(0x70726f626573)	/* "probes" */

typedef enum out_format
{
	FMT_CSV,
	FMT_JSONL,
	FMT_JSON,
	FMT_ISO,
	FMT_ANSI,
	FMT_XYT,
	FMT_ISO2011,
	FMT_ANSI2009,
	FMT_COUNT
} out_format;

static const char *const format_names[] = {"csv", "jsonl", "json", "iso", "ansi", "xyt", "iso2011", "ansi2009"};
static const char *const format_exts[] = {"csv", "jsonl", "json", "iso", "fmr", "xyt", "iso2011.iso", "ansi2009.fmr"};
/* the record formats (others: MCC_REC_UNKNOWN, 0) */
static const mcc_record_format record_formats[FMT_COUNT] = {
	[FMT_ISO] = MCC_REC_ISO2005, [FMT_ANSI] = MCC_REC_ANSI2004,
	[FMT_ISO2011] = MCC_REC_ISO2011, [FMT_ANSI2009] = MCC_REC_ANSI2009
};

/* Everything the command line can set. */
typedef struct options
{
	mcc_synth_params sp;
	out_format	format;
	const char *out;
	const char *truth;
	const mcc_profile *profile;
	int			header;
	uint64_t	fingers;
	uint64_t	first;
	uint64_t	impression;
	uint64_t	impressions;
	uint64_t	count;
	uint64_t	first_id;
	double		mated_fraction;
	int			impostors_all;
	uint64_t	finger;
	int			have_impression;
	int			format_set;
} options;

/* Where templates go: one CSV stream, or one file per template in a folder. */
typedef struct sink
{
	out_format	format;
	FILE	   *csv;
	const char *dir;
	const mcc_profile *profile;
	char	   *buf;
	size_t		cap;
	uint64_t	written;
} sink;

static void
usage(FILE *f)
{
	fprintf(f,
			"mccgen: deterministic synthetic fingerprint minutiae (docs/synthetic.md)\n"
			"\n"
			"Usage:\n"
			"  mccgen gallery --fingers N [--first F] [--impression I] [options]\n"
			"      one impression (default 0) of fingers F .. F+N-1 (default F = 1);\n"
			"      template id = finger number\n"
			"  mccgen probes --count P --gallery-fingers N [--first F] [--impression I]\n"
			"                [--mated-fraction X] [--first-id K] --truth FILE [options]\n"
			"      P probes, round(P X) of them (default X = 0.5) impressions I+1+p of\n"
			"      distinct gallery fingers, the rest fingers F+N+p outside the gallery;\n"
			"      probe ids K .. K+P-1 (default 1)\n"
			"  mccgen pairs --fingers N --impressions K [--first F] [--impostors fvc|all]\n"
			"               --truth FILE [options]\n"
			"      impressions 1..K of fingers F .. F+N-1, ids 1, 2, ... in that order;\n"
			"      truth lists the genuine pairs and the impostor pairs (fvc: impression 1\n"
			"      of each finger against impression 1 of the others; all: every\n"
			"      cross-finger pair)\n"
			"  mccgen master --finger F [options]\n"
			"  mccgen impression --finger F --impression I [options]\n"
			"      one master or impression, JSON on standard output by default\n"
			"\n"
			"Output:\n"
			"  --format F          csv (default): lines id,finger,impression,template\n"
			"                      (template = JSON text), for COPY ... (FORMAT csv);\n"
			"                      jsonl: one JSON template per line;\n"
			"                      json, iso (ISO/IEC 19794-2:2005), ansi (ANSI/INCITS\n"
			"                      378-2004; .fmr), iso2011 (ISO/IEC 19794-2:2011;\n"
			"                      .iso2011.iso), ansi2009 (ANSI/INCITS 378-2009;\n"
			"                      .ansi2009.fmr), xyt (NBIS): one file per template in\n"
			"                      the folder --out, named FINGER_IMPRESSION.ext (probes:\n"
			"                      ID.ext); master/impression: the one template (json by\n"
			"                      default) to --out FILE or standard output\n"
			"  --out PATH          file (csv, jsonl) or folder; '-' or none: standard output\n"
			"  --truth FILE        probes: probe_id,finger,impression,mate_id (mate_id\n"
			"                      empty for a non-mated probe); pairs:\n"
			"                      finger_a,impression_a,finger_b,impression_b,genuine\n"
			"  --header            csv and truth files start with a line of column names\n"
			"  --profile NAME      profile named in the JSON text (default gpu2015)\n"
			"  --help              this text\n"
			"\n");
	cli_model_usage(f);

}

enum
{
	OPT_FINGERS = 256, OPT_FIRST, OPT_IMPRESSION, OPT_IMPRESSIONS, OPT_COUNT,
	OPT_GALLERY_FINGERS, OPT_MATED, OPT_FIRST_ID, OPT_IMPOSTORS, OPT_FINGER,
	OPT_FORMAT, OPT_OUT, OPT_TRUTH, OPT_HEADER
};

static const struct option own_options[] = {
	{"fingers", required_argument, NULL, OPT_FINGERS},
	{"first", required_argument, NULL, OPT_FIRST},
	{"impression", required_argument, NULL, OPT_IMPRESSION},
	{"impressions", required_argument, NULL, OPT_IMPRESSIONS},
	{"count", required_argument, NULL, OPT_COUNT},
	{"gallery-fingers", required_argument, NULL, OPT_GALLERY_FINGERS},
	{"mated-fraction", required_argument, NULL, OPT_MATED},
	{"first-id", required_argument, NULL, OPT_FIRST_ID},
	{"impostors", required_argument, NULL, OPT_IMPOSTORS},
	{"finger", required_argument, NULL, OPT_FINGER},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"out", required_argument, NULL, OPT_OUT},
	{"truth", required_argument, NULL, OPT_TRUTH},
	{"header", no_argument, NULL, OPT_HEADER},
	{NULL, 0, NULL, 0}
};

/* Parse the options after the subcommand into o. */
static void
parse_options(int argc, char **argv, options *o)
{
	struct option *lo;
	int			c;
	const char *name;

	memset(o, 0, sizeof(*o));
	lo = cli_begin(argc, argv, own_options, &o->sp);
	o->format = FMT_CSV;
	o->profile = mcc_profile_by_id(MCC_PROFILE_DEFAULT);
	o->first = 1;
	o->first_id = 1;
	o->mated_fraction = 0.5;
	while ((c = cli_next_option(argc, argv, lo, &o->sp, &o->profile, usage, &name)) != -1)
	{
		switch (c)
		{
			case OPT_FINGERS:
			case OPT_GALLERY_FINGERS:
				o->fingers = cli_u64(name, optarg, (uint64_t) INT32_MAX);
				break;
			case OPT_FIRST:
				o->first = cli_u64(name, optarg, MAX_ID);
				break;
			case OPT_IMPRESSION:
				o->impression = cli_u64(name, optarg, MAX_ID);
				o->have_impression = 1;
				break;
			case OPT_IMPRESSIONS:
				o->impressions = cli_u64(name, optarg, 1000000);
				break;
			case OPT_COUNT:
				o->count = cli_u64(name, optarg, (uint64_t) INT32_MAX);
				break;
			case OPT_MATED:
				o->mated_fraction = cli_double(name, optarg);
				if (o->mated_fraction < 0 || o->mated_fraction > 1)
					cli_die("--mated-fraction must be between 0 and 1");
				break;
			case OPT_FIRST_ID:
				o->first_id = cli_u64(name, optarg, MAX_ID);
				break;
			case OPT_IMPOSTORS:
				if (strcmp(optarg, "fvc") == 0)
					o->impostors_all = 0;
				else if (strcmp(optarg, "all") == 0)
					o->impostors_all = 1;
				else
					cli_die("--impostors must be fvc or all, not \"%s\"", optarg);
				break;
			case OPT_FINGER:
				o->finger = cli_u64(name, optarg, UINT64_MAX);
				break;
			case OPT_FORMAT:
				{
					int			found = -1;

					for (int f = 0; f < FMT_COUNT; f++)
						if (strcmp(optarg, format_names[f]) == 0)
							found = f;
					if (found < 0)
						cli_die("unknown format \"%s\" (csv, jsonl, json, iso, ansi, xyt)", optarg);
					o->format = (out_format) found;
					o->format_set = 1;
				}
				break;
			case OPT_OUT:
				o->out = optarg;
				break;
			case OPT_TRUTH:
				o->truth = optarg;
				break;
			case OPT_HEADER:
				o->header = 1;
				break;
		}
	}
	cli_end(argc, argv, &o->sp);
}

/* mkdir -p: create a folder and its missing parents. */
static void
make_dirs(const char *path)
{
	char		buf[4096];
	size_t		n = strlen(path);
	struct stat st;

	if (n == 0 || n >= sizeof(buf))
		cli_die("invalid folder name \"%s\"", path);
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++)
	{
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			cli_die("could not create folder \"%s\": %s", buf, strerror(errno));
		buf[i] = path[i];
	}
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		cli_die("\"%s\" is not a folder", path);
}

/*
 * Open the sink. csv and jsonl go to one stream (a file or stdout); json,
 * iso, ansi and xyt go to a folder, one file per template. single: one
 * template (master, impression) to a file or stdout, whatever the format.
 */
static void
sink_open(sink *s, const options *o, const char *subcommand, int single)
{
	memset(s, 0, sizeof(*s));
	s->format = o->format;
	s->profile = o->profile;
	s->cap = 1 << 16;
	s->buf = malloc(s->cap);
	if (!s->buf)
		cli_die("out of memory");
	if (!single && o->format != FMT_CSV && o->format != FMT_JSONL)
	{
		if (!o->out || strcmp(o->out, "-") == 0)
			cli_die("%s: --format %s needs --out FOLDER", subcommand, format_names[o->format]);
		make_dirs(o->out);
		s->dir = o->out;
		return;
	}
	if (!o->out || strcmp(o->out, "-") == 0)
		s->csv = stdout;
	else if (!(s->csv = fopen(o->out, "wb")))
		cli_die("could not open \"%s\" for writing: %s", o->out, strerror(errno));
	if (o->header && o->format == FMT_CSV)
		fputs("id,finger,impression,template\n", s->csv);
}

/* Grow the sink's buffer to hold n bytes. */
static void
sink_reserve(sink *s, size_t n)
{
	if (n <= s->cap)
		return;
	s->cap = n;
	s->buf = realloc(s->buf, s->cap);
	if (!s->buf)
		cli_die("out of memory");
}

/* Write one whole file. */
static void
write_file(const char *path, const void *data, size_t len)
{
	FILE	   *f = fopen(path, "wb");

	if (!f)
		cli_die("could not open \"%s\" for writing: %s", path, strerror(errno));
	if (fwrite(data, 1, len, f) != len || fclose(f) != 0)
		cli_die("could not write \"%s\": %s", path, strerror(errno));
}

/* The template's JSON text in s->buf; returns its length. */
static size_t
json_text(sink *s, const mcc_minutiae *ms)
{
	size_t		n = mcc_json_write(ms, s->profile, s->buf, s->cap);

	if (n + 1 > s->cap)
	{
		sink_reserve(s, n + 1);
		n = mcc_json_write(ms, s->profile, s->buf, s->cap);
	}
	return n;
}

/* Encode ms in the sink's format into s->buf; returns the length. */
static size_t
encode(sink *s, const mcc_minutiae *ms)
{
	size_t		n;
	mcc_error	err;

	switch (s->format)
	{
		case FMT_ISO:
		case FMT_ANSI:
		case FMT_ISO2011:
		case FMT_ANSI2009:
			{
				mcc_record_format rf = record_formats[s->format];

				if (mcc_iso_write(ms, rf, NULL, &n, &err) != MCC_OK)
					cli_die("%s", err.message);
				sink_reserve(s, n);
				if (mcc_iso_write(ms, rf, (uint8_t *) s->buf, &n, &err) != MCC_OK)
					cli_die("%s", err.message);
				return n;
			}
		case FMT_XYT:
			n = mcc_xyt_write(ms, s->buf, s->cap);
			if (n + 1 > s->cap)
			{
				sink_reserve(s, n + 1);
				n = mcc_xyt_write(ms, s->buf, s->cap);
			}
			return n;
		default:
			/* JSON text, newline-terminated */
			n = json_text(s, ms);
			sink_reserve(s, n + 2);
			s->buf[n++] = '\n';
			return n;
	}
}

/* Emit one template; name is the file stem for the one-file-per-template formats. */
static void
sink_put(sink *s, uint64_t id, uint64_t finger, uint64_t impression,
		 const char *name, const mcc_minutiae *ms)
{
	char		path[4096];
	size_t		n;

	if (s->format == FMT_CSV)
	{
		n = json_text(s, ms);
		fprintf(s->csv, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",\"", id, finger, impression);
		/* CSV quoting: the JSON's double quotes are doubled */
		for (size_t i = 0; i < n; i++)
		{
			if (s->buf[i] == '"')
				fputc('"', s->csv);
			fputc(s->buf[i], s->csv);
		}
		fputs("\"\n", s->csv);
	}
	else if (s->dir)
	{
		n = encode(s, ms);
		if ((size_t) snprintf(path, sizeof(path), "%s/%s.%s", s->dir, name,
							  format_exts[s->format]) >= sizeof(path))
			cli_die("output path too long");
		write_file(path, s->buf, n);
	}
	else
	{
		/* one stream: JSON lines, or the one template of master/impression */
		n = encode(s, ms);
		fwrite(s->buf, 1, n, s->csv);
	}
	s->written++;
}

/* Flush and close the sink. */
static void
sink_close(sink *s)
{
	if (s->csv && (fflush(s->csv) != 0 || ferror(s->csv) ||
				   (s->csv != stdout && fclose(s->csv) != 0)))
		cli_die("could not write the output: %s", strerror(errno));
	free(s->buf);
}

/* Open the truth file (required by probes and pairs). */
static FILE *
truth_open(const options *o, const char *subcommand, const char *columns)
{
	FILE	   *f;

	if (!o->truth)
		cli_die("%s needs --truth FILE", subcommand);
	if (!(f = fopen(o->truth, "w")))
		cli_die("could not open \"%s\" for writing: %s", o->truth, strerror(errno));
	if (o->header)
		fprintf(f, "%s\n", columns);
	return f;
}

/* Close the truth file, checking for write errors. */
static void
truth_close(FILE *f)
{
	if (fflush(f) != 0 || ferror(f) || fclose(f) != 0)
		cli_die("could not write the truth file: %s", strerror(errno));
}

/* mccgen gallery */
static void
cmd_gallery(const options *o)
{
	static mcc_minutiae master,
				imp;
	sink		s;
	char		name[64];

	if (o->fingers == 0)
		cli_die("gallery needs --fingers N (at least 1)");
	if (o->first + o->fingers > MAX_ID)
		cli_die("finger numbers must stay below 2^62");
	sink_open(&s, o, "gallery", 0);
	for (uint64_t k = 0; k < o->fingers; k++)
	{
		uint64_t	finger = o->first + k;

		mcc_synth_master(&o->sp, finger, &master);
		mcc_synth_impression(&o->sp, &master, finger, o->impression, &imp);
		snprintf(name, sizeof(name), "%" PRIu64 "_%" PRIu64, finger, o->impression);
		sink_put(&s, finger, finger, o->impression, name, &imp);
	}
	sink_close(&s);
}

/* mccgen probes */
static void
cmd_probes(const options *o)
{
	static mcc_minutiae master,
				imp;
	uint64_t	n_mated,
				next_mate = 0;
	uint32_t   *fingers = NULL;
	uint8_t    *mated;
	mcc_rng		r;
	sink		s;
	FILE	   *truth;
	char		name[64];

	if (o->count == 0)
		cli_die("probes needs --count P (at least 1)");
	if (o->fingers == 0)
		cli_die("probes needs --gallery-fingers N (at least 1)");
	if (o->first + o->fingers + o->count > MAX_ID || o->first_id + o->count > MAX_ID ||
		o->impression + o->count + 1 > MAX_ID)
		cli_die("finger, impression and probe numbers must stay below 2^62");
	n_mated = (uint64_t) floor(o->count * o->mated_fraction + 0.5);
	mated = calloc(o->count, 1);
	if (!mated)
		cli_die("out of memory");
	mcc_rng_seed(&r, mcc_rng_key(o->sp.seed, STREAM_PROBES, o->first, o->fingers));

	/* which probes are mated: a random n_mated-subset (Fisher-Yates on flags) */
	for (uint64_t p = 0; p < n_mated; p++)
		mated[p] = 1;
	for (uint64_t p = o->count - 1; p > 0; p--)
	{
		uint64_t	j = mcc_rng_below(&r, p + 1);
		uint8_t		t = mated[p];

		mated[p] = mated[j];
		mated[j] = t;
	}
	/* their fingers: distinct while the gallery has enough, then repeated */
	if (n_mated > 0)
	{
		fingers = malloc(o->fingers * sizeof(uint32_t));
		if (!fingers)
			cli_die("out of memory");
		for (uint64_t k = 0; k < o->fingers; k++)
			fingers[k] = (uint32_t) k;
	}

	sink_open(&s, o, "probes", 0);
	truth = truth_open(o, "probes", "probe_id,finger,impression,mate_id");
	for (uint64_t p = 0; p < o->count; p++)
	{
		uint64_t	id = o->first_id + p;
		uint64_t	finger,
					impression;

		if (mated[p])
		{
			/* partial Fisher-Yates: draw without replacement, restart when used up */
			uint64_t	left = o->fingers - next_mate % o->fingers;
			uint64_t	j = next_mate % o->fingers + mcc_rng_below(&r, left);
			uint64_t	i = next_mate % o->fingers;
			uint32_t	t = fingers[i];

			fingers[i] = fingers[j];
			fingers[j] = t;
			finger = o->first + fingers[i];
			next_mate++;
			impression = o->impression + 1 + p;
			fprintf(truth, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
					id, finger, impression, finger);
		}
		else
		{
			finger = o->first + o->fingers + p;
			impression = o->impression + 1 + p;
			fprintf(truth, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",\n", id, finger, impression);
		}
		mcc_synth_master(&o->sp, finger, &master);
		mcc_synth_impression(&o->sp, &master, finger, impression, &imp);
		snprintf(name, sizeof(name), "%" PRIu64, id);
		sink_put(&s, id, finger, impression, name, &imp);
	}
	sink_close(&s);
	truth_close(truth);
	free(mated);
	free(fingers);
}

/* mccgen pairs */
static void
cmd_pairs(const options *o)
{
	static mcc_minutiae master,
				imp;
	sink		s;
	FILE	   *truth;
	char		name[64];
	uint64_t	id = 1;

	if (o->fingers == 0 || o->impressions == 0)
		cli_die("pairs needs --fingers N and --impressions K (at least 1)");
	if (o->first + o->fingers > MAX_ID || o->fingers > MAX_ID / o->impressions)
		cli_die("finger numbers and ids must stay below 2^62");
	sink_open(&s, o, "pairs", 0);
	truth = truth_open(o, "pairs", "finger_a,impression_a,finger_b,impression_b,genuine");
	for (uint64_t k = 0; k < o->fingers; k++)
	{
		uint64_t	finger = o->first + k;

		mcc_synth_master(&o->sp, finger, &master);
		for (uint64_t i = 1; i <= o->impressions; i++)
		{
			mcc_synth_impression(&o->sp, &master, finger, i, &imp);
			snprintf(name, sizeof(name), "%" PRIu64 "_%" PRIu64, finger, i);
			sink_put(&s, id++, finger, i, name, &imp);
		}
		/* genuine: every pair of impressions of this finger */
		for (uint64_t i = 1; i <= o->impressions; i++)
			for (uint64_t j = i + 1; j <= o->impressions; j++)
				fprintf(truth, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",1\n",
						finger, i, finger, j);
	}
	/* impostors: FVC protocol (first impressions) or every cross-finger pair */
	for (uint64_t a = 0; a < o->fingers; a++)
		for (uint64_t b = a + 1; b < o->fingers; b++)
		{
			uint64_t	last = o->impostors_all ? o->impressions : 1;

			for (uint64_t i = 1; i <= last; i++)
				for (uint64_t j = 1; j <= last; j++)
					fprintf(truth, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",0\n",
							o->first + a, i, o->first + b, j);
		}
	sink_close(&s);
	truth_close(truth);
}

/* mccgen master / impression: one template to a file or stdout (default JSON) */
static void
cmd_one(const options *o, int impression)
{
	static mcc_minutiae master,
				imp;
	sink		s;
	options		oo = *o;

	if (impression && !o->have_impression)
		cli_die("impression needs --impression I");
	if (oo.format == FMT_CSV && !o->format_set)
		oo.format = FMT_JSON;
	if (record_formats[oo.format] != MCC_REC_UNKNOWN && (!oo.out || strcmp(oo.out, "-") == 0))
		cli_die("--format %s writes binary: give --out FILE", format_names[oo.format]);
	mcc_synth_master(&o->sp, o->finger, &master);
	if (impression)
		mcc_synth_impression(&o->sp, &master, o->finger, o->impression, &imp);
	sink_open(&s, &oo, impression ? "impression" : "master", 1);
	sink_put(&s, o->finger, o->finger, impression ? o->impression : 0, NULL,
			 impression ? &imp : &master);
	sink_close(&s);
}

int
main(int argc, char **argv)
{
	options		o;
	const char *cmd;

	cli_progname = "mccgen";
	if (argc < 2)
	{
		usage(stderr);
		return 1;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
	{
		usage(stdout);
		return 0;
	}
	parse_options(argc - 1, argv + 1, &o);
	if (strcmp(cmd, "gallery") == 0)
		cmd_gallery(&o);
	else if (strcmp(cmd, "probes") == 0)
		cmd_probes(&o);
	else if (strcmp(cmd, "pairs") == 0)
		cmd_pairs(&o);
	else if (strcmp(cmd, "master") == 0)
		cmd_one(&o, 0);
	else if (strcmp(cmd, "impression") == 0)
		cmd_one(&o, 1);
	else
		cli_die("unknown subcommand \"%s\" (gallery, probes, pairs, master, impression)", cmd);
	return 0;
}
