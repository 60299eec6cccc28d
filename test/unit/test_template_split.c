/*
 * test_template_split.c: a template read where its pieces lie
 * (mcc_template_split.h): with every kernel, the score of the split view
 * equals the score of the whole blob bit for bit, whatever the piece size
 * (a chunk boundary at every byte of a cylinder, in the header, the
 * minutiae and the metadata), and the checks refuse what
 * mcc_template_open_stored refuses, with the same message.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "testgen.h"
#include "mcc_lss.h"
#include "mcc_template_split.h"

static const char *const kernel_names[] = {"avx512", "avx2", "popcnt", "generic"};

/* Blob bytes past the 4-byte header cut into malloc'ed pieces at odd addresses. */
typedef struct pieces
{
	int			n;
	uint8_t    *raw[MCC_SPLIT_MAX_PIECES + 1];
	const uint8_t *at[MCC_SPLIT_MAX_PIECES + 1];
} pieces;

static int
cut(const uint8_t *blob, size_t size, size_t piece_size, pieces *p)
{
	size_t		data = size - 4;

	p->n = (int) ((data - 1) / piece_size + 1);
	if (p->n > MCC_SPLIT_MAX_PIECES + 1)
	{
		p->n = 0;
		return 0;
	}
	for (int i = 0; i < p->n; i++)
	{
		size_t		len = i < p->n - 1 ? piece_size : data - (size_t) i * piece_size;

		/* exactly the piece's bytes after an odd offset: the sanitizers see any overread */
		p->raw[i] = malloc(len + 1);
		memcpy(p->raw[i] + 1, blob + 4 + (size_t) i * piece_size, len);
		p->at[i] = p->raw[i] + 1;
	}
	return 1;
}

static void
uncut(pieces *p)
{
	for (int i = 0; i < p->n; i++)
		free(p->raw[i]);
	p->n = 0;
}

/* Whether opening the split pieces and the whole blob agree (status and message). */
static int
same_verdict(const uint8_t *blob, size_t size, size_t piece_size, mcc_template_split *s)
{
	pieces		p;
	mcc_template_view v;
	mcc_error	e1;
	mcc_error	e2;
	mcc_status	st1;
	mcc_status	st2;
	int			ok;

	if (!cut(blob, size, piece_size, &p))
		return 0;
	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	st1 = mcc_template_open_stored(blob, size, &v, &e1);
	st2 = mcc_template_open_split(p.at, p.n, piece_size, size, s, &e2);
	ok = st1 == st2 && (st1 == MCC_OK ||
						(strcmp(e1.message, e2.message) == 0 && strcmp(e1.detail, e2.detail) == 0));
	uncut(&p);
	return ok;
}

/* Every kernel: each template at each piece size scores as the whole blob. */
static void
check_scores(const mcc_profile *p, uint8_t **blob, const mcc_template_view *v, int n,
			 const mcc_template_view *probe, int n_probes)
{
	char	   *raw = malloc(mcc_probe_size() + 128);
	mcc_probe  *q = (mcc_probe *) (raw + (64 - (uintptr_t) raw % 64) % 64);
	mcc_template_split *s = malloc(sizeof(*s));

	for (size_t kn = 0; kn < sizeof(kernel_names) / sizeof(kernel_names[0]); kn++)
	{
		long		checked = 0;
		long		diff = 0;
		long		cut_cyl = 0;
		int			max_runs = 0;

		if (mcc_soa_set_kernel(kernel_names[kn]) != 0)
		{
			UNIT_SKIP("%s: kernel %s is not supported by this CPU", p->name, kernel_names[kn]);
			continue;
		}
		for (int pi = 0; pi < n_probes; pi++)
		{
			mcc_probe_init(q, &probe[pi]);
			for (int k = 0; k < n; k++)
			{
				size_t		data = v[k].size - 4;
				size_t		lo = (data - 1) / MCC_SPLIT_MAX_PIECES + 1;
				float		ref = mcc_soa_score_view(q, &v[k]);

				/*
				 * The smallest pieces that fit, then one more byte at a
				 * time for two cylinders' worth: each boundary passes every
				 * byte of a cylinder; and PostgreSQL's chunk size, one piece.
				 */
				for (size_t ps = lo; ps <= data + 2 * 8 * (size_t) v[k].words + 2000; ps++)
				{
					pieces		pc;
					float		got;
					mcc_error	err;

					if (ps > lo + 16 * (size_t) v[k].words && ps != 1996 && ps != data && ps != data + 1)
						continue;
					cut(blob[k], v[k].size, ps, &pc);
					if (mcc_template_open_split(pc.at, pc.n, ps, v[k].size, s, &err) != MCC_OK)
						diff++;
					else
					{
						got = mcc_soa_score_runs(q, &s->v, s->runs, s->n_runs);
						diff += memcmp(&got, &ref, sizeof(float)) != 0;
						cut_cyl += s->n_runs > 1;
						if (s->n_runs > max_runs)
							max_runs = s->n_runs;
					}
					checked++;
					uncut(&pc);
				}
			}
		}
		UNIT_CHECK(diff == 0 && cut_cyl > 0,
				   "%s, kernel %s: %ld split views score as their whole templates bit for bit (%ld differ; %ld in several runs, up to %d)",
				   p->name, kernel_names[kn], checked, diff, cut_cyl, max_runs);
	}
	mcc_soa_set_kernel(NULL);
	free(s);
	free(raw);
}

/* Damaged values: the split view refuses them as the whole blob is refused. */
static void
check_refusals(const mcc_profile *p, const uint8_t *blob0, const mcc_template_view *v0)
{
	size_t		size = v0->size;
	uint8_t    *b = malloc(size);
	mcc_template_split *s = malloc(sizeof(*s));
	size_t		meta = (size_t) (v0->meta - v0->base);
	long		bad = 0;
	long		tried = 0;
	pieces		pc;
	mcc_error	err;

	UNIT_CHECK(v0->n_cyl > 2, "%s: a template of %d cylinders to damage", p->name, v0->n_cyl);
	/* a popcount past the profile's bits in each record, cut at every byte */
	for (int c = 0; c < v0->n_cyl; c++)
		for (size_t ps = meta + 4 * (size_t) c - 4 - 3; ps <= meta + 4 * (size_t) c - 4 + 1; ps++)
		{
			uint16_t	pcnt = (uint16_t) (p->nbits + 1);

			memcpy(b, blob0, size);
			memcpy(b + meta + 4 * (size_t) c, &pcnt, sizeof(pcnt));
			if ((size - 4 - 1) / ps + 1 > MCC_SPLIT_MAX_PIECES)
				continue;
			tried++;
			bad += !same_verdict(b, size, ps, s);
		}
	/* the header: another version, flags, counts; cut inside it too */
	for (int f = 4; f < MCC_TEMPLATE_HDRSZ; f++)
		for (size_t ps = 1000; ps <= size; ps += size - 1000 > 0 ? (size - 1000) / 3 + 1 : 1)
		{
			if ((size - 4 - 1) / ps + 1 > MCC_SPLIT_MAX_PIECES)
				continue;
			memcpy(b, blob0, size);
			b[f] ^= 0x41;
			tried++;
			bad += !same_verdict(b, size, ps, s);
		}
	UNIT_CHECK(bad == 0 && tried > 20,
			   "%s: %ld damaged values refused by the split view exactly as by mcc_template_open_stored (%ld differ)",
			   p->name, tried, bad);
	/* pieces that do not fit the size */
	cut(blob0, size, 1996, &pc);
	UNIT_CHECK(mcc_template_open_split(pc.at, pc.n + 1, 1996, size, s, &err) == MCC_ERR_VALUE &&
			   mcc_template_open_split(pc.at, pc.n, 1996, size + 2000, s, &err) == MCC_ERR_VALUE,
			   "%s: pieces that do not fit the size are refused: %s", p->name, err.message);
	uncut(&pc);
	/* pieces of ceil(data / 9) bytes: nine of them */
	cut(blob0, size, (size - 4 + MCC_SPLIT_MAX_PIECES) / (MCC_SPLIT_MAX_PIECES + 1), &pc);
	UNIT_CHECK(pc.n == MCC_SPLIT_MAX_PIECES + 1 &&
			   mcc_template_open_split(pc.at, pc.n, (size - 4 + MCC_SPLIT_MAX_PIECES) /
									   (MCC_SPLIT_MAX_PIECES + 1), size, s, &err) == MCC_ERR_VALUE,
			   "%s: more than %d pieces are refused", p->name, MCC_SPLIT_MAX_PIECES);
	uncut(&pc);
	free(s);
	free(b);
}

int
main(void)
{
	tg_rng		r = {4242};

	mcc_lss_init();
	for (int id = MCC_PROFILE_GPU2015; id <= MCC_PROFILE_TPAMI2010; id++)
	{
		const mcc_profile *p = mcc_profile_by_id(id);
		enum
		{
			N = 24, NP = 3
		};
		uint8_t    *blob[N];
		mcc_template_view v[N];
		uint8_t    *pblob[NP];
		mcc_template_view pv[NP];
		mcc_minutiae fingers[2];

		for (int f = 0; f < 2; f++)
			tg_minutiae(&r, &fingers[f], 40, 60, 8.0);
		for (int k = 0; k < N; k++)
		{
			blob[k] = NULL;
			while (blob[k] == NULL)
			{
				mcc_minutiae ms;

				/* impressions of two fingers (high scores) and others; 1 to 90 minutiae */
				if (k % 3 != 2)
					tg_impression(&r, &fingers[k % 3], &ms, 0.85, 2, 0.1, 3);
				else
					tg_minutiae(&r, &ms, k == 2 ? 1 : 20, 90, 8.0);
				blob[k] = tg_build_open(&ms, p, &v[k]);
			}
		}
		for (int k = 0; k < NP; k++)
		{
			pblob[k] = NULL;
			while (pblob[k] == NULL)
			{
				mcc_minutiae ms;

				tg_impression(&r, &fingers[k % 2], &ms, 0.85, 2, 0.1, 3);
				pblob[k] = tg_build_open(&ms, p, &pv[k]);
			}
		}
		check_scores(p, blob, v, N, pv, NP);
		check_refusals(p, blob[0], &v[0]);
		for (int k = 0; k < N; k++)
			free(blob[k]);
		for (int k = 0; k < NP; k++)
			free(pblob[k]);
	}
	return unit_done();
}
