/*
 * record_file.h: what the evaluation tools (mcceval, mccpersons,
 * aligneval) and test_align share about minutiae record files: the
 * FINGER_IMPRESSION.ext names of a directory, one file read into minutiae
 * by its extension (xyt, json, else an ISO/ANSI record), and the FVC2002
 * set-B minutiae of the shared data.
 */
#ifndef MCC_RECORD_FILE_H
#define MCC_RECORD_FILE_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcc_error.h"
#include "mcc_iso.h"
#include "mcc_json.h"
#include "mcc_xyt.h"
#include "../unit/testfile.h"
#include "../unit/testfvc.h"

/*
 * Whether name is FINGER_IMPRESSION.EXT, with EXT = ext unless ext is NULL;
 * if so, its finger, impression and '.' (the extension follows it).
 */
static inline int
rf_parse_name(const char *name, const char *ext, long *finger, int *imp, const char **dot)
{
	int			used = 0;

	*dot = strrchr(name, '.');
	return *dot != NULL && sscanf(name, "%ld_%d%n", finger, imp, &used) == 2 &&
		name + used == *dot && (ext == NULL || strcmp(*dot + 1, ext) == 0);
}

/*
 * The next FINGER_IMPRESSION.EXT entry of an open directory (as
 * rf_parse_name takes it), NULL at the end.
 */
static inline struct dirent *
rf_next(DIR *d, const char *ext, long *finger, int *imp, const char **dot)
{
	struct dirent *e;

	while ((e = readdir(d)) != NULL)
		if (rf_parse_name(e->d_name, ext, finger, imp, dot))
			return e;
	return NULL;
}

/*
 * Room for element n of the array *p of elements of size bytes (*cap of
 * them, doubled from first when full); false if out of memory.
 */
static inline int
rf_grow(void **p, int n, int *cap, size_t size, int first)
{
	void	   *q;

	if (n < *cap)
		return 1;
	q = realloc(*p, size * (size_t) (*cap ? 2 * *cap : first));
	if (q == NULL)
		return 0;
	*p = q;
	*cap = *cap ? 2 * *cap : first;
	return 1;
}

/*
 * Read the record file path into ms by its extension ext; an xyt file is in
 * a frame of w x h pixels at dpi. MCC_OK, or the reader's status with err
 * (MCC_ERR_VALUE if the file cannot be read).
 */
static inline mcc_status
rf_read(const char *path, const char *ext, int w, int h, int dpi, mcc_minutiae *ms,
		mcc_error *err)
{
	size_t		len;
	uint8_t    *buf = unit_read_file(path, &len);
	mcc_status	st;

	if (buf == NULL)
		return mcc_error_set(err, MCC_ERR_VALUE, "cannot open: %s", strerror(errno));
	if (strcmp(ext, "xyt") == 0)
		st = mcc_xyt_read((const char *) buf, len, w, h, dpi, ms, err);
	else if (strcmp(ext, "json") == 0)
	{
		const mcc_profile *p;

		st = mcc_json_read((const char *) buf, len, ms, &p, err);
	}
	else
		st = mcc_iso_read(buf, len, 1, ms, NULL, err);
	free(buf);
	return st;
}

/*
 * Finger 101 + f, impression i + 1 of FVC2002 database db (0..3) as NBIS
 * mindtct extracted it, under data (the shared data); 1 on success.
 */
static inline int
rf_read_fvc2002(const char *data, int db, int f, int i, mcc_minutiae *ms)
{
	char		path[1024];
	mcc_error	err;

	tfvc_minutiae_path(path, sizeof(path), data, "nbis-mindtct-xyt", &tfvc_dbs[db], 101 + f, i + 1, "xyt");
	return rf_read(path, "xyt", tfvc_dbs[db].width, tfvc_dbs[db].height, 500, ms, &err) == MCC_OK;
}

#endif
