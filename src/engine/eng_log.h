/*
 * eng_log.h: the engine's log, one line per event on stderr.
 *
 * The supervisor forwards the engine's stderr to the PostgreSQL log, so each
 * line starts with the program name, the pid and a PostgreSQL-like level.
 */
#ifndef ENG_LOG_H
#define ENG_LOG_H

typedef enum eng_log_level
{
	ENG_LOG_ERROR = 0,
	ENG_LOG_WARNING,
	ENG_LOG_INFO,
	ENG_LOG_DEBUG
} eng_log_level;

/* Lines above this level are dropped (default: info). */
void		eng_log_set_level(eng_log_level level);

/* Parse "error", "warning", "info" or "debug"; -1 if unknown. */
int			eng_log_parse_level(const char *name);

/* true if lines of this level are written. */
int			eng_log_enabled(eng_log_level level);

/* Write one line (a final newline is added). Safe from any thread. */
void		eng_log(eng_log_level level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

#endif							/* ENG_LOG_H */
