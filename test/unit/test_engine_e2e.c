/*
 * test_engine_e2e.c: build/mcc_engine as a process, started the way the
 * supervisor starts it: ready line, socket mode, HELLO, a load, searches from
 * several connections compared with a brute-force mcc_lss_score search,
 * deltas seen by other connections, cancel, kill -9 seen by a waiting client
 * as EOF, restart over the stale socket, exit on the parent pipe's EOF and on
 * SIGTERM, and refusal to start over a live engine.
 *
 *   test_engine_e2e --gpu   the same with the engine's --gpu on (make
 *                           gpu-check, MCC_ENGINE=build/gpu/mcc_engine);
 *                           with a GPU, STATUS must show the gallery on it
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "engine_client.h"
#include "eng_gpu.h"
#include "eng_log.h"

#define N 300
#define NP 8

static tl_tpl *gt;
static tl_tpl *pt;
static tl_entry ref[N + 4];
static int	n_ref;
static const mcc_gallery_id G = {1, 2, 3};

/*
 * The engine's start-up log says in one line whether it searches on a GPU
 * ("GPU path on: N device(s) ...", eng_gpu_start) or on its CPU threads
 * ("... searching on N CPU threads", with the reason in plain words); no
 * other line repeats it (the "listening on" summary says "with the GPU" or
 * "CPU only"). CUDA's own messages appear only at the debug level (issue
 * 18: "CUDA driver version is insufficient" on every machine without an
 * NVIDIA driver misled). want_gpu: 1 the line must be the GPU's, 0 the CPU
 * threads', -1 either (a plain run: --gpu auto, whatever this machine has).
 */
static void
check_gpu_line(const char *log_path, int want_gpu)
{
	size_t		len = 0;
	char	   *log = (char *) unit_read_file(log_path, &len);
	int			said = 0,
				on_gpu = 0,
				cuda = 0;

	for (char *line = log; line != NULL && *line != '\0';)
	{
		char	   *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (strstr(line, "GPU path on") || strstr(line, " CPU threads"))
			said++;
		if (strstr(line, "GPU path on"))
			on_gpu++;
		if (strstr(line, "CUDA") && !strstr(line, "DEBUG:"))
			cuda++;
		line = nl ? nl + 1 : NULL;
	}
	UNIT_CHECK(log != NULL && said == 1 && (want_gpu < 0 || on_gpu == want_gpu) && cuda == 0,
			   "the start-up log says %s in one line (%d, %d on the GPU), CUDA's wording only at debug (%d lines above)",
			   want_gpu < 0 ? "GPU or CPU threads" : want_gpu ? "GPU" : "CPU threads", said, on_gpu, cuda);
	free(log);
}

/* Send a whole load of the reference at generation gen; true if LOADED. */
static bool
load(tc_conn *c, uint64_t gen)
{
	eng_buf		b;
	tl_frame	f;
	int64_t		keys[N + 4];
	uint64_t	xid[N + 4];
	tl_tpl		t[N + 4];
	bool		ok;

	eng_buf_init(&b);
	for (int i = 0; i < n_ref; i++)
	{
		keys[i] = ref[i].key;
		xid[i] = 3;
		t[i] = *ref[i].t;
	}
	tl_load_begin(&b, 500, &G, gen, (uint64_t) n_ref);
	for (int i = 0; i < n_ref; i += 64)
		tl_load_rows(&b, 500, n_ref - i < 64 ? n_ref - i : 64, keys + i, xid + i, NULL, t + i);
	tl_load_end(&b, 500);
	ok = tc_send(c, &b) && tc_await(c, 500, &f, 20000) == 1 && f.h.type == MCC_MSG_LOADED;
	eng_buf_free(&b);
	return ok;
}

/* Does the reply f to a SEARCH of probes p equal the brute force? */
static bool
same_as_reference(const tl_frame *f, int np, const tl_tpl *p, uint32_t k, float min_score)
{
	tl_result	r;
	tl_probe_result *want = malloc(sizeof(tl_probe_result));
	bool		ok = tl_parse_result(f, &r) && r.n == (uint32_t) np;

	for (int i = 0; ok && i < np; i++)
	{
		tl_reference(&p[i], ref, n_ref, k, min_score, want);
		ok = tl_same(&r.p[i], want);
	}
	tl_result_free(&r);
	free(want);
	return ok;
}

int
main(int argc, char **argv)
{
	bool		gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
	bool		have_gpu = false;
	const char *const args[] = {"--threads", "2", "--delta-timeout", "500",
		"--log-level", "debug", "--gpu", gpu ? "on" : "auto", NULL};
	tc_engine	e;
	tc_engine	e2;
	tc_conn		c;
	tc_conn		cs[4];
	eng_buf		b;
	tl_frame	f;
	struct stat st;
	uint64_t	inc;
	bool		ok;
	int			status;
	int64_t		key = 5000;

	mcc_lss_init();
	memset(&e, 0, sizeof(e));
	memset(&e2, 0, sizeof(e2));
	eng_buf_init(&b);
	gt = tl_templates(41, N, 20);
	pt = tl_templates(42, NP, 20);
	free(pt[0].b);
	pt[0] = (tl_tpl) {memcpy(malloc(gt[0].n), gt[0].b, gt[0].n), gt[0].n};
	for (int i = 0; i < N; i++)
	{
		ref[n_ref].key = i;
		ref[n_ref].t = &gt[i];
		ref[n_ref].live = true;
		n_ref++;
	}

	if (access(tc_engine_path(), X_OK) != 0)
	{
		UNIT_SKIP("%s not built", tc_engine_path());
		return unit_done();
	}
	if (gpu)
	{
		eng_gpu    *probe;

		eng_log_set_level(ENG_LOG_ERROR);
		probe = eng_gpu_start(ENG_GPU_AUTO, 0, 0, 1);
		have_gpu = probe != NULL;
		eng_gpu_stop(probe);
		printf("# engine with --gpu on; %s\n", have_gpu ? "a GPU is present" :
			   "no usable GPU here: the engine must serve on the CPU");
	}
	ok = tc_engine_start(&e, args);
	UNIT_CHECK(ok, "engine started, ready line with incarnation %llu",
			   (unsigned long long) e.incarnation);
	UNIT_CHECK(stat(e.sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
			   "socket exists with mode 0600");
	check_gpu_line(e.log, gpu ? have_gpu : -1);
	c = tc_connect(e.sock);
	tl_hello(&b, 1);
	UNIT_CHECK(c.fd >= 0 && tc_send(&c, &b) && tc_await(&c, 1, &f, 5000) == 1 &&
			   f.h.type == MCC_MSG_HELLO_OK && (memcpy(&inc, f.p, 8), inc == e.incarnation),
			   "HELLO_OK carries the ready line's incarnation");
	UNIT_CHECK(load(&c, 1), "a gallery of %d templates loaded over the socket", N);
	tl_search(&b, 2, &G, 1, 20, 0.0f, 4, pt);
	UNIT_CHECK(tc_send(&c, &b) && tc_await(&c, 2, &f, 20000) == 1 &&
			   same_as_reference(&f, 4, pt, 20, 0.0f), "SEARCH of 4 probes equals brute force");

	/* four connections search at once */
	ok = true;
	for (int i = 0; i < 4; i++)
	{
		cs[i] = tc_connect(e.sock);
		tl_search(&b, 10 + i, &G, 1, 15, 0.05f, 2, pt + 2 * i);
		ok = ok && cs[i].fd >= 0 && tc_send(&cs[i], &b);
	}
	for (int i = 0; i < 4; i++)
		ok = ok && tc_await(&cs[i], 10 + i, &f, 20000) == 1 &&
			same_as_reference(&f, 2, pt + 2 * i, 15, 0.05f);
	UNIT_CHECK(ok, "4 concurrent connections: every reply equals brute force");

	/* a delta sent on one connection, needed by a search on another */
	tl_delta(&b, &G, 2, 900, 1, &key, &pt[1], 0, NULL, NULL, false);
	ok = tc_send(&cs[0], &b);
	tl_search(&b, 20, &G, 2, 5, 0.0f, 1, &pt[1]);
	ok = ok && tc_send(&cs[1], &b) && tc_await(&cs[1], 20, &f, 20000) == 1;
	ref[n_ref].key = key;
	ref[n_ref].t = &pt[1];
	ref[n_ref].live = true;
	n_ref++;
	UNIT_CHECK(ok && same_as_reference(&f, 1, &pt[1], 5, 0.0f),
			   "a delta from one connection is applied before another's search");

	/* cancel: the waiting search would fail at 500 ms; cancelled, it never replies */
	tl_search(&b, 30, &G, 9, 5, 0.0f, 1, pt);
	tl_cancel(&b, 30);
	tl_search(&b, 31, &G, 2, 5, 0.0f, 1, pt);
	ok = tc_send(&c, &b) && tc_recv(&c, &f, 20000) == 1 && f.h.request_id == 31;
	ok = ok && tc_recv(&c, &f, 900) == 0;
	UNIT_CHECK(ok, "a cancelled search gets no reply; the next one does");

	/* STATUS over the socket */
	tl_empty(&b, MCC_MSG_STATUS, 40);
	UNIT_CHECK(tc_send(&c, &b) && tc_await(&c, 40, &f, 5000) == 1 &&
			   f.h.type == MCC_MSG_STATUS_REPLY && f.h.length == 4 + 124,
			   "STATUS lists the gallery");
	if (gpu && f.h.type == MCC_MSG_STATUS_REPLY && f.h.length == 4 + 124)
	{
		char		dev[33] = {0};
		uint64_t	dbytes;

		memcpy(&dbytes, f.p + 4 + 60, 8);
		memcpy(dev, f.p + 4 + 92, 32);
		if (have_gpu)
			UNIT_CHECK(strcmp(dev, "cpu") != 0 && dbytes > 0,
					   "STATUS: the gallery is on the GPU (%s, %llu device bytes)", dev,
					   (unsigned long long) dbytes);
		else
			UNIT_CHECK(strcmp(dev, "cpu") == 0 && dbytes == 0,
					   "STATUS: no GPU, the gallery is on the CPU");
	}

	/* kill -9 while a search waits: the client sees EOF, not a hang */
	tl_search(&b, 50, &G, 99, 5, 0.0f, 1, pt);
	ok = tc_send(&c, &b) && tc_recv(&c, &f, 200) == 0;
	kill(e.pid, SIGKILL);
	{
		int			r;

		/* (on a slow machine the delta timeout may answer first: skip that) */
		while ((r = tc_recv(&c, &f, 5000)) == 1)
			;
		UNIT_CHECK(ok && r == -1, "engine killed mid-request: the client gets EOF");
	}
	status = tc_engine_wait(&e, 5000);
	UNIT_CHECK(status != -1 && WIFSIGNALED(status), "the engine died of SIGKILL");
	tc_close(&c);
	for (int i = 0; i < 4; i++)
		tc_close(&cs[i]);

	/* restart over the stale socket: works, with a new incarnation and no caches */
	inc = e.incarnation;
	UNIT_CHECK(tc_engine_start(&e, args) && e.incarnation != inc,
			   "restarted over the stale socket (new incarnation)");
	c = tc_connect(e.sock);
	tl_search(&b, 60, &G, 1, 5, 0.0f, 1, pt);
	UNIT_CHECK(tc_send(&c, &b) && tc_await(&c, 60, &f, 5000) == 1 &&
			   tl_error_code(&f) == MCC_PERR_NOT_LOADED, "the new engine has no cache: NOT_LOADED");
	UNIT_CHECK(load(&c, 2), "reload after the restart");
	tl_search(&b, 61, &G, 2, 10, 0.0f, 2, pt);
	UNIT_CHECK(tc_send(&c, &b) && tc_await(&c, 61, &f, 20000) == 1 &&
			   same_as_reference(&f, 2, pt, 10, 0.0f), "the next request works");

	/* a second engine on the same path refuses to start */
	strcpy(e2.dir, e.dir);
	UNIT_CHECK(!tc_engine_start(&e2, args) && WIFEXITED(tc_engine_wait(&e2, 5000)),
			   "a second engine on a live socket exits");

	/* the supervisor's pipe closes: the engine exits and removes its socket */
	close(e.parent_wr);
	e.parent_wr = open("/dev/null", O_RDONLY);
	status = tc_engine_wait(&e, 5000);
	UNIT_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			   access(e.sock, F_OK) != 0, "parent pipe EOF: clean exit, socket removed");
	UNIT_CHECK(tc_recv(&c, &f, 2000) == -1, "its client sees EOF");
	tc_close(&c);

	/* SIGTERM: clean exit */
	UNIT_CHECK(tc_engine_start(&e, args), "started again");
	kill(e.pid, SIGTERM);
	status = tc_engine_wait(&e, 5000);
	UNIT_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			   access(e.sock, F_OK) != 0, "SIGTERM: clean exit, socket removed");
	if (getenv("MCC_ENGINE_TEST_LOG"))
	{
		char		cmd[200];

		snprintf(cmd, sizeof(cmd), "sed 's/^/# /' '%s'", e.log);
		if (system(cmd) != 0)
			printf("# no log\n");
	}
	tc_engine_cleanup(&e);
	eng_buf_free(&b);
	tl_templates_free(gt, N);
	tl_templates_free(pt, NP);
	return unit_done();
}
