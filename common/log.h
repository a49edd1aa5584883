/* common/log: the daemon's log lines, readable on a terminal and in the
 * journal alike.
 *
 * Where stderr goes decides the form (cr_log_mode): on a terminal, lines as
 * they are (and `crawld run` may redraw a status line there); under
 * systemd, when stderr is the journal stream $JOURNAL_STREAM names (device
 * and inode, as systemd.exec(5) documents), every line starts with its
 * syslog priority "<N>", which journald takes as the entry's priority
 * (sd-daemon(3)); anywhere else (a file, a pipe), plain lines. In every
 * form one event is one line: no carriage returns, no blank lines. */
#ifndef CRAWLD_LOG_H
#define CRAWLD_LOG_H

#include <stdio.h>

enum cr_log_prio { CR_LOG_ERR = 3, CR_LOG_WARNING = 4, CR_LOG_NOTICE = 5, CR_LOG_INFO = 6 };
enum cr_log_mode { CR_LOG_TTY, CR_LOG_PLAIN, CR_LOG_JOURNAL };

/* The form for descriptor fd (see above). */
enum cr_log_mode cr_log_mode_of(int fd);

/* A stream for lines of priority prio on stderr: in the journal form each
 * line gets the prefix "<prio>" (a line that starts with its own "<N>"
 * keeps that one) and blank lines are dropped; in the other forms it is
 * stderr itself, so write no prefixes of your own: take one stream per
 * priority. Lines are written whole, one write(2)
 * each (a partial line waits for its end, or for fclose). NULL when memory
 * runs out. Close with fclose() unless it is stderr (cr_log_close does the
 * right thing). Safe for one thread at a time, as a FILE is. */
FILE *cr_log_open(int prio);
void cr_log_close(FILE *f);

#endif
