/*
 * record_file.h: what the evaluation tools (mcceval, mccpersons,
 * aligneval) and the unit tests share about minutiae record files: the
 * FINGER_IMPRESSION.ext names of a directory, one file read into minutiae
 * by its extension (xyt, json, else an ISO/ANSI record), and the FVC2002
 * set-B minutiae of the shared data in any of its encodings.
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
 * Finger f, impression i of FVC2002 database db in one encoding of the
 * shared data under data (tfvc_minutiae_path's folder and extension) read
 * into ms by rf_read: an xyt file in the database's frame at 500 dpi.
 */
static inline mcc_status
rf_read_print(const char *data, const char *encoding, const tfvc_db *db, int f, int i,
			  const char *ext, mcc_minutiae *ms, mcc_error *err)
{
	char		path[1024];

	tfvc_minutiae_path(path, sizeof(path), data, encoding, db, f, i, ext);
	return rf_read(path, ext, db->width, db->height, 500, ms, err);
}

/*
 * Finger 101 + f, impression i + 1 of FVC2002 database db (0..3) as NBIS
 * mindtct extracted it, under data (the shared data); 1 on success.
 */
static inline int
rf_read_fvc2002(const char *data, int db, int f, int i, mcc_minutiae *ms)
{
	mcc_error	err;

	return rf_read_print(data, "nbis-mindtct-xyt", &tfvc_dbs[db], 101 + f, i + 1, "xyt", ms, &err) == MCC_OK;
}

#endif
