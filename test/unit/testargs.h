/*
 * testargs.h: the command-line parser of the benchmarks and tools of test/.
 * A program lists its options in a table (name, kind, where the value goes,
 * the value's name in the usage line) ended by an entry without a name, and
 * targ_parse walks argv through it: the parsing and the usage line come from
 * the same table and cannot drift apart. Numbers convert as atoi/atol/atof
 * (strtoull for 64 bits); a list takes comma-separated numbers, at most max;
 * a value of the program's own form (WxH, a name looked up in a table) goes
 * to the program's function (OPT_FN), which checks it where it converts it;
 * a table may end with the program's operands (OPT_OPERANDS: file names).
 * An unknown option or a missing value prints the usage line and exits 2;
 * checks of the values themselves stay with the program.
 */
#ifndef MCC_TESTARGS_H
#define MCC_TESTARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum targ_kind
{
	TARG_INT,					/* int */
	TARG_LONG,					/* long */
	TARG_U32,					/* uint32_t (from a long) */
	TARG_U64,					/* uint64_t */
	TARG_DOUBLE,				/* double */
	TARG_STR,					/* const char *: the argument itself */
	TARG_INTS,					/* int list, its length into *n */
	TARG_DOUBLES,				/* double list, its length into *n */
	TARG_SET,					/* no value: *(int *) dst = set */
	TARG_BOOL,					/* no value: *(bool *) dst = true */
	TARG_FN						/* fn(value, dst): the program converts */
} targ_kind;

typedef void (*targ_fn) (const char *v, void *dst);

typedef struct targ_opt
{
	const char *name;			/* "--threads" or "-n"; NULL ends the table */
	targ_kind	kind;
	void	   *dst;
	const char *meta;			/* the value in the usage line ("N") */
	int		   *n;				/* lists: how many were given */
	int			max;			/* lists: room in dst */
	int			set;			/* TARG_SET: the value stored */
	targ_fn		fn;				/* TARG_FN: the conversion */
} targ_opt;

/*
 * The table's rows, one macro a kind. The destination goes through a
 * conditional with a null pointer of the kind's type, so that a variable of
 * another type is a compile-time warning, not a silent overwrite.
 */
#define TARG_PTR(p, T) ((void *) (1 ? (p) : (T *) NULL))
#define OPT_INT(nm, p, mt) {.name = (nm), .kind = TARG_INT, .dst = TARG_PTR(p, int), .meta = (mt)}
#define OPT_LONG(nm, p, mt) {.name = (nm), .kind = TARG_LONG, .dst = TARG_PTR(p, long), .meta = (mt)}
#define OPT_U32(nm, p, mt) {.name = (nm), .kind = TARG_U32, .dst = TARG_PTR(p, uint32_t), .meta = (mt)}
#define OPT_U64(nm, p, mt) {.name = (nm), .kind = TARG_U64, .dst = TARG_PTR(p, uint64_t), .meta = (mt)}
#define OPT_DOUBLE(nm, p, mt) {.name = (nm), .kind = TARG_DOUBLE, .dst = TARG_PTR(p, double), .meta = (mt)}
#define OPT_STR(nm, p, mt) {.name = (nm), .kind = TARG_STR, .dst = TARG_PTR(p, const char *), .meta = (mt)}
#define OPT_INTS(nm, a, cnt, mt) {.name = (nm), .kind = TARG_INTS, .dst = TARG_PTR(a, int), .meta = (mt), \
	.n = (cnt), .max = (int) (sizeof(a) / sizeof((a)[0]))}
#define OPT_DOUBLES(nm, a, cnt, mt) {.name = (nm), .kind = TARG_DOUBLES, .dst = TARG_PTR(a, double), \
	.meta = (mt), .n = (cnt), .max = (int) (sizeof(a) / sizeof((a)[0]))}
#define OPT_SET(nm, p, v) {.name = (nm), .kind = TARG_SET, .dst = TARG_PTR(p, int), .set = (v)}
#define OPT_BOOL(nm, p) {.name = (nm), .kind = TARG_BOOL, .dst = TARG_PTR(p, bool)}
#define OPT_FN(nm, f, p, mt) {.name = (nm), .kind = TARG_FN, .dst = (p), .meta = (mt), .fn = (f)}
#define OPT_END {.name = NULL}
/*
 * The end of the table of a program that takes operands (arguments not
 * starting with '-', anywhere among the options): into the array a, which
 * has room for argc of them, their count into *cnt.
 */
#define OPT_OPERANDS(a, cnt, mt) {.name = NULL, .kind = TARG_STR, .dst = TARG_PTR(a, const char *), \
	.n = (cnt), .meta = (mt)}

/* Does the option stand alone (no value after it)? */
static inline bool
targ_is_flag(const targ_opt *o)
{
	return o->kind == TARG_SET || o->kind == TARG_BOOL;
}

/* Print "usage: prog [--name META] ... [OPERANDS]" from the table and exit 2. */
static inline void
targ_usage(const char *prog, const targ_opt *opts)
{
	const targ_opt *o;

	fprintf(stderr, "usage: %s", prog);
	for (o = opts; o->name; o++)
	{
		if (targ_is_flag(o))
			fprintf(stderr, " [%s]", o->name);
		else
			fprintf(stderr, " [%s %s]", o->name, o->meta ? o->meta : "V");
	}
	if (o->dst)
		fprintf(stderr, " %s", o->meta);
	fputc('\n', stderr);
	exit(2);
}

/* Comma-separated numbers into an int or double array; returns the count. */
static inline int
targ_list(const char *s, void *dst, int max, int as_double)
{
	int			n = 0;

	while (*s && n < max)
	{
		if (as_double)
			((double *) dst)[n++] = atof(s);
		else
			((int *) dst)[n++] = atoi(s);
		s = strchr(s, ',');
		if (s == NULL)
			break;
		s++;
	}
	return n;
}

/* Store the option's value v (NULL for TARG_SET). */
static inline void
targ_store(const targ_opt *o, const char *v)
{
	switch (o->kind)
	{
		case TARG_INT:
			*(int *) o->dst = atoi(v);
			break;
		case TARG_LONG:
			*(long *) o->dst = atol(v);
			break;
		case TARG_U32:
			*(uint32_t *) o->dst = (uint32_t) atol(v);
			break;
		case TARG_U64:
			*(uint64_t *) o->dst = strtoull(v, NULL, 10);
			break;
		case TARG_DOUBLE:
			*(double *) o->dst = atof(v);
			break;
		case TARG_STR:
			*(const char **) o->dst = v;
			break;
		case TARG_INTS:
		case TARG_DOUBLES:
			*o->n = targ_list(v, o->dst, o->max, o->kind == TARG_DOUBLES);
			break;
		case TARG_SET:
			*(int *) o->dst = o->set;
			break;
		case TARG_BOOL:
			*(bool *) o->dst = true;
			break;
		case TARG_FN:
			o->fn(v, o->dst);
			break;
	}
}

/*
 * Walk argv[first..] through the table (first is 2 after a mode word, as
 * "mcceval fvc"); usage and exit 2 on what it lacks.
 */
static inline void
targ_parse_from(int argc, char **argv, int first, const targ_opt *opts)
{
	for (int i = first; i < argc; i++)
	{
		const targ_opt *o = opts;

		while (o->name && strcmp(o->name, argv[i]) != 0)
			o++;
		if (o->name == NULL && o->dst != NULL && argv[i][0] != '-')
		{
			((const char **) o->dst)[(*o->n)++] = argv[i];
			continue;
		}
		if (o->name == NULL || (!targ_is_flag(o) && i + 1 >= argc))
			targ_usage(argv[0], opts);
		targ_store(o, targ_is_flag(o) ? NULL : argv[++i]);
	}
}

/* Walk argv[1..] through the table. */
static inline void
targ_parse(int argc, char **argv, const targ_opt *opts)
{
	targ_parse_from(argc, argv, 1, opts);
}

#endif							/* MCC_TESTARGS_H */
