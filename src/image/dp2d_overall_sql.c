/*
 * dp2d_overall_sql.c: paper 003's overall verification in SQL (Sec. 8.1;
 * src/core/image/mcc_dp2d_overall.h), behind the algorithm => 'overall' argument
 * of mcc_dp2d_differences, mcc_dp2d_verify and mcc_dp2d_verify_many.
 *
 * The images are enhanced here, at the overall algorithm's working size
 * (mcc_dp2d_overall_prep), in the order reference, probes (so the first
 * error is the simplified path's); the warps run where mcc.image_device
 * says, as plain 2D-DP of the binary images with the warped images
 * returned (the matcher engine on its GPU or CPU threads, or worker threads
 * of this backend: the same bits); the restoration of the reference (once)
 * and of every warped probe, and the count, run here.
 */
#include "dp2d_pg.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "mcc_proto.h"
#include "mcc_dp2d_overall.h"

/* The algorithm named by a SQL text argument. */
dp2d_algorithm
dp2d_algorithm_arg(text *t)
{
	char	   *name = text_to_cstring(t);

	if (pg_strcasecmp(name, "simplified") == 0)
		return DP2D_SIMPLIFIED;
	if (pg_strcasecmp(name, "overall") == 0)
		return DP2D_OVERALL;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown verification algorithm \"%s\"", name),
			 errhint("Known algorithms are \"simplified\" (paper 003, Sec. 8) and \"overall\" (Sec. 8.1).")));
	return DP2D_SIMPLIFIED;		/* not reached */
}

/* Enhance raw at the overall algorithm's size into img, or raise naming what. */
static void
overall_enhance(const mcc_image *raw, const mcc_dp2d_prep *p, const char *what, mcc_image *img)
{
	mcc_error	err;

	img->width = img->height = p->side;
	img->stride = p->side;
	img->pixels = palloc((size_t) p->side * p->side);
	if (mcc_dp2d_enhance(raw, p, img->pixels, &err) != MCC_OK)
		dp2d_raise_enhance(what, &err);
}

/* Thin and restore one working image, or raise. */
static void
overall_restore(const uint8 *bin, const mcc_dp2d_prep *p, uint8 *skel)
{
	mcc_error	err;

	if (mcc_dp2d_overall_restore(bin, p, skel, &err) != MCC_OK)
		mcc_pg_raise(&err);
}

/* The overall algorithm for n probes against one reference. */
void
dp2d_overall_n(const char *fn, const mcc_image *ref, uint32 n, const mcc_image *probes,
			   char *const *what, int64 *differences)
{
	mcc_dp2d_prep p;
	size_t		px;
	mcc_image	eref;
	mcc_image  *eprobes = palloc(sizeof(mcc_image) * Max(n, 1));
	mcc_dp2d_out *out = palloc0(sizeof(mcc_dp2d_out) * Max(n, 1));
	uint8	   *rref;
	uint8	   *rprobe;
	uint32		done = 0;

	mcc_dp2d_overall_prep(&p);
	px = (size_t) p.side * p.side;
	overall_enhance(ref, &p, "reference", &eref);
	for (uint32 i = 0; i < n; i++)
	{
		overall_enhance(&probes[i], &p, what[i], &eprobes[i]);
		out[i].warped = palloc(px);
		CHECK_FOR_INTERRUPTS();
	}
	/* the warps: as many probes per engine request as fit in a frame */
	while (done < n)
	{
		uint64		bytes = px + 64;
		uint32		k = 0;

		while (done + k < n && (k == 0 || bytes + 2 * px + 64 < MCC_PROTO_MAX_FRAME / 2))
		{
			bytes += 2 * px + 8;
			k++;
		}
		if (!dp2d_engine(fn, 1, &eref, k, eprobes + done, MCC_IMG_WARP | MCC_IMG_WARPED, out + done,
						 NULL, NULL))
			break;
		done += k;
	}
	if (done < n)
	{
		const mcc_image **pa = palloc(sizeof(mcc_image *) * n);
		const mcc_image **pb = palloc(sizeof(mcc_image *) * n);

		for (uint32 i = done; i < n; i++)
		{
			pa[i - done] = &eref;
			pb[i - done] = &eprobes[i];
		}
		dp2d_match_pairs(n - done, pa, pb, MCC_DP2D_WARP, out + done);
	}
	rref = palloc(px);
	rprobe = palloc(px);
	overall_restore(eref.pixels, &p, rref);
	for (uint32 i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		overall_restore(out[i].warped, &p, rprobe);
		differences[i] = (int64) mcc_dp2d_overall_differences(rref, rprobe, px);
	}
}
