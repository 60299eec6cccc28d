/*
 * testfile.h: a whole file read into memory, for the unit tests (unit.h
 * includes it) and the tools of test/, which read records and images.
 */
#ifndef MCC_TESTFILE_H
#define MCC_TESTFILE_H

#include <stdio.h>
#include <stdlib.h>

/*
 * Read a whole file into a malloc'ed buffer, with a NUL byte after its
 * len bytes (text parsers may rely on it); NULL on failure.
 */
static inline unsigned char *
unit_read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	unsigned char *buf;
	long		n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t) n + 1 : 1);
	if (buf && n > 0 && fread(buf, 1, (size_t) n, f) != (size_t) n)
	{
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
	{
		buf[n > 0 ? n : 0] = 0;
		*len = n > 0 ? (size_t) n : 0;
	}
	return buf;
}

#endif							/* MCC_TESTFILE_H */
