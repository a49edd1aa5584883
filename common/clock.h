/* common/clock: the one clock helper. Milliseconds on the monotonic clock
 * (for intervals, deadlines and politeness) and on the wall clock (for
 * timestamps that are stored or shown), and a deadline for condition
 * variables, which wait on CLOCK_REALTIME. */
#ifndef CRAWLD_COMMON_CLOCK_H
#define CRAWLD_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds (never goes back; unrelated to the date). */
int64_t cr_mono_ms(void);
/* Monotonic nanoseconds, for durations finer than a millisecond. */
int64_t cr_mono_ns(void);
/* Monotonic milliseconds rounded up: a time a wait must not end before. */
int64_t cr_mono_ms_ceil(void);
/* Unix time in milliseconds. */
int64_t cr_wall_ms(void);
/* The CLOCK_REALTIME instant ms milliseconds from now (ms >= 0), for
 * pthread_cond_timedwait. OUT: ts */
void cr_deadline(int64_t ms, struct timespec *ts);
/* The same on CLOCK_MONOTONIC, for a condition variable whose attribute
 * was set with pthread_condattr_setclock(CLOCK_MONOTONIC). OUT: ts */
void cr_deadline_mono(int64_t ms, struct timespec *ts);

#endif
