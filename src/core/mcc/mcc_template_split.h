/*
 * mcc_template_split.h: a stored template read where its pieces lie,
 * without assembling it first.
 *
 * PostgreSQL stores a value over about 2 kB out of line, in TOAST chunks of
 * equal size (the last one shorter), each in a tuple of its own. The backend
 * scan reads them in the TOAST table's pages (src/template/toast_stream.h);
 * copying a value's chunks together before scoring it was a tenth of that
 * scan's time. A split view instead gives the kernel the template's
 * cylinders in runs where the chunks hold them (mcc_soa_score_runs()): only
 * what a chunk boundary cuts is copied, into the view itself: the header,
 * a cylinder split between two chunks, and the metadata records when they
 * are split.
 *
 * Piece i holds bytes [4 + i * piece_size, 4 + (i + 1) * piece_size) of the
 * blob (mcc_template.h's offsets: its 4-byte varlena header is in no piece);
 * every piece but the last is full.
 */
#ifndef MCC_TEMPLATE_SPLIT_H
#define MCC_TEMPLATE_SPLIT_H

#include "mcc_soa.h"
#include "mcc_template.h"

/* Pieces a split view takes; a value in more is assembled by the caller. */
#define MCC_SPLIT_MAX_PIECES	8

typedef struct mcc_template_split
{
	/*
	 * The header's fields, meta at the metadata records (in a piece, or in
	 * meta_buf when a boundary cuts them); base, minutiae and bits NULL.
	 */
	mcc_template_view v;
	int			n_runs;
	mcc_cyl_run runs[2 * MCC_SPLIT_MAX_PIECES];
	uint8_t		head[MCC_TEMPLATE_HDRSZ];
	uint64_t	across[MCC_SPLIT_MAX_PIECES][2 * MCC_MAX_WORDS];	/* cut cylinders */
	uint8_t		meta_buf[MCC_CYLMETA_RECSZ * MCC_MAX_CYL];
} mcc_template_split;

/*
 * Open the template of size bytes (its varlena size) whose bytes past the
 * header lie in piece[0 .. n_pieces) of piece_size bytes each, with the
 * checks of mcc_template_open_stored (the header, the size, each cylinder's
 * popcount within the profile's bits): the same errors for the same bytes.
 * MCC_ERR_VALUE without a check when the pieces do not fit size or number
 * more than MCC_SPLIT_MAX_PIECES. The view reads the pieces in place: they
 * must stay while it is used.
 */
mcc_status	mcc_template_open_split(const uint8_t *const *piece, int n_pieces,
									size_t piece_size, size_t size,
									mcc_template_split *s, mcc_error *err);

#endif							/* MCC_TEMPLATE_SPLIT_H */
