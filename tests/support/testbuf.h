/* tests/support/testbuf: the cap tests give a cr_buf that only collects
 * what the test itself produced (common/buf has no "unlimited"). */
#ifndef CRAWLD_TESTBUF_H
#define CRAWLD_TESTBUF_H

#define TEST_BUF_CAP ((size_t)64 << 20) /* 64 MiB: more than any test writes */

#endif
