/*
 * testfvc.h: FVC2002's set B as ../shared/data holds it (its README.md), for
 * the tests, checks and tools that read it: the four databases' folders,
 * image sizes and resolutions, the 320 prints (fingers 101-110,
 * impressions 1-8 of each database) in one order, and the names of a
 * print's files (and its minutiae files read).
 */
#ifndef MCC_TESTFVC_H
#define MCC_TESTFVC_H

#include <stddef.h>
#include <stdio.h>

#include "testfile.h"

/* One database of set B: its folder, its images' size and resolution. */
typedef struct tfvc_db
{
	const char *db;
	int			width;
	int			height;
	int			dpi;
} tfvc_db;

#define TFVC_DBS 4
#define TFVC_FINGERS 10			/* 101 .. 110 */
#define TFVC_IMPRESSIONS 8		/* 1 .. 8 */
#define TFVC_PRINTS (TFVC_DBS * TFVC_FINGERS * TFVC_IMPRESSIONS)

static const tfvc_db tfvc_dbs[TFVC_DBS] = {
	{"DB1_B", 388, 374, 500}, {"DB2_B", 296, 560, 569}, {"DB3_B", 300, 300, 500}, {"DB4_B", 288, 384, 500}
};

/* A print of set B: its database (index d into tfvc_dbs), finger and impression. */
typedef struct tfvc_print
{
	const tfvc_db *db;
	int			d;
	int			finger;
	int			imp;
} tfvc_print;

/* Print i (0 .. TFVC_PRINTS - 1): by database, then finger, then impression. */
static inline tfvc_print
tfvc_print_at(int i)
{
	tfvc_print	p;

	p.d = i / (TFVC_FINGERS * TFVC_IMPRESSIONS);
	p.db = &tfvc_dbs[p.d];
	p.finger = 101 + i / TFVC_IMPRESSIONS % TFVC_FINGERS;
	p.imp = 1 + i % TFVC_IMPRESSIONS;
	return p;
}

/* The image of finger f, impression i of db under root: ROOT/fvc2002/images/DB/F_I.png. */
static inline void
tfvc_image_path(char *buf, size_t size, const char *root, const tfvc_db *db, int f, int i)
{
	snprintf(buf, size, "%s/fvc2002/images/%s/%d_%d.png", root, db->db, f, i);
}

/*
 * The minutiae of finger f, impression i of db in one encoding under root:
 * ROOT/fvc2002/minutiae/ENCODING/DB/F_I.EXT (encoding: the folder, as
 * "nbis-mindtct-xyt"; ext: "xyt").
 */
static inline void
tfvc_minutiae_path(char *buf, size_t size, const char *root, const char *encoding,
				   const tfvc_db *db, int f, int i, const char *ext)
{
	snprintf(buf, size, "%s/fvc2002/minutiae/%s/%s/%d_%d.%s", root, encoding, db->db, f, i, ext);
}

/*
 * That minutiae file read whole (unit_read_file: malloc'ed, NUL-terminated,
 * its size in *len), or NULL where it is absent or unreadable.
 */
static inline unsigned char *
tfvc_read_minutiae(const char *root, const char *encoding, const tfvc_db *db, int f, int i,
				   const char *ext, size_t *len)
{
	char		path[1024];

	tfvc_minutiae_path(path, sizeof(path), root, encoding, db, f, i, ext);
	return unit_read_file(path, len);
}

#endif							/* MCC_TESTFVC_H */
