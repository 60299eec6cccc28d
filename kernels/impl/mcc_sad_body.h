/*
 * mcc_sad_body.h: the arithmetic of the GPU SAD kernel (kernels/impl/mcc_sad.cu),
 * written once for CUDA and for C, so that the unit tests run the very
 * same indexing on the CPU (test/unit/test_sad_gpu_emu.c) where there is
 * no GPU.
 *
 * Layout (all zero-padded, so no load is ever out of range or masked):
 *   tw   the target as 32-bit words, byte c of row t in word c / 4 of row
 *        t (little-endian), tsw words per row, at least H + Y rows;
 *   pp   the pattern in 4 shifted copies: word (i, r, s) at
 *        pp[(i * h + r) * 4 + s] holds bytes 4i .. 4i + 3 of pattern row r
 *        moved right by s bytes: byte u (counted from 4i) of the row is
 *        P[r][u - s] for s <= u < s + w and 0 elsewhere;
 *        i < nw = ceil((w + 3) / 4).
 * A thread owns the map columns x = 4 (xw0 + j) + s (j < J, s < 4) of the
 * map rows y0 .. y0 + Y - 1: for every word column i and pattern row r,
 * target word (y0 + dy + r, xw0 + j + i) meets pattern word (i, r, s) in
 * one packed byte SAD (PTX vabsdiff4 with accumulate) for all dy, j, s.
 * Over r the Y target rows slide: each step loads one new row of J words
 * into the register slot the oldest row leaves (slot = row mod Y, so every
 * index is a constant once the loops are unrolled).
 *
 * What this sums beyond Eq. 1 is |T - 0| over the bytes of the thread's
 * words outside [s, s + w): sad_corr_column() computes those target bytes'
 * column sums so that the final SAD is raw - (V[y + h][x] - V[y][x]).
 *
 * The includer defines SAD_HD (function qualifiers), SAD_UNROLL (a full
 * unroll pragma), SAD_LDT(p) (a 32-bit load of the target), SAD_LDP(p, a,
 * b, c, d) (the 4 shifted pattern words at p) and SAD_VSAD(a, b, acc)
 * (acc + sum of the 4 byte absolute differences), and, before each
 * inclusion of the column body, SAD_J, SAD_Y and SAD_COLUMN_FN.
 */

#ifndef MCC_SAD_BODY_COMMON
#define MCC_SAD_BODY_COMMON

/*
 * Selection keys: key = sad << 26 | (y * nx + x). Positions are fewer than
 * 2^26 (MCC_IMAGE_MAX_PIXELS) and SADs below 255 * 2^26 < 2^34, so keys
 * are unique, below 2^60, and ordered as (SAD, y, x).
 */
#define MCC_SAD_KEY_POS_BITS 26
#define MCC_SAD_KEY_BITS 60

/* Threads per block of the SAD kernel (two warps along x). */
#define SAD_BT 64

/* Target rows per segment of the correction table. */
#define SAD_CORR_SEG 64

/* Words per pattern row: room for w bytes after a shift of up to 3. */
SAD_HD static inline int
sad_words(int w)
{
	return (w + 3 + 3) / 4;
}

/*
 * The target bytes of row t that the thread owning map column x reads
 * beyond its window: left of x in its first word, right of x + w - 1 in
 * its last (what the zero padding of the pattern adds to its raw sum).
 */
SAD_HD static inline uint32_t
sad_corr_row(const uint8_t *tb, size_t tstride, int w, uint32_t x, int t)
{
	const uint8_t *row = tb + (size_t) t * tstride;
	const uint32_t a4 = x & ~3u;
	const uint32_t end = a4 + 4u * (uint32_t) sad_words(w);
	uint32_t	r = 0;

	for (uint32_t c = a4; c < x; c++)
		r += row[c];
	for (uint32_t c = x + (uint32_t) w; c < end; c++)
		r += row[c];
	return r;
}

/*
 * V[t][x] = sum over rows t' < t of sad_corr_row(t', x), t = 0 .. H, for
 * one map column x (V has H + 1 rows of nx). The GPU computes the same
 * table in row segments (sad_corr_seg_kernel, sad_corr_scan_kernel).
 */
SAD_HD static inline void
sad_corr_column(const uint8_t *tb, size_t tstride, int H, int w, uint32_t x, uint32_t nx,
				uint32_t *V)
{
	uint32_t	acc = 0;

	V[x] = 0;
	for (int t = 0; t < H; t++)
	{
		acc += sad_corr_row(tb, tstride, w, x, t);
		V[(size_t) (t + 1) * nx + x] = acc;
	}
}

/* Correction table, pass 1: the sum of sad_corr_row over rows of segment g. */
SAD_HD static inline uint32_t
sad_corr_seg(const uint8_t *tb, size_t tstride, int H, int w, uint32_t x, int g)
{
	const int	t0 = g * SAD_CORR_SEG;
	const int	t1 = t0 + SAD_CORR_SEG < H ? t0 + SAD_CORR_SEG : H;
	uint32_t	sum = 0;

	for (int t = t0; t < t1; t++)
		sum += sad_corr_row(tb, tstride, w, x, t);
	return sum;
}

/*
 * Correction table, pass 2: V rows of segment g for column x (and row 0
 * for g = 0) from the segment sums seg[g'][x] of the segments before it.
 */
SAD_HD static inline void
sad_corr_scan(const uint8_t *tb, size_t tstride, int H, int w, uint32_t x, uint32_t nx, int g,
			  const uint32_t *seg, uint32_t *V)
{
	const int	t0 = g * SAD_CORR_SEG;
	const int	t1 = t0 + SAD_CORR_SEG < H ? t0 + SAD_CORR_SEG : H;
	uint32_t	acc = 0;

	for (int k = 0; k < g; k++)
		acc += seg[(size_t) k * nx + x];
	if (g == 0)
		V[x] = 0;
	for (int t = t0; t < t1; t++)
	{
		acc += sad_corr_row(tb, tstride, w, x, t);
		V[(size_t) (t + 1) * nx + x] = acc;
	}
}

/* Sizes of one search's device layout for a kernel of J x Y blocks of bt threads. */
typedef struct sad_dims
{
	uint32_t	nx,
				ny;				/* map */
	uint32_t	nxw;			/* map columns in words: ceil(nx / 4) */
	uint32_t	nw;				/* pattern words per row */
	uint32_t	gx,
				gy;				/* grid: blocks across, bands of Y rows down */
	uint32_t	tsw;			/* target words per row */
	uint32_t	trows;			/* target rows */
} sad_dims;

/* The layout of a W x H target and w x h pattern (w <= W, h <= H). */
SAD_HD static inline void
sad_dims_compute(uint32_t W, uint32_t H, uint32_t w, uint32_t h, int J, int Y, int bt,
				 sad_dims *d)
{
	d->nx = W - w + 1;
	d->ny = H - h + 1;
	d->nxw = (d->nx + 3) / 4;
	d->nw = (uint32_t) sad_words((int) w);
	d->gx = (d->nxw + (uint32_t) (bt * J) - 1) / (uint32_t) (bt * J);
	d->gy = (d->ny + (uint32_t) Y - 1) / (uint32_t) Y;
	/* the last thread reads words up to gx * bt * J - 1 + nw - 1 */
	d->tsw = d->gx * (uint32_t) (bt * J) + d->nw;
	if (d->tsw < (W + 3) / 4)
		d->tsw = (W + 3) / 4;
	d->tsw = (d->tsw + 31) & ~31u;	/* 128-byte rows */
	/* the last band reads rows up to (gy - 1) * Y + Y - 1 + h - 1 */
	d->trows = d->gy * (uint32_t) Y + h;
	if (d->trows < H)
		d->trows = H;
}

/* Fill the 4 shifted pattern copies (nw * h * 4 words, mcc_sad_body.h layout). */
SAD_HD static inline void
sad_pattern_layout(const uint8_t *p, size_t stride, uint32_t w, uint32_t h, uint32_t *pp)
{
	const uint32_t nw = (uint32_t) sad_words((int) w);

	for (uint32_t i = 0; i < nw; i++)
		for (uint32_t r = 0; r < h; r++)
			for (uint32_t s = 0; s < 4; s++)
			{
				uint32_t	word = 0;

				for (uint32_t b = 0; b < 4; b++)
				{
					uint32_t	u = 4 * i + b;

					if (u >= s && u < s + w)
						word |= (uint32_t) p[(size_t) r * stride + (u - s)] << (8 * b);
				}
				pp[((size_t) i * h + r) * 4 + s] = word;
			}
}

/* The selection key of a final SAD at position index pos. */
SAD_HD static inline uint64_t
sad_key(uint64_t raw, uint32_t corr, uint32_t pos)
{
	return ((raw - corr) << MCC_SAD_KEY_POS_BITS) | pos;
}
#endif							/* MCC_SAD_BODY_COMMON */

#ifdef SAD_COLUMN_FN
/*
 * One step of the slide in SAD_COLUMN_FN: target row m0 + q + Y - 1 into
 * the slot the oldest row leaves, then pattern row m0 + q against the Y
 * target rows of the window. A macro over the column's tcol, tsw, pcol, win
 * and acc, not a function, so that win and acc stay registers (every index
 * is a constant once the loops are unrolled).
 */
#define SAD_STEP(m0, q) \
	do \
	{ \
		const uint32_t *trow = tcol + (size_t) ((m0) + (q) + SAD_Y - 1) * tsw; \
		uint32_t	p0, \
					p1, \
					p2, \
					p3; \
\
		SAD_UNROLL \
		for (int j = 0; j < SAD_J; j++) \
			win[((q) + SAD_Y - 1) % SAD_Y][j] = SAD_LDT(trow + j); \
		SAD_LDP(pcol + (size_t) ((m0) + (q)) * 4, p0, p1, p2, p3); \
		SAD_UNROLL \
		for (int dy = 0; dy < SAD_Y; dy++) \
			SAD_UNROLL \
			for (int j = 0; j < SAD_J; j++) \
			{ \
				const uint32_t t = win[((q) + dy) % SAD_Y][j]; \
\
				acc[dy][j][0] = SAD_VSAD(t, p0, acc[dy][j][0]); \
				acc[dy][j][1] = SAD_VSAD(t, p1, acc[dy][j][1]); \
				acc[dy][j][2] = SAD_VSAD(t, p2, acc[dy][j][2]); \
				acc[dy][j][3] = SAD_VSAD(t, p3, acc[dy][j][3]); \
			} \
	} while (0)

/*
 * One word column i: pattern rows r_begin .. r_end - 1 against the
 * thread's sliding target window. tcol points at target word
 * (y0 + r_begin, xw0 + i); pcol at the 4 pattern words of (i, r_begin),
 * successive rows 4 words apart.
 */
SAD_HD static inline void
SAD_COLUMN_FN(const uint32_t *tcol, size_t tsw, const uint32_t *pcol, int nrows,
			  uint32_t acc[SAD_Y][SAD_J][4])
{
	uint32_t	win[SAD_Y][SAD_J];
	int			m0;

	/* slot Y - 1 is loaded by the first step; zero it for the compiler */
	SAD_UNROLL
	for (int j = 0; j < SAD_J; j++)
		win[SAD_Y - 1][j] = 0;
	SAD_UNROLL
	for (int dy = 0; dy < SAD_Y - 1; dy++)
		SAD_UNROLL
		for (int j = 0; j < SAD_J; j++)
			win[dy][j] = SAD_LDT(tcol + (size_t) dy * tsw + j);
	for (m0 = 0; m0 + SAD_Y <= nrows; m0 += SAD_Y)
	{
		SAD_UNROLL
		for (int q = 0; q < SAD_Y; q++)
			SAD_STEP(m0, q);
	}
	/* the last nrows mod Y rows, same slots */
	SAD_UNROLL
	for (int q = 0; q < SAD_Y; q++)
	{
		if (m0 + q < nrows)
			SAD_STEP(m0, q);
	}
}

#ifdef SAD_THREAD_FN
/*
 * Everything one thread of the SAD kernel does (pattern words from global
 * memory): its 4J x Y positions at word xw0 and row y0, pattern rows
 * r_begin .. r_end - 1, every word column; then its raw sums stored (or,
 * for a later row chunk, added) for the positions inside the map band.
 */
SAD_HD static inline void
SAD_THREAD_FN(const uint32_t *tw, uint32_t tsw, const uint32_t *pp, int h, int nw, uint32_t nx,
			  uint32_t y_end, int r_begin, int r_end, uint64_t *raw, int accumulate,
			  uint32_t xw0, uint32_t y0)
{
	uint32_t	acc[SAD_Y][SAD_J][4] = {{{0}}};

	for (int i = 0; i < nw; i++)
		SAD_COLUMN_FN(tw + (size_t) (y0 + r_begin) * tsw + xw0 + i, tsw,
					  pp + ((size_t) i * h + r_begin) * 4, r_end - r_begin, acc);
	SAD_UNROLL
	for (int dy = 0; dy < SAD_Y; dy++)
	{
		const uint32_t y = y0 + dy;

		SAD_UNROLL
		for (int j = 0; j < SAD_J; j++)
			SAD_UNROLL
			for (int s = 0; s < 4; s++)
			{
				const uint32_t x = 4 * (xw0 + j) + s;

				if (x < nx && y < y_end)
				{
					const size_t idx = (size_t) y * nx + x;

					raw[idx] = (accumulate ? raw[idx] : 0) + acc[dy][j][s];
				}
			}
	}
}
#endif							/* SAD_THREAD_FN */
#endif							/* SAD_COLUMN_FN */
