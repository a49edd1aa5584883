/* tests/support/unbuffer: line-buffer stdout in every test binary, so
 * cmocka's stdout and stderr lines interleave in order in the test log. */
#include <stdio.h>

__attribute__((constructor)) static void line_buffer_stdout(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
}
