/*
 * service_supervisor.c: the "mcc supervisor" background worker.
 *
 * It has shared-memory access and no database connection. It starts
 * $libdir/mcc_engine (fork + exec: the engine is a plain C program, not
 * attached to shared memory, so its crash never forces a cluster restart),
 * forwards the engine's stderr lines to the server log, publishes READY and
 * the engine's launch number once the engine writes its ready line, restarts
 * the engine with back-off when it exits, and stops it on SIGTERM or
 * postmaster death. The engine also watches a pipe from the supervisor and
 * exits when it closes, so no engine outlives its supervisor. The engine's
 * command line is described in src/proto/mcc_proto.h. On a primary it also
 * starts the change log's pruning on schedule (src/service/service_prune.c).
 */
#include "mcc_pg.h"
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"

#define ENGINE_NAME			"mcc_engine"
#define READY_TIMEOUT_MS	60000	/* engine start to ready line */
#define STOP_TIMEOUT_MS		5000	/* SIGTERM to SIGKILL */
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		10000
#define STABLE_RUN_MS		30000	/* a run this long resets the back-off */
#define ENGINE_READY_FD		3		/* descriptor numbers in the engine */
#define ENGINE_PARENT_FD	4

PGDLLEXPORT void mcc_supervisor_main(Datum arg);

/* The running engine, if any. */
typedef struct engine_proc
{
	pid_t		pid;			/* 0: none */
	int			ready_fd;		/* read end of the ready pipe, -1 once ready */
	int			log_fd;			/* read end of the engine's stderr, -1 at EOF */
	int			parent_fd;		/* write end the engine watches */
	TimestampTz started;
	StringInfoData ready_buf;
	StringInfoData log_buf;
} engine_proc;

static engine_proc engine = {0, -1, -1, -1};
static volatile sig_atomic_t got_sigterm = false;
static volatile sig_atomic_t got_sigchld = false;

/* SIGTERM: stop the engine and exit; SIGCHLD: the engine may have exited. */
static void
supervisor_signal(SIGNAL_ARGS)
{
	int			save_errno = errno;

	if (postgres_signal_arg == SIGTERM)
		got_sigterm = true;
	else
		got_sigchld = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* Publish the service state (and with READY, the incarnation). */
static void
set_state(mcc_service_state st, uint64 incarnation)
{
	SpinLockAcquire(&mcc_svc->mutex);
	pg_atomic_write_u32(&mcc_svc->state, st);
	if (st == MCC_SVC_READY)
	{
		mcc_svc->incarnation = incarnation;
		mcc_svc->ready_since = GetCurrentTimestamp();
	}
	mcc_svc->engine_pid = engine.pid;
	SpinLockRelease(&mcc_svc->mutex);
}

/* Close fd if open and mark it closed. */
static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Log every complete line in buf (the rest waits for more bytes). */
static void
log_lines(StringInfo buf, bool flush)
{
	char	   *start = buf->data;
	char	   *nl;

	while ((nl = memchr(start, '\n', buf->len - (start - buf->data))) != NULL)
	{
		*nl = '\0';
		if (nl > start)
			ereport(LOG, (errmsg("%s", start)));
		start = nl + 1;
	}
	if (flush && start < buf->data + buf->len)
	{
		ereport(LOG, (errmsg("%s", start)));
		start = buf->data + buf->len;
	}
	memmove(buf->data, start, buf->len - (start - buf->data));
	buf->len -= start - buf->data;
	buf->data[buf->len] = '\0';
}

/* Read what fd has into buf; false at EOF or error. */
static bool
drain_fd(int fd, StringInfo buf)
{
	for (;;)
	{
		ssize_t		n;

		enlargeStringInfo(buf, 4096);
		n = read(fd, buf->data + buf->len, buf->maxlen - buf->len - 1);
		if (n > 0)
		{
			buf->len += n;
			buf->data[buf->len] = '\0';
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
}

/* Forward the engine's stderr. */
static void
forward_log(void)
{
	bool		open = drain_fd(engine.log_fd, &engine.log_buf);

	log_lines(&engine.log_buf, !open);
	if (!open)
		close_fd(&engine.log_fd);
}

/* Read the ready line: "ready [incarnation]". */
static void
read_ready(void)
{
	bool		open = drain_fd(engine.ready_fd, &engine.ready_buf);
	char	   *nl = strchr(engine.ready_buf.data, '\n');

	if (nl != NULL && strncmp(engine.ready_buf.data, "ready", 5) == 0)
	{
		uint64		incarnation = strtou64(engine.ready_buf.data + 5, NULL, 10);

		close_fd(&engine.ready_fd);
		set_state(MCC_SVC_READY, incarnation);
		ereport(LOG,
				(errmsg("matcher engine ready (pid %d, incarnation " UINT64_FORMAT ")",
						(int) engine.pid, incarnation)));
		return;
	}
	if (nl != NULL || !open)
	{
		/* no ready line: the engine failed; its exit is reaped below */
		close_fd(&engine.ready_fd);
		ereport(LOG, (errmsg("matcher engine did not report ready")));
		kill(engine.pid, SIGKILL);
	}
}

/* Make fd non-blocking. */
static void
set_nonblock(int fd)
{
	int			flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		ereport(ERROR, (errmsg("could not make a pipe non-blocking: %m")));
}

/*
 * In the forked child: descriptors 0..4 as the engine expects them, every
 * other descriptor closed, default signal handling, a session of its own
 * (signals aimed at the server's process group do not reach it). Only
 * async-signal-safe calls from here on.
 */
static void
exec_engine(char **argv, int ready_w, int parent_r, int log_w)
{
	sigset_t	all;
	int			devnull;
	int			sig;
	int			r;
	int			p;
	int			l;
	static const char msg[] = "mcc_engine: could not be executed\n";

	/* move the pipe ends above 4 first so the dup2 calls cannot clobber them */
	r = fcntl(ready_w, F_DUPFD, 10);
	p = fcntl(parent_r, F_DUPFD, 10);
	l = fcntl(log_w, F_DUPFD, 10);
	devnull = open("/dev/null", O_RDONLY);
	if (r < 0 || p < 0 || l < 0 || devnull < 0 ||
		dup2(devnull, 0) < 0 || dup2(l, 1) < 0 || dup2(l, 2) < 0 ||
		dup2(r, ENGINE_READY_FD) < 0 || dup2(p, ENGINE_PARENT_FD) < 0)
		_exit(126);
	closefrom(ENGINE_PARENT_FD + 1);
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	setsid();
	execv(argv[0], argv);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(127);
	_exit(127);
}

/* The engine's argument vector. */
static char **
engine_argv(void)
{
	char		libdir[MAXPGPATH];
	char	  **argv = palloc0(sizeof(char *) * 24);
	int			n = 0;

	get_pkglib_path(my_exec_path, libdir);
	argv[n++] = psprintf("%s/%s", libdir, ENGINE_NAME);
	argv[n++] = "--socket";
	argv[n++] = mcc_svc->socket_path;
	argv[n++] = "--ready-fd";
	argv[n++] = psprintf("%d", ENGINE_READY_FD);
	argv[n++] = "--parent-fd";
	argv[n++] = psprintf("%d", ENGINE_PARENT_FD);
	argv[n++] = "--threads";
	argv[n++] = psprintf("%d", mcc_worker_threads);
	argv[n++] = "--memory-limit";
	argv[n++] = psprintf(UINT64_FORMAT, (uint64) mcc_cache_memory_limit * 1024 * 1024);
	argv[n++] = "--image-threads";
	argv[n++] = psprintf("%d", mcc_image_worker_threads);
	argv[n++] = "--image-queue";
	argv[n++] = psprintf("%d", mcc_image_queue_limit);
	if (mcc_cache_snapshots)
	{
		/* cache snapshots (docs/matcher-service.md): in the data directory */
		argv[n++] = "--snapshot-dir";
		argv[n++] = psprintf("%s/mcc", DataDir);
		argv[n++] = "--system-id";
		argv[n++] = psprintf(UINT64_FORMAT, GetSystemIdentifier());
	}
	argv[n] = NULL;
	return argv;
}

/* A pipe whose ends close on exec (the child dup2s the ones it passes on). */
static bool
cloexec_pipe(int fds[2])
{
	if (pipe(fds) < 0)
		return false;
	return fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 && fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0;
}

/* Start the engine. */
static void
launch_engine(void)
{
	char	  **argv = engine_argv();
	int			ready[2];
	int			parent[2];
	int			log[2];
	pid_t		pid;

	/* a socket left by a dead engine would make its successor's bind fail */
	unlink(mcc_svc->socket_path);
	if (!cloexec_pipe(ready) || !cloexec_pipe(parent) || !cloexec_pipe(log))
		ereport(ERROR, (errmsg("could not create pipes for the matcher engine: %m")));
	pid = fork();
	if (pid < 0)
		ereport(ERROR, (errmsg("could not fork the matcher engine: %m")));
	if (pid == 0)
		exec_engine(argv, ready[1], parent[0], log[1]);

	close(ready[1]);
	close(parent[0]);
	close(log[1]);
	engine.pid = pid;
	engine.ready_fd = ready[0];
	engine.log_fd = log[0];
	engine.parent_fd = parent[1];
	engine.started = GetCurrentTimestamp();
	resetStringInfo(&engine.ready_buf);
	resetStringInfo(&engine.log_buf);
	set_nonblock(engine.ready_fd);
	set_nonblock(engine.log_fd);

	SpinLockAcquire(&mcc_svc->mutex);
	if (mcc_svc->launch > 0)
		mcc_svc->restarts++;
	mcc_svc->launch++;
	SpinLockRelease(&mcc_svc->mutex);
	set_state(MCC_SVC_STARTING, 0);
	ereport(LOG, (errmsg("matcher engine started: %s (pid %d)", argv[0], (int) pid)));
}

/* Describe a wait status for the log. */
static char *
exit_text(int status)
{
	if (WIFEXITED(status))
		return psprintf("exited with exit code %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return psprintf("was terminated by signal %d: %s", WTERMSIG(status),
						pg_strsignal(WTERMSIG(status)));
	return psprintf("exited with status %d", status);
}

/* Forget the engine after it exited. */
static void
engine_gone(int status)
{
	if (engine.log_fd >= 0)
		forward_log();
	close_fd(&engine.log_fd);
	close_fd(&engine.ready_fd);
	close_fd(&engine.parent_fd);
	ereport(LOG, (errmsg("matcher engine (pid %d) %s", (int) engine.pid, exit_text(status))));
	engine.pid = 0;
	unlink(mcc_svc->socket_path);
	set_state(MCC_SVC_BACKOFF, 0);
}

/* Reap the engine if it exited; true if it did. */
static bool
reap_engine(void)
{
	int			status;
	pid_t		r;

	if (engine.pid == 0)
		return false;
	r = waitpid(engine.pid, &status, WNOHANG);
	if (r != engine.pid)
		return false;
	engine_gone(status);
	return true;
}

/* Stop the engine: SIGTERM, then SIGKILL if it lingers. */
static void
stop_engine(void)
{
	int			waited = 0;

	if (engine.pid == 0)
		return;
	kill(engine.pid, SIGTERM);
	while (!reap_engine())
	{
		if (waited >= STOP_TIMEOUT_MS)
		{
			kill(engine.pid, SIGKILL);
			waited = -1000000;
		}
		pg_usleep(10000L);
		waited += 10;
	}
}

/* on_shmem_exit: never leave an engine behind. */
static void
supervisor_exit(int code, Datum arg)
{
	if (engine.pid != 0)
	{
		kill(engine.pid, SIGKILL);
		waitpid(engine.pid, NULL, 0);
		engine.pid = 0;
	}
	if (mcc_svc != NULL)
	{
		set_state(MCC_SVC_ABSENT, 0);
		SpinLockAcquire(&mcc_svc->mutex);
		mcc_svc->supervisor_pid = 0;
		SpinLockRelease(&mcc_svc->mutex);
	}
}

/* Wait for the latch, the engine's pipes or timeout_ms. */
static void
wait_events(long timeout_ms)
{
	WaitEventSet *set = CreateWaitEventSet(CurrentMemoryContext, 4);
	WaitEvent	ev[4];
	int			n;
	int			i;

	AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	if (engine.log_fd >= 0)
		AddWaitEventToSet(set, WL_SOCKET_READABLE, engine.log_fd, NULL, NULL);
	if (engine.ready_fd >= 0)
		AddWaitEventToSet(set, WL_SOCKET_READABLE, engine.ready_fd, NULL, NULL);
	n = WaitEventSetWait(set, timeout_ms, ev, lengthof(ev), PG_WAIT_EXTENSION);
	FreeWaitEventSet(set);
	for (i = 0; i < n; i++)
	{
		if (ev[i].events & WL_LATCH_SET)
			ResetLatch(MyLatch);
		else if (ev[i].fd == engine.log_fd && engine.log_fd >= 0)
			forward_log();
		else if (ev[i].fd == engine.ready_fd && engine.ready_fd >= 0)
			read_ready();
	}
}

/* Milliseconds from now to t, at least 0. */
static long
ms_until(TimestampTz t)
{
	long		ms = (long) ((t - GetCurrentTimestamp()) / 1000);

	return Max(ms, 0);
}

/* The supervisor's main loop. */
void
mcc_supervisor_main(Datum arg)
{
	TimestampTz next_launch = 0;
	int			backoff_ms = BACKOFF_MIN_MS;

	pqsignal(SIGTERM, supervisor_signal);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGCHLD, supervisor_signal);
	BackgroundWorkerUnblockSignals();
	if (mcc_svc == NULL)
		ereport(ERROR, (errmsg("mcc supervisor started without mcc shared memory")));
	initStringInfo(&engine.ready_buf);
	initStringInfo(&engine.log_buf);
	on_shmem_exit(supervisor_exit, (Datum) 0);
	SpinLockAcquire(&mcc_svc->mutex);
	mcc_svc->supervisor_pid = MyProcPid;
	SpinLockRelease(&mcc_svc->mutex);
	set_state(MCC_SVC_BACKOFF, 0);

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		long		timeout = 1000;

		if (got_sigterm)
		{
			stop_engine();
			proc_exit(1);		/* 1: restarted if someone terminated us by hand */
		}
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (got_sigchld)
		{
			got_sigchld = false;
			if (reap_engine())
			{
				if (TimestampDifferenceExceeds(engine.started, now, STABLE_RUN_MS))
					backoff_ms = BACKOFF_MIN_MS;
				next_launch = TimestampTzPlusMilliseconds(now, backoff_ms);
				backoff_ms = Min(backoff_ms * 2, BACKOFF_MAX_MS);
			}
		}
		if (engine.pid == 0 && now >= next_launch)
			launch_engine();
		if (engine.pid == 0)
			timeout = Min(timeout, ms_until(next_launch));
		else if (engine.ready_fd >= 0)
		{
			TimestampTz deadline = TimestampTzPlusMilliseconds(engine.started, READY_TIMEOUT_MS);

			if (now >= deadline)
			{
				ereport(LOG, (errmsg("matcher engine did not become ready in %d ms", READY_TIMEOUT_MS)));
				close_fd(&engine.ready_fd);
				kill(engine.pid, SIGKILL);
			}
			else
				timeout = Min(timeout, ms_until(deadline));
		}
		timeout = Min(timeout, mcc_prune_tick());	/* src/service/service_prune.c */
		wait_events(timeout);
	}
}
