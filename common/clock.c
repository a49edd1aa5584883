/* common/clock: see clock.h. */
#include "common/clock.h"

int64_t cr_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cr_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cr_mono_ms_ceil(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + (ts.tv_nsec + 999999) / 1000000;
}

int64_t cr_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void deadline_on(clockid_t id, int64_t ms, struct timespec *ts)
{
    if (ms < 0)
        ms = 0;
    clock_gettime(id, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void cr_deadline(int64_t ms, struct timespec *ts) { deadline_on(CLOCK_REALTIME, ms, ts); }

void cr_deadline_mono(int64_t ms, struct timespec *ts) { deadline_on(CLOCK_MONOTONIC, ms, ts); }
