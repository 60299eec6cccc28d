/*
 * service_guc.c: the matcher service's configuration parameters (defined
 * from mcc_service_init, service_init.c).
 *
 * Parameters a session may change are defined in every process that loads
 * the module. Those that size shared memory or configure the engine
 * (PGC_POSTMASTER) exist only when mcc is in shared_preload_libraries:
 * PostgreSQL refuses to create them later, and without preload there is no
 * service for them to configure.
 */
#include "mcc_pg.h"
#include "service.h"
#include "service_timing.h"

#include "utils/guc.h"

bool		mcc_service_enabled = true;
bool		mcc_refine_in_engine = true;
int			mcc_fallback = MCC_FALLBACK_CPU;
int			mcc_cache_memory_limit = 4096;
int			mcc_request_timeout = 30000;
int			mcc_worker_threads = 0;
int			mcc_max_delta_rows = 10000;
int			mcc_max_galleries = 64;
int			mcc_image_worker_threads = 0;
int			mcc_image_queue_limit = 0;
bool		mcc_cache_snapshots = true;
int			mcc_progress_interval = 5000;
int			mcc_load_workers = -1;
int			mcc_change_log_prune_interval = 60;
int			mcc_change_log_retention = 600;

static const struct config_enum_entry fallback_options[] = {
	{"cpu", MCC_FALLBACK_CPU, false},
	{"notice", MCC_FALLBACK_NOTICE, false},
	{"error", MCC_FALLBACK_ERROR, false},
	{NULL, 0, false}
};

/*
 * One parameter: its name, descriptions, variable (boolean, integer, or
 * enum when options is set), range, context and flags. The boot value is
 * the variable's initial value above, so each default is written once.
 */
typedef struct guc_def
{
	const char *name;
	const char *short_desc;
	const char *long_desc;
	bool	   *bool_var;
	int		   *int_var;
	int			min;
	int			max;
	const struct config_enum_entry *options;
	GucContext	context;
	int			flags;
} guc_def;

/* Parameters any session may set. */
static const guc_def session_gucs[] = {
	{.name = "mcc.service",
		.short_desc = "Lets identify() use the matcher service.",
		.long_desc = "When off, identify() scans the gallery in the backend. "
		"Writers keep the service's caches current either way.",
		.bool_var = &mcc_service_enabled, .context = PGC_USERSET},
	{.name = "mcc.refine_in_engine",
		.short_desc = "Lets the matcher engine refine identify()'s shortlists from its cache.",
		.long_desc = "When off, the backend re-checks every shortlisted row, reads "
		"its template and sends it to the engine to be rescored "
		"(the same answer, more work).",
		.bool_var = &mcc_refine_in_engine, .context = PGC_USERSET},
	{.name = "mcc.fallback",
		.short_desc = "What identify() does when the matcher service cannot serve it.",
		.long_desc = "cpu: scan in the backend; notice: the same with a NOTICE "
		"saying why; error: raise an ERROR saying why.",
		.int_var = &mcc_fallback, .options = fallback_options, .context = PGC_USERSET},
	{.name = "mcc.load_workers",
		.short_desc = "Parallel workers that read a gallery for a full load.",
		.long_desc = "-1: one per 4 CPUs of the machine, at most 8 (none below 8 CPUs); "
		"0 reads in the loading backend alone. Galleries whose heaps are "
		"smaller than min_parallel_table_scan_size load serially; "
		"max_parallel_workers and max_worker_processes bound the "
		"workers started.",
		.int_var = &mcc_load_workers, .min = -1, .max = 64, .context = PGC_USERSET},
	{.name = "mcc.request_timeout",
		.short_desc = "How long a backend waits for one reply of the matcher engine.",
		.long_desc = "0 waits without limit (statement_timeout still applies). "
		"On expiry mcc.fallback decides.",
		.int_var = &mcc_request_timeout, .min = 0, .max = INT_MAX,
		.context = PGC_USERSET, .flags = GUC_UNIT_MS},
	{.name = "mcc.max_delta_rows",
		.short_desc = "Most changed rows of one gallery a transaction sends to the "
		"matcher engine as a delta.",
		.long_desc = "A transaction that changes more rows marks the cache for a "
		"full reload instead.",
		.int_var = &mcc_max_delta_rows, .min = 0, .max = INT_MAX / 2, .context = PGC_USERSET},
	{.name = "mcc.log_identify_timing",
		.short_desc = "Logs where each identify() through the matcher service spent its time in the backend.",
		.long_desc = "One LOG line per call: the gallery, its relations, the whole "
		"time and each stage's (checks, connection, request, waiting for "
		"the engine, reading and judging the reply, re-checks, settling).",
		.bool_var = &mcc_log_identify_timing, .context = PGC_SUSET},
	{.name = "mcc.progress_interval",
		.short_desc = "How often a long maintenance call reports its progress.",
		.long_desc = "An interactive mcc_gallery_preload() sends a NOTICE this often "
		"(if client_min_messages lets NOTICEs through); 0 after every "
		"step, -1 never. mcc_gallery_status shows the progress anyway.",
		.int_var = &mcc_progress_interval, .min = -1, .max = INT_MAX,
		.context = PGC_USERSET, .flags = GUC_UNIT_MS},
};

/* Parameters fixed at server start (or, PGC_SIGHUP, at a reload). */
static const guc_def server_gucs[] = {
	{.name = "mcc.cache_memory_limit",
		.short_desc = "Memory the matcher engine may use for gallery caches.",
		.long_desc = "0 means no limit. A load beyond the limit fails and "
		"mcc.fallback decides.",
		.int_var = &mcc_cache_memory_limit, .min = 0, .max = INT_MAX,
		.context = PGC_POSTMASTER, .flags = GUC_UNIT_MB},
	{.name = "mcc.worker_threads",
		.short_desc = "Scan threads of the matcher engine.",
		.long_desc = "0 starts one per CPU.",
		.int_var = &mcc_worker_threads, .min = 0, .max = 1024, .context = PGC_POSTMASTER},
	{.name = "mcc.max_galleries",
		.short_desc = "Galleries the matcher service tracks at once.",
		.long_desc = "When all are tracked, a gallery takes the slot of the one of "
		"lowest priority at or below its own, least recently used first.",
		.int_var = &mcc_max_galleries, .min = 1, .max = 100000, .context = PGC_POSTMASTER},
	{.name = "mcc.image_worker_threads",
		.short_desc = "Threads of the matcher engine for image and point jobs.",
		.long_desc = "Apart from the scan threads, at a lower scheduling priority, so "
		"that image jobs never hold up identify(). 0: half of "
		"mcc.worker_threads, at least 1.",
		.int_var = &mcc_image_worker_threads, .min = 0, .max = 1024, .context = PGC_POSTMASTER},
	{.name = "mcc.change_log_prune_interval",
		.short_desc = "How often the supervisor prunes the change logs of hot standbys.",
		.long_desc = "On a primary it removes the entries no standby needs any more "
		"(mcc_change_log_prune()). 0 turns automatic pruning off.",
		.int_var = &mcc_change_log_prune_interval, .min = 0, .max = INT_MAX / 1000,
		.context = PGC_SIGHUP, .flags = GUC_UNIT_S},
	{.name = "mcc.change_log_retention",
		.short_desc = "How long change log entries stay for hot standbys without a "
		"replication slot.",
		.long_desc = "Entries a physical replication slot's standby has not replayed "
		"stay longer; a standby that lacks a pruned entry reloads its cache.",
		.int_var = &mcc_change_log_retention, .min = 0, .max = INT_MAX / 1000,
		.context = PGC_SIGHUP, .flags = GUC_UNIT_S},
	{.name = "mcc.cache_snapshots",
		.short_desc = "Keeps snapshots of the gallery caches on disk, to serve again "
		"soon after a restart.",
		.long_desc = "The matcher engine writes each cache to the data directory's "
		"mcc/ folder; after a restart a load checks it against the "
		"table's tuple headers and reads only the rows it cannot prove "
		"unchanged. Off: nothing is written or read.",
		.bool_var = &mcc_cache_snapshots, .context = PGC_POSTMASTER},
	{.name = "mcc.image_queue_limit",
		.short_desc = "Image and point jobs the matcher engine takes at once.",
		.long_desc = "Each holds its images until it is answered; beyond the limit "
		"a call runs in its backend (mcc.image_device = auto) or fails. "
		"0: four per image thread.",
		.int_var = &mcc_image_queue_limit, .min = 0, .max = 1 << 20, .context = PGC_POSTMASTER},
};

/* Defines the n parameters of defs, each with its variable's initial value. */
static void
define_gucs(const guc_def *defs, int n)
{
	for (int i = 0; i < n; i++)
	{
		const guc_def *d = &defs[i];

		if (d->bool_var)
			DefineCustomBoolVariable(d->name, d->short_desc, d->long_desc,
									 d->bool_var, *d->bool_var,
									 d->context, d->flags, NULL, NULL, NULL);
		else if (d->options)
			DefineCustomEnumVariable(d->name, d->short_desc, d->long_desc,
									 d->int_var, *d->int_var, d->options,
									 d->context, d->flags, NULL, NULL, NULL);
		else
			DefineCustomIntVariable(d->name, d->short_desc, d->long_desc,
									d->int_var, *d->int_var, d->min, d->max,
									d->context, d->flags, NULL, NULL, NULL);
	}
}

void
mcc_service_define_session_gucs(void)
{
	define_gucs(session_gucs, lengthof(session_gucs));
}

void
mcc_service_define_server_gucs(void)
{
	define_gucs(server_gucs, lengthof(server_gucs));
}
