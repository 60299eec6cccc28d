/*
 * service_shmem.c: the matcher service's shared memory: the service state
 * the supervisor publishes, and one slot per gallery holding its generation
 * counter and what the engine's cache of it was last loaded at.
 *
 * When every slot is taken, a gallery that needs one takes the slot of the
 * gallery of lowest priority at or below its own, least recently used
 * first (mcc_slot_acquire), so that nobody keeps others out for good.
 *
 * Locks: LWLock 0 of tranche "mcc" guards which gallery owns which slot;
 * LWLock 1 + i guards slot i's fields. Slot identity changes only with both
 * held, so a backend that found a slot under the table lock revalidates it
 * (mcc_slot_lock) after taking the slot lock alone. No lock is ever held
 * while waiting for the engine, except by writers at pre-commit, who only
 * write to their socket with a short timeout (service_triggers.c).
 */
#include "mcc_pg.h"
#include "service.h"

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include <sys/un.h>

mcc_svc_shared *mcc_svc = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * The name starts with PG_TEMP_FILE_PREFIX ("pgsql_tmp"), which
 * pg_basebackup (basebackup.c, sendDir) and pg_rewind skip in every
 * directory: a base backup neither copies the socket nor warns about a
 * special file, and the data directory's 0700 keeps it private to the
 * server's user (the engine speaks to whoever can connect).
 */
#define MCC_SOCKET_NAME PG_TEMP_FILE_PREFIX "_mcc_engine.sock"

/* Bytes of the shared block. */
static Size
shared_size(void)
{
	return add_size(offsetof(mcc_svc_shared, slots),
					mul_size(mcc_max_galleries, sizeof(mcc_svc_gallery)));
}

/* shmem_request_hook: reserve the block and the locks. */
static void
mcc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("mcc", 1 + mcc_max_galleries);
}

/*
 * The engine's socket: in the data directory, by absolute path when it fits
 * a UNIX socket address, else relative (every server process and the engine
 * run with the data directory as working directory).
 */
static void
socket_path(char *out, size_t size)
{
	struct sockaddr_un addr;

	snprintf(out, size, "%s/%s", DataDir, MCC_SOCKET_NAME);
	if (out[0] != '/' || strlen(out) >= sizeof(addr.sun_path))
		snprintf(out, size, "%s", MCC_SOCKET_NAME);
}

/* shmem_startup_hook: create or attach the block. */
static void
mcc_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	mcc_svc = ShmemInitStruct("mcc matcher service", shared_size(), &found);
	if (!found)
	{
		memset(mcc_svc, 0, shared_size());
		SpinLockInit(&mcc_svc->mutex);
		pg_atomic_init_u32(&mcc_svc->state, MCC_SVC_ABSENT);
		mcc_svc->n_slots = mcc_max_galleries;
		mcc_svc->locks = GetNamedLWLockTranche("mcc");
		socket_path(mcc_svc->socket_path, sizeof(mcc_svc->socket_path));
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Chain the shared memory hooks (only while preloading). */
void
mcc_shmem_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = mcc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = mcc_shmem_startup;
}

/* The service state, and the number of the engine's launch. */
mcc_service_state
mcc_service_state_now(uint64 *launch)
{
	mcc_service_state st;

	if (mcc_svc == NULL)
	{
		if (launch)
			*launch = 0;
		return MCC_SVC_ABSENT;
	}
	SpinLockAcquire(&mcc_svc->mutex);
	st = (mcc_service_state) pg_atomic_read_u32(&mcc_svc->state);
	if (launch)
		*launch = mcc_svc->launch;
	SpinLockRelease(&mcc_svc->mutex);
	return st;
}

/* Index of the slot of (MyDatabaseId, relid), or -1; table lock held. */
static int
slot_lookup(Oid relid)
{
	int			i;

	for (i = 0; i < mcc_svc->n_slots; i++)
		if (mcc_svc->slots[i].rel_oid == relid &&
			mcc_svc->slots[i].db_oid == MyDatabaseId)
			return i;
	return -1;
}

/* Give free slot i to relid, due for a load; both locks held. */
static void
slot_claim(int i, Oid relid, int32 priority)
{
	mcc_svc_gallery *s = &mcc_svc->slots[i];
	uint32		epoch = s->epoch + 1;

	memset(s, 0, sizeof(*s));
	s->db_oid = MyDatabaseId;
	s->rel_oid = relid;
	s->epoch = epoch;
	s->priority = priority;
	s->generation = ++mcc_svc->gen_high;
	s->reload_gen = s->generation;
	pg_atomic_init_u64(&s->last_used, (uint64) GetCurrentTimestamp());
}

/* Empty slot i (both locks held): a later slot of its gallery starts above it. */
static void
slot_release(int i)
{
	mcc_svc_gallery *s = &mcc_svc->slots[i];

	mcc_svc->gen_high = Max(mcc_svc->gen_high, s->generation);
	s->db_oid = InvalidOid;
	s->rel_oid = InvalidOid;
	s->epoch++;
}

/* Find the slot of relid. */
int
mcc_slot_find(Oid relid, uint32 *epoch)
{
	int			i;

	Assert(mcc_svc != NULL);
	LWLockAcquire(MCC_TABLE_LOCK(), LW_SHARED);
	i = slot_lookup(relid);
	if (i >= 0)
		*epoch = mcc_svc->slots[i].epoch;
	LWLockRelease(MCC_TABLE_LOCK());
	return i;
}

/*
 * The slot that a gallery of `priority` may take when none is free: the
 * lowest priority at or below it, least recently used first, not being
 * loaded (table lock held); -1 if none.
 */
static int
slot_victim(int32 priority)
{
	int			victim = -1;
	int			i;

	for (i = 0; i < mcc_svc->n_slots; i++)
	{
		mcc_svc_gallery *s = &mcc_svc->slots[i];
		mcc_svc_gallery *v;

		if (s->db_oid == InvalidOid || s->priority > priority || s->load_pid != 0)
			continue;
		if (victim < 0)
		{
			victim = i;
			continue;
		}
		v = &mcc_svc->slots[victim];
		if (s->priority < v->priority ||
			(s->priority == v->priority &&
			 pg_atomic_read_u64(&s->last_used) < pg_atomic_read_u64(&v->last_used)))
			victim = i;
	}
	return victim;
}

/* Find or make the slot of relid, taking one from another gallery if it must. */
int
mcc_slot_acquire(Oid relid, int32 priority, uint32 *epoch, mcc_slot_victim *victim)
{
	int			i;

	Assert(mcc_svc != NULL);
	victim->db = InvalidOid;
	victim->rel = InvalidOid;
	LWLockAcquire(MCC_TABLE_LOCK(), LW_EXCLUSIVE);
	i = slot_lookup(relid);
	if (i < 0)
	{
		for (i = 0; i < mcc_svc->n_slots; i++)
			if (mcc_svc->slots[i].db_oid == InvalidOid)
				break;
		if (i == mcc_svc->n_slots)
			i = slot_victim(priority);
		if (i >= 0)
		{
			LWLockAcquire(MCC_SLOT_LOCK(i), LW_EXCLUSIVE);
			if (mcc_svc->slots[i].db_oid != InvalidOid)
			{
				victim->db = mcc_svc->slots[i].db_oid;
				victim->rel = mcc_svc->slots[i].rel_oid;
				slot_release(i);
			}
			slot_claim(i, relid, priority);
			LWLockRelease(MCC_SLOT_LOCK(i));
		}
	}
	else
	{
		/* a change of priority comes with the next use */
		mcc_svc->slots[i].priority = priority;
		pg_atomic_write_u64(&mcc_svc->slots[i].last_used, (uint64) GetCurrentTimestamp());
	}
	if (i >= 0)
		*epoch = mcc_svc->slots[i].epoch;
	LWLockRelease(MCC_TABLE_LOCK());
	return i;
}

/* Lock slot i if it still is relid's slot of the given epoch. */
bool
mcc_slot_lock(int i, Oid relid, uint32 epoch, LWLockMode mode)
{
	mcc_svc_gallery *s = &mcc_svc->slots[i];

	LWLockAcquire(MCC_SLOT_LOCK(i), mode);
	if (s->db_oid == MyDatabaseId && s->rel_oid == relid && s->epoch == epoch)
		return true;
	LWLockRelease(MCC_SLOT_LOCK(i));
	return false;
}

/*
 * Free the slot of (db, relid). Its generations are folded into gen_high so
 * that a later slot for the same gallery starts above them.
 */
void
mcc_slot_free(Oid db, Oid relid)
{
	int			i;

	if (mcc_svc == NULL)
		return;
	LWLockAcquire(MCC_TABLE_LOCK(), LW_EXCLUSIVE);
	for (i = 0; i < mcc_svc->n_slots; i++)
	{
		mcc_svc_gallery *s = &mcc_svc->slots[i];

		if (s->db_oid != db || (relid != InvalidOid && s->rel_oid != relid))
			continue;
		LWLockAcquire(MCC_SLOT_LOCK(i), LW_EXCLUSIVE);
		slot_release(i);
		LWLockRelease(MCC_SLOT_LOCK(i));
	}
	LWLockRelease(MCC_TABLE_LOCK());
}
