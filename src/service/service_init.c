/*
 * service_init.c: the matcher service's one entry point from _PG_init, and
 * the registration of its supervisor background worker (whose main loop is
 * service_supervisor.c; the parameters are service_guc.c).
 */
#include "mcc_pg.h"
#include "service.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"

/* Register the supervisor background worker. */
static void
register_supervisor(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS;
	/* on a hot standby too, once it is consistent (docs/deployment.md) */
	bgw.bgw_start_time = BgWorkerStart_ConsistentState;
	bgw.bgw_restart_time = 2;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "mcc");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "mcc_supervisor_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "mcc supervisor");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "mcc supervisor");
	RegisterBackgroundWorker(&bgw);
}

/*
 * The matcher service's part of _PG_init: session parameters and change
 * capture always; server parameters, shared memory and the supervisor only
 * while shared_preload_libraries is being processed.
 */
void
mcc_service_init(void)
{
	mcc_service_define_session_gucs();
	mcc_triggers_init();
	if (!process_shared_preload_libraries_in_progress)
		return;
	mcc_service_define_server_gucs();
	mcc_shmem_install_hooks();
	register_supervisor();
}
