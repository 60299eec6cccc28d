/*
 * eng_log.c: one stderr line per event, written with a single write() so that
 * lines from several threads never interleave.
 */
#include "eng_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static eng_log_level log_level = ENG_LOG_INFO;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void
eng_log_set_level(eng_log_level level)
{
	log_level = level;
}

int
eng_log_parse_level(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

int
eng_log_enabled(eng_log_level level)
{
	return level <= log_level;
}

void
eng_log(eng_log_level level, const char *fmt,...)
{
	static const char *const labels[] = {"ERROR", "WARNING", "LOG", "DEBUG"};
	char		line[1024];
	va_list		ap;
	int			n;
	ssize_t		w;

	if (!eng_log_enabled(level))
		return;
	n = snprintf(line, sizeof(line), "mcc_engine[%d]: %s:  ", (int) getpid(),
				 labels[level]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int) sizeof(line) - 2)
		n = (int) sizeof(line) - 2;
	line[n++] = '\n';
	w = write(STDERR_FILENO, line, (size_t) n);
	(void) w;
}
