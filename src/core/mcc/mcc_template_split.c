/*
 * mcc_template_split.c: a stored template read where its pieces lie
 * (mcc_template_split.h).
 */
#include <string.h>

#include "mcc_template_split.h"

/* Where a blob offset lies: its piece, and the byte there. */
typedef struct split_pieces
{
	const uint8_t *const *piece;
	size_t		piece_size;
} split_pieces;

static inline const uint8_t *
byte_at(const split_pieces *p, size_t off)
{
	return p->piece[(off - 4) / p->piece_size] + (off - 4) % p->piece_size;
}

/* Whether bytes [off, off + len) lie in one piece (len > 0). */
static inline int
one_piece(const split_pieces *p, size_t off, size_t len)
{
	return (off - 4) / p->piece_size == (off + len - 1 - 4) / p->piece_size;
}

/* Copy bytes [off, off + len) of the blob, across pieces, to dst. */
static void
gather(const split_pieces *p, size_t off, size_t len, uint8_t *dst)
{
	while (len > 0)
	{
		size_t		in = p->piece_size - (off - 4) % p->piece_size;
		size_t		n = in < len ? in : len;

		memcpy(dst, byte_at(p, off), n);
		dst += n;
		off += n;
		len -= n;
	}
}

/* The bytes [off, off + len) in place when one piece holds them, else copied to buf. */
static const uint8_t *
span(const split_pieces *p, size_t off, size_t len, uint8_t *buf)
{
	if (len == 0 || one_piece(p, off, len))
		return len == 0 ? buf : byte_at(p, off);
	gather(p, off, len, buf);
	return buf;
}

/*
 * The cylinders' runs: those that a piece holds whole from cylinder c on
 * are one run, a cylinder cut by a boundary is copied into s->across and
 * is a run of its own. (A division per run, not per cylinder: a few
 * divisions per cylinder took a tenth of the scan.)
 */
static void
cut_runs(mcc_template_split *s, const split_pieces *p, size_t boff)
{
	size_t		cb = (size_t) s->v.words * 8;
	uint32_t	n_cyl = (uint32_t) s->v.n_cyl;
	uint32_t	c = 0;
	int			n_across = 0;

	s->n_runs = 0;
	while (c < n_cyl)
	{
		size_t		rel = boff + (size_t) c * cb - 4;
		size_t		in = rel % p->piece_size;
		size_t		whole = (p->piece_size - in) / cb;
		mcc_cyl_run *run = &s->runs[s->n_runs++];

		if (whole > 0)
		{
			run->bits = p->piece[rel / p->piece_size] + in;
			run->n = whole < n_cyl - c ? (uint32_t) whole : n_cyl - c;
		}
		else
		{
			gather(p, rel + 4, cb, (uint8_t *) s->across[n_across]);
			run->bits = (const uint8_t *) s->across[n_across++];
			run->n = 1;
		}
		c += run->n;
	}
}

mcc_status
mcc_template_open_split(const uint8_t *const *piece, int n_pieces, size_t piece_size,
						size_t size, mcc_template_split *s, mcc_error *err)
{
	split_pieces p = {piece, piece_size};
	size_t		head = size < MCC_TEMPLATE_HDRSZ ? size : MCC_TEMPLATE_HDRSZ;
	size_t		boff;
	size_t		moff;
	mcc_status	st;

	if (size <= 4 || piece_size == 0 || n_pieces < 1 || n_pieces > MCC_SPLIT_MAX_PIECES ||
		(size - 4 - 1) / piece_size + 1 != (size_t) n_pieces)
		return mcc_error_set(err, MCC_ERR_VALUE,
							 "%d pieces of %zu bytes cannot hold a template of %zu bytes",
							 n_pieces, piece_size, size);
	memset(s->head, 0, sizeof(s->head));
	gather(&p, 4, head - 4, s->head + 4);
	st = mcc_template_open_header(s->head, size, &s->v, err);
	if (st != MCC_OK)
		return st;
	boff = (size_t) (s->v.bits - s->head);
	moff = (size_t) (s->v.meta - s->head);
	s->v.base = NULL;
	s->v.minutiae = NULL;
	s->v.bits = NULL;
	s->v.meta = span(&p, moff, (size_t) s->v.n_cyl * MCC_CYLMETA_RECSZ, s->meta_buf);
	st = mcc_template_check_popcounts(&s->v, err);
	if (st != MCC_OK)
		return st;
	cut_runs(s, &p, boff);
	return MCC_OK;
}
