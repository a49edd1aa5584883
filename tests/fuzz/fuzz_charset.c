/* tests/fuzz/fuzz_charset: libFuzzer target for crawler/web/charset.
 *
 * Input: byte 0 picks the header label (none, known, unknown), the rest is
 * the start of a page. The decision must: name a charset; depend only on
 * the first CHARSET_SNIFF_MAX bytes; skip only a real BOM; agree with
 * charset_prescan when there is no BOM and no known header label. Any
 * breach aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/web/charset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const header_labels[] = { "", "utf-8", "windows-1251", "x-unknown",
                                             "utf-16", "shift_jis", "latin1", "koi8-r" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *label = header_labels[data[0] % (sizeof header_labels / sizeof header_labels[0])];
    const uint8_t *page = data + 1;
    size_t n = size - 1;
    charset_choice c, w;
    const char *name = charset_sniff(page, n, label, &c);
    if (name == NULL || name != c.name || (c.unit != 1 && c.unit != 2))
        abort();
    size_t win = n < CHARSET_SNIFF_MAX ? n : CHARSET_SNIFF_MAX;
    charset_sniff(page, win, label, &w);
    if (w.name != c.name || w.source != c.source || w.bom_len != c.bom_len)
        abort();
    if (c.bom_len != 0 && (c.source != CHARSET_FROM_BOM || c.bom_len > n))
        abort();
    if (c.source != CHARSET_FROM_BOM && !charset_label_known(label)) {
        const char *m = charset_prescan(page, n);
        if ((m != NULL) != (c.source == CHARSET_FROM_META) || (m != NULL && m != c.name))
            abort();
    }
    return 0;
}
