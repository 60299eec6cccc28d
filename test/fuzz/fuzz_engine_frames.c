/*
 * fuzz_engine_frames.c: libFuzzer harness of the matcher engine's frame
 * handling (src/engine), in process: every input is fed to a fresh
 * connection of one long-lived engine whose gallery is loaded, then the
 * engine runs until its passes end.
 *
 * Input: first byte even: a structured stream of [uint8 type][uint16 length]
 * [payload] records that the harness wraps into frames with correct headers
 * (so that fuzzing reaches the payload parsers); odd: raw bytes (the header
 * parser). Either way the engine must not crash, leak or read out of bounds.
 * Two record types stand for frames the fuzzer could hardly build because
 * they carry templates: 30, a DELTA inserting one of the harness's valid
 * templates and deleting another; 31, a SEARCH with up to 3 of them (one
 * byte of each possibly changed), refining or not; 29, a REFINE of up to 2 probes with up to
 * 3 candidates each, built the same way.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eng_conn.h"
#include "eng_gallery.h"
#include "eng_log.h"
#include "eng_server.h"
#include "mcc_hash.h"
#include "mcc_template.h"

#define NTPL 40

static eng_server server;
static int	started;
static uint8_t *tpl[NTPL];
static size_t tpl_size[NTPL];
static const mcc_gallery_id gal_id = {1, 1, 1};

/* A small valid template from a grid of minutiae, for the loaded gallery. */
static uint8_t *
make_template(int seed, size_t *size)
{
	mcc_minutiae ms;
	mcc_error	err;
	uint8_t    *b;
	const mcc_profile *p = mcc_profile_by_id(MCC_PROFILE_DEFAULT);

	memset(&ms, 0, sizeof(ms));
	ms.width = 300;
	ms.height = 400;
	ms.dpi = 500;
	for (int i = 0; i < 30; i++)
	{
		ms.m[i].x = (int16_t) (40 + (i % 6) * 40 + (seed * 7 + i * 3) % 11);
		ms.m[i].y = (int16_t) (60 + (i / 6) * 50 + (seed * 5 + i) % 13);
		ms.m[i].theta = (float) (((seed + i * 37) % 360) * 0.0174532925);
		ms.m[i].type = 1;
	}
	ms.count = 30;
	if (mcc_template_build(&ms, p, NULL, size, &err) != MCC_OK)
		return NULL;
	b = calloc(1, *size);
	if (mcc_template_build(&ms, p, b, size, &err) != MCC_OK)
	{
		free(b);
		return NULL;
	}
	return b;
}

/*
 * Make sure gallery {1, 1, 1} is loaded with 40 templates (inputs may evict
 * it or mark it for reload): evict everything, load it at generation 1.
 */
static void
ensure_loaded(void)
{
	eng_conn   *c;
	eng_buf		b;
	mcc_gallery_id all = {0, 0, 0};
	eng_gallery *gal = eng_gallery_get(&server, &gal_id, false);
	size_t		f;

	if (gal != NULL && gal->cache != NULL && gal->cache->reload_at == 0)
		return;
	c = eng_conn_add(&server, -1);
	eng_buf_init(&b);
	f = eng_frame_begin(&b, MCC_MSG_EVICT, 1);
	eng_buf_gallery(&b, &all);
	eng_frame_end(&b, f);
	f = eng_frame_begin(&b, MCC_MSG_LOAD_BEGIN, 1);
	eng_buf_gallery(&b, &gal_id);
	eng_buf_u64(&b, 1);
	eng_buf_u32(&b, MCC_PROFILE_DEFAULT);
	eng_buf_u64(&b, NTPL);
	eng_buf_u32(&b, 0);			/* priority */
	eng_buf_u32(&b, 0);			/* flags */
	eng_frame_end(&b, f);
	f = eng_frame_begin(&b, MCC_MSG_LOAD_ROWS, 1);
	eng_buf_u32(&b, NTPL);
	for (int i = 0; i < NTPL; i++)
	{
		eng_buf_i64(&b, i);
		eng_buf_u64(&b, 3 + (uint64_t) (i % 4));
		eng_buf_u64(&b, i % 5 == 0 ? 9 : 0);
		eng_buf_bytes(&b, tpl[i], (uint32_t) tpl_size[i]);
	}
	eng_frame_end(&b, f);
	f = eng_frame_begin(&b, MCC_MSG_LOAD_END, 1);
	eng_frame_end(&b, f);
	eng_conn_input(&server, c, b.data, b.len);
	eng_buf_free(&b);
	eng_server_step(&server);
	while (server.jobs > 0)
		eng_server_pump(&server, 1000);
	eng_conn_close(&server, c);
}

/* Byte i of a record's payload, 0 past its end. */
static uint8_t
at(const uint8_t *p, size_t n, size_t i)
{
	return i < n ? p[i] : 0;
}

/* Record 30: a DELTA with a valid insert and a delete. */
static void
synth_delta(eng_buf *b, const uint8_t *p, size_t n, bool more)
{
	int			ti = at(p, n, 3) % NTPL;
	int			di = at(p, n, 5) % NTPL;
	size_t		f = eng_frame_begin(b, MCC_MSG_DELTA, 0);

	eng_buf_gallery(b, &gal_id);
	eng_buf_u64(b, at(p, n, 0));
	eng_buf_u64(b, at(p, n, 1));
	eng_buf_u32(b, 1);
	eng_buf_u32(b, 1);
	eng_buf_i64(b, at(p, n, 2));
	eng_buf_bytes(b, tpl[ti], (uint32_t) tpl_size[ti]);
	eng_buf_i64(b, at(p, n, 4));
	eng_buf_u64(b, mcc_template_hash(tpl[di], tpl_size[di]));
	eng_frame_end(b, f);
	if (more)
		b->data[f + 6] = 1;
}

/* Record 31: a SEARCH with up to 3 valid (or slightly changed) templates. */
static void
synth_search(eng_buf *b, const uint8_t *p, size_t n, uint64_t rid)
{
	int			np = at(p, n, 2) % 4;
	size_t		f = eng_frame_begin(b, MCC_MSG_SEARCH, rid);

	eng_buf_gallery(b, &gal_id);
	eng_buf_u64(b, at(p, n, 0));
	eng_buf_u32(b, at(p, n, 1));
	eng_buf_f32(b, (float) at(p, n, 3) / 200.0f);
	eng_buf_u64(b, at(p, n, 1) % 3 == 0 ? at(p, n, 0) : 0);	/* count_xmin */
	eng_buf_u64(b, at(p, n, 3) % 4);	/* count_above */
	/* refine: a method (or one past them), final k, fraction (or above 1), refine_min */
	eng_buf_u32(b, at(p, n, 13) % (MCC_NMETHODS + 1));
	eng_buf_u32(b, at(p, n, 14) % 12);
	eng_buf_f64(b, (double) at(p, n, 15) / 200.0);
	eng_buf_u32(b, at(p, n, 16) % 50);
	eng_buf_u32(b, (uint32_t) np);
	for (int i = 0; i < np; i++)
	{
		int			t = at(p, n, 4 + 3 * i) % NTPL;
		size_t		start = b->len + 4;
		uint16_t	pos = (uint16_t) (at(p, n, 5 + 3 * i) * 8);

		eng_buf_bytes(b, tpl[t], (uint32_t) tpl_size[t]);
		if (!b->failed && at(p, n, 6 + 3 * i) != 0 && pos < tpl_size[t])
			b->data[start + pos] ^= at(p, n, 6 + 3 * i);
	}
	eng_frame_end(b, f);
}

/* Record 29: a REFINE of up to 2 items of up to 3 valid (or changed) templates. */
static void
synth_refine(eng_buf *b, const uint8_t *p, size_t n, uint64_t rid)
{
	int			ni = at(p, n, 1) % 3;
	size_t		f = eng_frame_begin(b, MCC_MSG_REFINE, rid);
	size_t		k = 2;

	eng_buf_u32(b, at(p, n, 0) % 12);	/* methods 0..9, and two unknown */
	eng_buf_u32(b, (uint32_t) ni);
	for (int i = 0; i < ni; i++)
	{
		int			nc = at(p, n, k++) % 4;

		for (int j = -1; j < nc; j++)
		{
			int			t = at(p, n, k++) % NTPL;
			size_t		start = b->len + 4;
			uint16_t	pos = (uint16_t) (at(p, n, k++) * 8);
			uint8_t		x = at(p, n, k++);

			eng_buf_bytes(b, tpl[t], (uint32_t) tpl_size[t]);
			if (!b->failed && x != 0 && pos < tpl_size[t])
				b->data[start + pos] ^= x;
			if (j == -1)
				eng_buf_u32(b, (uint32_t) nc);
		}
	}
	eng_frame_end(b, f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	eng_conn   *c;

	if (!started)
	{
		eng_config	cfg = {.threads = 2, .memory_limit = (uint64_t) 256 << 20,
		.delta_timeout_ms = 0, .max_batch = 64};

		eng_log_set_level(ENG_LOG_ERROR);
		eng_server_init(&server, &cfg);
		for (int i = 0; i < NTPL; i++)
			tpl[i] = make_template(i, &tpl_size[i]);
		started = 1;
	}
	ensure_loaded();
	c = eng_conn_add(&server, -1);
	if (c == NULL)
		return 0;
	if (size > 0 && (data[0] & 1) == 0)
	{
		eng_buf		b;
		size_t		i = 1;

		eng_buf_init(&b);
		while (i + 3 <= size)
		{
			uint16_t	len;
			uint8_t		type = data[i];
			size_t		f;

			memcpy(&len, data + i + 1, 2);
			i += 3;
			if (len > size - i)
				len = (uint16_t) (size - i);
			if ((type & 0x1f) == 30)
				synth_delta(&b, data + i, len, (type & 0x80) != 0);
			else if ((type & 0x1f) == 31)
				synth_search(&b, data + i, len, (uint64_t) (type >> 5));
			else if ((type & 0x1f) == 29)
				synth_refine(&b, data + i, len, (uint64_t) (type >> 5));
			else
			{
				f = eng_frame_begin(&b, type & 0x1f, (uint64_t) (type >> 5));
				if (type & 0x80)	/* sometimes set MCC_FRAME_MORE */
					b.data[f + 6] = 1;
				eng_buf_put(&b, data + i, len);
				eng_frame_end(&b, f);
			}
			i += len;
		}
		eng_conn_input(&server, c, b.data, b.len);
		eng_buf_free(&b);
	}
	else if (size > 0)
		eng_conn_input(&server, c, data + 1, size - 1);
	eng_server_step(&server);
	while (server.jobs > 0)
		eng_server_pump(&server, 1000);
	eng_conn_close(&server, c);
	eng_server_step(&server);
	return 0;
}
