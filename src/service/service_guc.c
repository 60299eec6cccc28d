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

/* Parameters any session may set. */
void
mcc_service_define_session_gucs(void)
{
	DefineCustomBoolVariable("mcc.service",
							 "Lets identify() use the matcher service.",
							 "When off, identify() scans the gallery in the backend. "
							 "Writers keep the service's caches current either way.",
							 &mcc_service_enabled, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("mcc.refine_in_engine",
							 "Lets the matcher engine refine identify()'s shortlists from its cache.",
							 "When off, the backend re-checks every shortlisted row, reads "
							 "its template and sends it to the engine to be rescored "
							 "(the same answer, more work).",
							 &mcc_refine_in_engine, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("mcc.fallback",
							 "What identify() does when the matcher service cannot serve it.",
							 "cpu: scan in the backend; notice: the same with a NOTICE "
							 "saying why; error: raise an ERROR saying why.",
							 &mcc_fallback, MCC_FALLBACK_CPU, fallback_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.load_workers",
							"Parallel workers that read a gallery for a full load.",
							"-1: one per 4 CPUs of the machine, at most 8 (none below 8 CPUs); "
							"0 reads in the loading backend alone. Galleries whose heaps are "
							"smaller than min_parallel_table_scan_size load serially; "
							"max_parallel_workers and max_worker_processes bound the "
							"workers started.",
							&mcc_load_workers, -1, -1, 64,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.request_timeout",
							"How long a backend waits for one reply of the matcher engine.",
							"0 waits without limit (statement_timeout still applies). "
							"On expiry mcc.fallback decides.",
							&mcc_request_timeout, 30000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.max_delta_rows",
							"Most changed rows of one gallery a transaction sends to the "
							"matcher engine as a delta.",
							"A transaction that changes more rows marks the cache for a "
							"full reload instead.",
							&mcc_max_delta_rows, 10000, 0, INT_MAX / 2,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.progress_interval",
							"How often a long maintenance call reports its progress.",
							"An interactive mcc_gallery_preload() sends a NOTICE this often "
							"(if client_min_messages lets NOTICEs through); 0 after every "
							"step, -1 never. mcc_gallery_status shows the progress anyway.",
							&mcc_progress_interval, 5000, -1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
}

/* Parameters fixed at server start. */
void
mcc_service_define_server_gucs(void)
{
	DefineCustomIntVariable("mcc.cache_memory_limit",
							"Memory the matcher engine may use for gallery caches.",
							"0 means no limit. A load beyond the limit fails and "
							"mcc.fallback decides.",
							&mcc_cache_memory_limit, 4096, 0, INT_MAX,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.worker_threads",
							"Scan threads of the matcher engine.",
							"0 starts one per CPU.",
							&mcc_worker_threads, 0, 0, 1024,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.max_galleries",
							"Galleries the matcher service tracks at once.",
							"When all are tracked, a gallery takes the slot of the one of "
							"lowest priority at or below its own, least recently used first.",
							&mcc_max_galleries, 64, 1, 100000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.image_worker_threads",
							"Threads of the matcher engine for image and point jobs.",
							"Apart from the scan threads, at a lower scheduling priority, so "
							"that image jobs never hold up identify(). 0: half of "
							"mcc.worker_threads, at least 1.",
							&mcc_image_worker_threads, 0, 0, 1024,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.change_log_prune_interval",
							"How often the supervisor prunes the change logs of hot standbys.",
							"On a primary it removes the entries no standby needs any more "
							"(mcc_change_log_prune()). 0 turns automatic pruning off.",
							&mcc_change_log_prune_interval, 60, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.change_log_retention",
							"How long change log entries stay for hot standbys without a "
							"replication slot.",
							"Entries a physical replication slot's standby has not replayed "
							"stay longer; a standby that lacks a pruned entry reloads its cache.",
							&mcc_change_log_retention, 600, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomBoolVariable("mcc.cache_snapshots",
							 "Keeps snapshots of the gallery caches on disk, to serve again "
							 "soon after a restart.",
							 "The matcher engine writes each cache to the data directory's "
							 "mcc/ folder; after a restart a load checks it against the "
							 "table's tuple headers and reads only the rows it cannot prove "
							 "unchanged. Off: nothing is written or read.",
							 &mcc_cache_snapshots, true,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mcc.image_queue_limit",
							"Image and point jobs the matcher engine takes at once.",
							"Each holds its images until it is answered; beyond the limit "
							"a call runs in its backend (mcc.image_device = auto) or fails. "
							"0: four per image thread.",
							&mcc_image_queue_limit, 0, 0, 1 << 20,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
}
