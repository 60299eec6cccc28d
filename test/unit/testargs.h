/*
 * testargs.h: the command-line parser of the benchmarks and tools of test/.
 * A program lists its options in a table (name, kind, where the value goes,
 * the value's name in the usage line) ended by an entry without a name, and
 * targ_parse walks argv through it: the parsing and the usage line come from
 * the same table and cannot drift apart. Numbers convert as atoi/atol/atof
 * (strtoull for 64 bits); a list takes comma-separated numbers, at most max.
 * An unknown option or a missing value prints the usage line and exits 2;
 * checks of the values themselves stay with the program.
 */
#ifndef MCC_TESTARGS_H
#define MCC_TESTARGS_H

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
	TARG_SET					/* no value: *(int *) dst = set */
} targ_kind;

typedef struct targ_opt
{
	const char *name;			/* "--threads" or "-n"; NULL ends the table */
	targ_kind	kind;
	void	   *dst;
	const char *meta;			/* the value in the usage line ("N") */
	int		   *n;				/* lists: how many were given */
	int			max;			/* lists: room in dst */
	int			set;			/* TARG_SET: the value stored */
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
#define OPT_END {.name = NULL}

/* Print "usage: prog [--name META] ..." from the table and exit 2. */
static inline void
targ_usage(const char *prog, const targ_opt *opts)
{
	fprintf(stderr, "usage: %s", prog);
	for (const targ_opt *o = opts; o->name; o++)
	{
		if (o->kind == TARG_SET)
			fprintf(stderr, " [%s]", o->name);
		else
			fprintf(stderr, " [%s %s]", o->name, o->meta ? o->meta : "V");
	}
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
	}
}

/* Walk argv[1..] through the table; usage and exit 2 on what it lacks. */
static inline void
targ_parse(int argc, char **argv, const targ_opt *opts)
{
	for (int i = 1; i < argc; i++)
	{
		const targ_opt *o = opts;

		while (o->name && strcmp(o->name, argv[i]) != 0)
			o++;
		if (o->name == NULL || (o->kind != TARG_SET && i + 1 >= argc))
			targ_usage(argv[0], opts);
		targ_store(o, o->kind == TARG_SET ? NULL : argv[++i]);
	}
}

#endif							/* MCC_TESTARGS_H */
