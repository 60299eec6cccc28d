/*
 * eng_main.c: the mcc_engine program.
 *
 *   mcc_engine --socket PATH [--ready-fd N] [--parent-fd N] [--threads T]
 *              [--memory-limit BYTES] [--log-level L] [--delta-timeout MS]
 *              [--max-batch N] [--gpu auto|off|on] [--gpu-memory-limit BYTES]
 *              [--gpu-partitions N] [--gpu-refine on|off]
 *              [--image-threads N] [--image-queue N]
 *
 * Listens on a UNIX socket (mode 0600; a stale socket file is replaced),
 * writes "ready <incarnation>\n" to the ready fd, and serves until SIGTERM
 * or SIGINT, or until the parent fd (the supervisor's pipe) reaches EOF.
 * The supervisor forwards stderr, the log, to the PostgreSQL log. Built with
 * nvcc, searches of gpu2015 galleries run on every visible GPU (eng_gpu.h)
 * unless --gpu off, and so does the rescoring of refining searches' shortlists
 * unless --gpu-refine off (benchmarks: the CPU threads rescore); this process
 * is the only one of mcc that touches CUDA.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "eng_log.h"
#include "eng_server.h"
#include "eng_snapshot.h"

static int	signal_pipe[2] = {-1, -1};

/* SIGTERM/SIGINT/SIGUSR1: wake the poll loop through the self-pipe (one byte, the signal's number). */
static void
on_signal(int sig)
{
	int			save = errno;
	char		b = (char) sig;
	ssize_t		w = write(signal_pipe[1], &b, 1);

	(void) w;
	errno = save;
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: mcc_engine --socket PATH [--ready-fd N] [--parent-fd N] [--threads T]\n"
			"                  [--memory-limit BYTES] [--log-level error|warning|info|debug]\n"
			"                  [--delta-timeout MS] [--max-batch N] [--gpu auto|off|on]\n"
			"                  [--gpu-memory-limit BYTES] [--gpu-partitions N]\n"
			"                  [--gpu-refine on|off]\n"
			"                  [--image-threads N] [--image-queue N]\n"
			"                  [--snapshot-dir DIR] [--system-id N]\n");
}

/* Parse a non-negative integer with an optional k/M/G (1024-based) suffix. */
static bool
parse_size(const char *s, uint64_t *out)
{
	char	   *end;
	unsigned long long v;
	uint64_t	mult = 1;

	errno = 0;
	if (*s == '-')
		return false;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return false;
	if (*end == 'k' || *end == 'K')
		mult = UINT64_C(1) << 10;
	else if (*end == 'M')
		mult = UINT64_C(1) << 20;
	else if (*end == 'G')
		mult = UINT64_C(1) << 30;
	else if (*end != '\0')
		return false;
	if (mult != 1 && (end[1] != '\0' && strcmp(end + 1, "B") != 0))
		return false;
	if (v > UINT64_MAX / mult)
		return false;
	*out = (uint64_t) v * mult;
	return true;
}

/* Parse --gpu's value. */
static bool
parse_gpu_mode(const char *s, eng_gpu_mode *out)
{
	if (strcmp(s, "auto") == 0)
		*out = ENG_GPU_AUTO;
	else if (strcmp(s, "off") == 0)
		*out = ENG_GPU_OFF;
	else if (strcmp(s, "on") == 0)
		*out = ENG_GPU_ON;
	else
		return false;
	return true;
}

/* Parse a small integer in [lo, hi]. */
static bool
parse_int(const char *s, long lo, long hi, long *out)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/*
 * Bind and listen on path with mode 0600. A socket file nobody listens on is
 * removed first; a live engine on the same path is an error.
 */
static int
listen_on(const char *path)
{
	struct sockaddr_un addr;
	struct stat st;
	mode_t		old;
	int			fd;

	if (strlen(path) >= sizeof(addr.sun_path))
	{
		eng_log(ENG_LOG_ERROR, "socket path \"%s\" is too long", path);
		return -1;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	strcpy(addr.sun_path, path);
	if (lstat(path, &st) == 0)
	{
		if (!S_ISSOCK(st.st_mode))
		{
			eng_log(ENG_LOG_ERROR, "\"%s\" exists and is not a socket", path);
			return -1;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *) &addr, sizeof(addr)) == 0)
		{
			close(fd);
			eng_log(ENG_LOG_ERROR, "another engine is listening on \"%s\"", path);
			return -1;
		}
		if (fd >= 0)
			close(fd);
		if (unlink(path) != 0)
		{
			eng_log(ENG_LOG_ERROR, "could not remove stale socket \"%s\": %s", path,
					strerror(errno));
			return -1;
		}
		eng_log(ENG_LOG_INFO, "removed stale socket \"%s\"", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
	{
		eng_log(ENG_LOG_ERROR, "could not create socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0077);
	if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) != 0)
	{
		umask(old);
		eng_log(ENG_LOG_ERROR, "could not bind \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	if (chmod(path, 0600) != 0 || listen(fd, 256) != 0)
	{
		eng_log(ENG_LOG_ERROR, "could not listen on \"%s\": %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

/* Route SIGTERM, SIGINT and SIGUSR1 (log the totals so far) to the self-pipe; ignore SIGPIPE. */
static bool
setup_signals(void)
{
	struct sigaction sa;

	if (pipe(signal_pipe) != 0)
		return false;
	fcntl(signal_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(signal_pipe[1], F_SETFD, FD_CLOEXEC);
	fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	return true;
}

/* The command line's values that are not the server's configuration. */
typedef struct eng_args
{
	const char *socket_path;
	long		ready_fd;
	long		parent_fd;
} eng_args;

/* Option a with its value val (NULL: none follows) into cfg or args; false if invalid. */
static bool
parse_option(const char *a, const char *val, eng_config *cfg, eng_args *args)
{
	long		v;
	bool		ok = val != NULL;

	if (ok && strcmp(a, "--socket") == 0)
		args->socket_path = val;
	else if (ok && strcmp(a, "--ready-fd") == 0)
		ok = parse_int(val, 0, 1 << 20, &args->ready_fd);
	else if (ok && strcmp(a, "--parent-fd") == 0)
		ok = parse_int(val, 0, 1 << 20, &args->parent_fd);
	else if (ok && strcmp(a, "--threads") == 0)
		ok = parse_int(val, 0, 1024, &v) && ((cfg->threads = (int) v), true);
	else if (ok && strcmp(a, "--memory-limit") == 0)
		ok = parse_size(val, &cfg->memory_limit);
	else if (ok && strcmp(a, "--log-level") == 0)
		ok = (v = eng_log_parse_level(val)) >= 0 && (eng_log_set_level((eng_log_level) v), true);
	else if (ok && strcmp(a, "--delta-timeout") == 0)
		ok = parse_int(val, 0, 3600 * 1000, &v) && ((cfg->delta_timeout_ms = (int) v), true);
	else if (ok && strcmp(a, "--max-batch") == 0)
		ok = parse_int(val, 1, 1 << 20, &v) && ((cfg->max_batch = (uint32_t) v), true);
	else if (ok && strcmp(a, "--gpu") == 0)
		ok = parse_gpu_mode(val, &cfg->gpu);
	else if (ok && strcmp(a, "--gpu-memory-limit") == 0)
		ok = parse_size(val, &cfg->gpu_memory_limit);
	else if (ok && strcmp(a, "--gpu-partitions") == 0)
		ok = parse_int(val, 0, 16, &v) && ((cfg->gpu_partitions = (int) v), true);
	else if (ok && strcmp(a, "--gpu-refine") == 0)
		ok = (strcmp(val, "on") == 0 || strcmp(val, "off") == 0) &&
			((cfg->gpu_refine_off = strcmp(val, "off") == 0), true);
	else if (ok && strcmp(a, "--image-threads") == 0)
		ok = parse_int(val, 0, 1024, &v) && ((cfg->image_threads = (int) v), true);
	else if (ok && strcmp(a, "--image-queue") == 0)
		ok = parse_int(val, 0, 1 << 20, &v) && ((cfg->image_queue = (uint32_t) v), true);
	else if (ok && strcmp(a, "--snapshot-dir") == 0)
		cfg->snapshot_dir = val;
	else if (ok && strcmp(a, "--system-id") == 0)
	{
		char	   *end;

		errno = 0;
		cfg->system_id = strtoull(val, &end, 10);
		ok = errno == 0 && end != val && *end == '\0';
	}
	else
		ok = false;
	return ok;
}

/* Tell the supervisor on ready_fd that the engine listens (if it asked). */
static void
say_ready(long ready_fd, uint64_t incarnation)
{
	char		line[64];
	int			n;

	if (ready_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "ready %llu\n", (unsigned long long) incarnation);
	if (write((int) ready_fd, line, (size_t) n) != n)
		eng_log(ENG_LOG_WARNING, "could not write the ready line: %s", strerror(errno));
	close((int) ready_fd);
}

int
main(int argc, char **argv)
{
	eng_args	args = {NULL, -1, -1};
	eng_config	cfg = {.threads = 0, .memory_limit = 0, .delta_timeout_ms = 5000,
	.max_batch = 64, .gpu = ENG_GPU_AUTO};
	eng_server	s;
	int			rc;

	for (int i = 1; i < argc; i += 2)
		if (!parse_option(argv[i], i + 1 < argc ? argv[i + 1] : NULL, &cfg, &args))
		{
			fprintf(stderr, "mcc_engine: invalid argument \"%s\"\n", argv[i]);
			usage();
			return 2;
		}
	if (args.socket_path == NULL)
	{
		usage();
		return 2;
	}
	if (cfg.threads == 0)
	{
		long		n = sysconf(_SC_NPROCESSORS_ONLN);

		cfg.threads = n > 0 ? (int) n : 1;
	}
	if (args.parent_fd >= 0)
		fcntl((int) args.parent_fd, F_SETFL, fcntl((int) args.parent_fd, F_GETFL) | O_NONBLOCK);
	if (!setup_signals())
	{
		eng_log(ENG_LOG_ERROR, "could not create the signal pipe: %s", strerror(errno));
		return 1;
	}
	if (!eng_server_init(&s, &cfg))
	{
		eng_log(ENG_LOG_ERROR, "could not start %d threads", cfg.threads);
		return 1;
	}
	eng_snapshot_init(&s);
	s.listen_fd = listen_on(args.socket_path);
	if (s.listen_fd < 0)
	{
		eng_server_destroy(&s);
		return 1;
	}
	/* GPU or CPU threads is said once, by eng_gpu_start (test_engine_e2e counts it) */
	eng_log(ENG_LOG_INFO,
			"listening on \"%s\": %d threads, %d image threads (at most %u image jobs), "
			"memory limit %llu bytes, kernel %s, %s, incarnation %llu",
			args.socket_path, cfg.threads, s.cfg.image_threads, s.cfg.image_queue,
			(unsigned long long) cfg.memory_limit,
			mcc_soa_kernel_name(), s.gpu ? "with the GPU" : "CPU only",
			(unsigned long long) s.incarnation);
	say_ready(args.ready_fd, s.incarnation);
	rc = eng_server_run(&s, (int) args.parent_fd, signal_pipe[0]);
	eng_server_fail_all(&s, "matcher engine is shutting down");
	eng_snapshot_shutdown(&s);
	unlink(args.socket_path);
	eng_server_destroy(&s);
	eng_log(ENG_LOG_INFO, "exited");
	return rc;
}
