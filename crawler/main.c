/* crawler/main: placeholder entry point until the CLI lands. */
#include <stdio.h>

int main(void)
{
    fputs("crawld: not built yet\n", stderr);
    return 2;
}
