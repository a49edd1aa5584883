/* crawler/web/charset: which charset a fetched HTML page is in (see
 * charset.h). It owns the WHATWG label table (label -> the encoding we read
 * it as, and how), the HTML spec's "prescan a byte stream to determine its
 * encoding" over the first bytes, the Content-Type charset parameter, and
 * the order they are asked in: BOM, then the header, then <meta>, else
 * UTF-8. Pure functions over (bytes, length): no I/O, no allocation, no
 * state; any thread. */
#include "charset.h"

#include <stdbool.h>
#include <string.h>

#include "crawler/web/ascii.h"

#define PRE_NAME 32     /* prescan: attribute name and value kept (truncated) */
#define PRE_VALUE 256

enum enc_id {
    E_UTF8, E_LATIN1, E_U16LE, E_U16BE, E_IBM866, E_8859_2, E_8859_3,
    E_8859_4, E_8859_5, E_8859_6, E_8859_7, E_8859_8, E_8859_10, E_8859_13,
    E_8859_14, E_8859_15, E_8859_16, E_KOI8R, E_KOI8U, E_MAC, E_CP874,
    E_CP1250, E_CP1251, E_CP1253, E_CP1254, E_CP1255, E_CP1256, E_CP1257,
    E_CP1258, E_MACCYR, E_GB18030, E_BIG5, E_EUCJP, E_ISO2022JP, E_SJIS,
    E_EUCKR, E_COUNT
};

/* iconv names. windows-1252 and its aliases are read as ISO-8859-1, which
 * accepts every byte (0x80-0x9F become C1 controls instead of the few
 * windows-1252 punctuation marks). Where the WHATWG decoder is a superset,
 * so is the iconv name: gbk -> GB18030, Shift_JIS -> CP932, EUC-KR ->
 * CP949, Big5 -> BIG5-HKSCS. */
static const struct enc {
    const char *name;
    charset_mode mode;
} encs[E_COUNT] = {
    [E_UTF8] = {"UTF-8", CHARSET_UTF8},          [E_LATIN1] = {"ISO-8859-1", CHARSET_LATIN1},
    [E_U16LE] = {"UTF-16LE", CHARSET_ICONV},     [E_U16BE] = {"UTF-16BE", CHARSET_ICONV},
    [E_IBM866] = {"IBM866", CHARSET_ICONV},      [E_8859_2] = {"ISO-8859-2", CHARSET_ICONV},
    [E_8859_3] = {"ISO-8859-3", CHARSET_ICONV},  [E_8859_4] = {"ISO-8859-4", CHARSET_ICONV},
    [E_8859_5] = {"ISO-8859-5", CHARSET_ICONV},  [E_8859_6] = {"ISO-8859-6", CHARSET_ICONV},
    [E_8859_7] = {"ISO-8859-7", CHARSET_ICONV},  [E_8859_8] = {"ISO-8859-8", CHARSET_ICONV},
    [E_8859_10] = {"ISO-8859-10", CHARSET_ICONV}, [E_8859_13] = {"ISO-8859-13", CHARSET_ICONV},
    [E_8859_14] = {"ISO-8859-14", CHARSET_ICONV}, [E_8859_15] = {"ISO-8859-15", CHARSET_ICONV},
    [E_8859_16] = {"ISO-8859-16", CHARSET_ICONV}, [E_KOI8R] = {"KOI8-R", CHARSET_ICONV},
    [E_KOI8U] = {"KOI8-U", CHARSET_ICONV},       [E_MAC] = {"MACINTOSH", CHARSET_ICONV},
    [E_CP874] = {"CP874", CHARSET_ICONV},        [E_CP1250] = {"CP1250", CHARSET_ICONV},
    [E_CP1251] = {"CP1251", CHARSET_ICONV},      [E_CP1253] = {"CP1253", CHARSET_ICONV},
    [E_CP1254] = {"CP1254", CHARSET_ICONV},      [E_CP1255] = {"CP1255", CHARSET_ICONV},
    [E_CP1256] = {"CP1256", CHARSET_ICONV},      [E_CP1257] = {"CP1257", CHARSET_ICONV},
    [E_CP1258] = {"CP1258", CHARSET_ICONV},      [E_MACCYR] = {"MAC-CYRILLIC", CHARSET_ICONV},
    [E_GB18030] = {"GB18030", CHARSET_ICONV},    [E_BIG5] = {"BIG5-HKSCS", CHARSET_ICONV},
    [E_EUCJP] = {"EUC-JP", CHARSET_ICONV},       [E_ISO2022JP] = {"ISO-2022-JP", CHARSET_ICONV},
    [E_SJIS] = {"CP932", CHARSET_ICONV},         [E_EUCKR] = {"CP949", CHARSET_ICONV},
};

/* WHATWG Encoding labels (lowercase). Not here, so read as the default: the
 * "replacement" encodings (ISO-2022-KR/CN, HZ), UTF-7 and other labels no
 * browser knows. x-user-defined is approximated by ISO-8859-1. */
static const struct label {
    const char *label;
    unsigned char enc;
} labels[] = {
    {"unicode-1-1-utf-8", E_UTF8}, {"unicode11utf8", E_UTF8}, {"unicode20utf8", E_UTF8},
    {"utf-8", E_UTF8}, {"utf8", E_UTF8}, {"x-unicode20utf8", E_UTF8},
    {"866", E_IBM866}, {"cp866", E_IBM866}, {"csibm866", E_IBM866}, {"ibm866", E_IBM866},
    {"csisolatin2", E_8859_2}, {"iso-8859-2", E_8859_2}, {"iso-ir-101", E_8859_2},
    {"iso8859-2", E_8859_2}, {"iso88592", E_8859_2}, {"iso_8859-2", E_8859_2},
    {"iso_8859-2:1987", E_8859_2}, {"l2", E_8859_2}, {"latin2", E_8859_2},
    {"csisolatin3", E_8859_3}, {"iso-8859-3", E_8859_3}, {"iso-ir-109", E_8859_3},
    {"iso8859-3", E_8859_3}, {"iso88593", E_8859_3}, {"iso_8859-3", E_8859_3},
    {"iso_8859-3:1988", E_8859_3}, {"l3", E_8859_3}, {"latin3", E_8859_3},
    {"csisolatin4", E_8859_4}, {"iso-8859-4", E_8859_4}, {"iso-ir-110", E_8859_4},
    {"iso8859-4", E_8859_4}, {"iso88594", E_8859_4}, {"iso_8859-4", E_8859_4},
    {"iso_8859-4:1988", E_8859_4}, {"l4", E_8859_4}, {"latin4", E_8859_4},
    {"csisolatincyrillic", E_8859_5}, {"cyrillic", E_8859_5}, {"iso-8859-5", E_8859_5},
    {"iso-ir-144", E_8859_5}, {"iso8859-5", E_8859_5}, {"iso88595", E_8859_5},
    {"iso_8859-5", E_8859_5}, {"iso_8859-5:1988", E_8859_5},
    {"arabic", E_8859_6}, {"asmo-708", E_8859_6}, {"csiso88596e", E_8859_6},
    {"csiso88596i", E_8859_6}, {"csisolatinarabic", E_8859_6}, {"ecma-114", E_8859_6},
    {"iso-8859-6", E_8859_6}, {"iso-8859-6-e", E_8859_6}, {"iso-8859-6-i", E_8859_6},
    {"iso-ir-127", E_8859_6}, {"iso8859-6", E_8859_6}, {"iso88596", E_8859_6},
    {"iso_8859-6", E_8859_6}, {"iso_8859-6:1987", E_8859_6},
    {"csisolatingreek", E_8859_7}, {"ecma-118", E_8859_7}, {"elot_928", E_8859_7},
    {"greek", E_8859_7}, {"greek8", E_8859_7}, {"iso-8859-7", E_8859_7},
    {"iso-ir-126", E_8859_7}, {"iso8859-7", E_8859_7}, {"iso88597", E_8859_7},
    {"iso_8859-7", E_8859_7}, {"iso_8859-7:1987", E_8859_7}, {"sun_eu_greek", E_8859_7},
    {"csiso88598e", E_8859_8}, {"csisolatinhebrew", E_8859_8}, {"hebrew", E_8859_8},
    {"iso-8859-8", E_8859_8}, {"iso-8859-8-e", E_8859_8}, {"iso-ir-138", E_8859_8},
    {"iso8859-8", E_8859_8}, {"iso88598", E_8859_8}, {"iso_8859-8", E_8859_8},
    {"iso_8859-8:1988", E_8859_8}, {"visual", E_8859_8}, {"csiso88598i", E_8859_8},
    {"iso-8859-8-i", E_8859_8}, {"logical", E_8859_8},
    {"csisolatin6", E_8859_10}, {"iso-8859-10", E_8859_10}, {"iso-ir-157", E_8859_10},
    {"iso8859-10", E_8859_10}, {"iso885910", E_8859_10}, {"l6", E_8859_10},
    {"latin6", E_8859_10},
    {"iso-8859-13", E_8859_13}, {"iso8859-13", E_8859_13}, {"iso885913", E_8859_13},
    {"iso-8859-14", E_8859_14}, {"iso8859-14", E_8859_14}, {"iso885914", E_8859_14},
    {"csisolatin9", E_8859_15}, {"iso-8859-15", E_8859_15}, {"iso8859-15", E_8859_15},
    {"iso885915", E_8859_15}, {"iso_8859-15", E_8859_15}, {"l9", E_8859_15},
    {"iso-8859-16", E_8859_16},
    {"cskoi8r", E_KOI8R}, {"koi", E_KOI8R}, {"koi8", E_KOI8R}, {"koi8-r", E_KOI8R},
    {"koi8_r", E_KOI8R}, {"koi8-ru", E_KOI8U}, {"koi8-u", E_KOI8U},
    {"csmacintosh", E_MAC}, {"mac", E_MAC}, {"macintosh", E_MAC}, {"x-mac-roman", E_MAC},
    {"dos-874", E_CP874}, {"iso-8859-11", E_CP874}, {"iso8859-11", E_CP874},
    {"iso885911", E_CP874}, {"tis-620", E_CP874}, {"windows-874", E_CP874},
    {"cp1250", E_CP1250}, {"windows-1250", E_CP1250}, {"x-cp1250", E_CP1250},
    {"cp1251", E_CP1251}, {"windows-1251", E_CP1251}, {"x-cp1251", E_CP1251},
    {"ansi_x3.4-1968", E_LATIN1}, {"ascii", E_LATIN1}, {"cp1252", E_LATIN1},
    {"cp819", E_LATIN1}, {"csisolatin1", E_LATIN1}, {"ibm819", E_LATIN1},
    {"iso-8859-1", E_LATIN1}, {"iso-ir-100", E_LATIN1}, {"iso8859-1", E_LATIN1},
    {"iso88591", E_LATIN1}, {"iso_8859-1", E_LATIN1}, {"iso_8859-1:1987", E_LATIN1},
    {"l1", E_LATIN1}, {"latin1", E_LATIN1}, {"us-ascii", E_LATIN1},
    {"windows-1252", E_LATIN1}, {"x-cp1252", E_LATIN1}, {"x-user-defined", E_LATIN1},
    {"cp1253", E_CP1253}, {"windows-1253", E_CP1253}, {"x-cp1253", E_CP1253},
    {"cp1254", E_CP1254}, {"csisolatin5", E_CP1254}, {"iso-8859-9", E_CP1254},
    {"iso-ir-148", E_CP1254}, {"iso8859-9", E_CP1254}, {"iso88599", E_CP1254},
    {"iso_8859-9", E_CP1254}, {"iso_8859-9:1989", E_CP1254}, {"l5", E_CP1254},
    {"latin5", E_CP1254}, {"windows-1254", E_CP1254}, {"x-cp1254", E_CP1254},
    {"cp1255", E_CP1255}, {"windows-1255", E_CP1255}, {"x-cp1255", E_CP1255},
    {"cp1256", E_CP1256}, {"windows-1256", E_CP1256}, {"x-cp1256", E_CP1256},
    {"cp1257", E_CP1257}, {"windows-1257", E_CP1257}, {"x-cp1257", E_CP1257},
    {"cp1258", E_CP1258}, {"windows-1258", E_CP1258}, {"x-cp1258", E_CP1258},
    {"x-mac-cyrillic", E_MACCYR}, {"x-mac-ukrainian", E_MACCYR},
    {"chinese", E_GB18030}, {"csgb2312", E_GB18030}, {"csiso58gb231280", E_GB18030},
    {"gb2312", E_GB18030}, {"gb_2312", E_GB18030}, {"gb_2312-80", E_GB18030},
    {"gbk", E_GB18030}, {"iso-ir-58", E_GB18030}, {"x-gbk", E_GB18030},
    {"gb18030", E_GB18030},
    {"big5", E_BIG5}, {"big5-hkscs", E_BIG5}, {"cn-big5", E_BIG5}, {"csbig5", E_BIG5},
    {"x-x-big5", E_BIG5},
    {"cseucpkdfmtjapanese", E_EUCJP}, {"euc-jp", E_EUCJP}, {"x-euc-jp", E_EUCJP},
    {"csiso2022jp", E_ISO2022JP}, {"iso-2022-jp", E_ISO2022JP},
    {"csshiftjis", E_SJIS}, {"ms932", E_SJIS}, {"ms_kanji", E_SJIS},
    {"shift-jis", E_SJIS}, {"shift_jis", E_SJIS}, {"sjis", E_SJIS},
    {"windows-31j", E_SJIS}, {"x-sjis", E_SJIS},
    {"cseuckr", E_EUCKR}, {"csksc56011987", E_EUCKR}, {"euc-kr", E_EUCKR},
    {"iso-ir-149", E_EUCKR}, {"korean", E_EUCKR}, {"ks_c_5601-1987", E_EUCKR},
    {"ks_c_5601-1989", E_EUCKR}, {"ksc5601", E_EUCKR}, {"ksc_5601", E_EUCKR},
    {"windows-949", E_EUCKR},
    {"unicodefffe", E_U16BE}, {"utf-16be", E_U16BE},
    {"csunicode", E_U16LE}, {"iso-10646-ucs-2", E_U16LE}, {"ucs-2", E_U16LE},
    {"unicode", E_U16LE}, {"unicodefeff", E_U16LE}, {"utf-16", E_U16LE},
    {"utf-16le", E_U16LE},
};

/* ---- labels -------------------------------------------------------------- */

/* Lowercased, trimmed copy of a charset label into out[CHARSET_LABEL_MAX]; "" if it
 * does not fit. */
static void label_copy(char *out, const char *s, size_t n)
{
    trim(&s, &n);
    if (n >= CHARSET_LABEL_MAX) {
        out[0] = '\0';
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (char)lower((unsigned char)s[i]);
    out[n] = '\0';
}

static int label_lookup(const char *label) /* enc_id or -1 */
{
    if (label[0] == '\0')
        return -1;
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        if (strcmp(labels[i].label, label) == 0)
            return labels[i].enc;
    return -1;
}

/* ---- the prescan and the header ------------------------------------------ */

/* "Get an attribute" of the HTML spec's prescan: 1 and name/value (both
 * lowercased, truncated to their buffers), 0 if there is none, -1 at the end
 * of the input (the prescan gives up). */
static int pre_attr(const unsigned char *s, size_t n, size_t *ip, char name[PRE_NAME],
                    char val[PRE_VALUE])
{
    size_t i = *ip, nl = 0, vl = 0;
    int rc = 1;
    while (i < n && (is_ws(s[i]) || s[i] == '/'))
        i++;
    if (i >= n)
        return -1;
    if (s[i] == '>') {
        *ip = i;
        return 0;
    }
    for (;;) {
        if (i >= n)
            return -1;
        unsigned char c = s[i];
        if (c == '=' && nl > 0) {
            i++;
            goto value;
        }
        if (is_ws(c))
            break;
        if (c == '/' || c == '>')
            goto done;
        if (nl + 1 < PRE_NAME)
            name[nl++] = (char)lower(c);
        i++;
    }
    while (i < n && is_ws(s[i]))
        i++;
    if (i >= n)
        return -1;
    if (s[i] != '=')
        goto done;
    i++;
value:
    while (i < n && is_ws(s[i]))
        i++;
    if (i >= n)
        return -1;
    if (s[i] == '"' || s[i] == '\'') {
        unsigned char q = s[i++];
        while (i < n && s[i] != q) {
            if (vl + 1 < PRE_VALUE)
                val[vl++] = (char)lower(s[i]);
            i++;
        }
        if (i >= n)
            return -1;
        i++;
        goto done;
    }
    if (s[i] == '>')
        goto done;
    while (i < n && !is_ws(s[i]) && s[i] != '>') {
        if (vl + 1 < PRE_VALUE)
            val[vl++] = (char)lower(s[i]);
        i++;
    }
    if (i >= n)
        return -1;
done:
    name[nl] = '\0';
    val[vl] = '\0';
    *ip = i;
    return rc;
}

/* "Extracting a character encoding from a meta element" (value is
 * lowercase): the label after charset=, or "" . */
static void content_charset(const char *v, char *out)
{
    size_t n = strlen(v), i = 0;
    out[0] = '\0';
    for (;;) {
        const char *f = strstr(v + i, "charset");
        if (f == NULL)
            return;
        i = (size_t)(f - v) + 7;
        while (i < n && is_ws((unsigned char)v[i]))
            i++;
        if (i < n && v[i] == '=')
            break;
    }
    i++;
    while (i < n && is_ws((unsigned char)v[i]))
        i++;
    if (i >= n)
        return;
    if (v[i] == '"' || v[i] == '\'') {
        const char *e = strchr(v + i + 1, v[i]);
        if (e != NULL)
            label_copy(out, v + i + 1, (size_t)(e - (v + i + 1)));
        return;
    }
    size_t j = i;
    while (j < n && !is_ws((unsigned char)v[j]) && v[j] != ';')
        j++;
    label_copy(out, v + i, j - i);
}

/* The HTML spec's "prescan a byte stream to determine its encoding" over
 * s[0..n): an enc_id, or -1. */
static int prescan(const unsigned char *s, size_t n)
{
    char name[PRE_NAME], val[PRE_VALUE], cs[CHARSET_LABEL_MAX];
    size_t i = 0;
    for (; i < n; i++) {
        if (s[i] != '<')
            continue;
        size_t left = n - i;
        if (left >= 4 && memcmp(s + i, "<!--", 4) == 0) {
            size_t j = i + 2;
            while (j + 2 < n && !(s[j] == '-' && s[j + 1] == '-' && s[j + 2] == '>'))
                j++;
            if (j + 2 >= n)
                return -1;
            i = j + 2;
            continue;
        }
        if (left >= 6 && ieq_n((const char *)s + i + 1, 4, "meta") &&
            (is_ws(s[i + 5]) || s[i + 5] == '/')) {
            size_t j = i + 5;
            bool got_pragma = false, seen_equiv = false, seen_content = false,
                 seen_charset = false;
            int need_pragma = -1; /* -1 null, 0 false, 1 true */
            int enc = -1;
            int rc;
            while ((rc = pre_attr(s, n, &j, name, val)) == 1) {
                if (strcmp(name, "http-equiv") == 0 && !seen_equiv) {
                    seen_equiv = true;
                    if (strcmp(val, "content-type") == 0)
                        got_pragma = true;
                } else if (strcmp(name, "content") == 0 && !seen_content) {
                    seen_content = true;
                    if (enc < 0) {
                        content_charset(val, cs);
                        int e = label_lookup(cs);
                        if (e >= 0) {
                            enc = e;
                            need_pragma = 1;
                        }
                    }
                } else if (strcmp(name, "charset") == 0 && !seen_charset) {
                    seen_charset = true;
                    label_copy(cs, val, strlen(val));
                    enc = label_lookup(cs);
                    need_pragma = 0;
                }
            }
            if (rc < 0)
                return -1;
            i = j;
            if (need_pragma < 0 || (need_pragma == 1 && !got_pragma) || enc < 0)
                continue;
            if (enc == E_U16LE || enc == E_U16BE)
                enc = E_UTF8; /* a UTF-16 page could not have said so in ASCII */
            return enc;
        }
        if ((left >= 2 && is_alpha(s[i + 1])) ||
            (left >= 3 && s[i + 1] == '/' && is_alpha(s[i + 2]))) {
            size_t j = i + 1;
            while (j < n && !is_ws(s[j]) && s[j] != '>')
                j++;
            int rc;
            while ((rc = pre_attr(s, n, &j, name, val)) == 1)
                ;
            if (rc < 0)
                return -1;
            i = j;
            continue;
        }
        if (left >= 2 && (s[i + 1] == '!' || s[i + 1] == '/' || s[i + 1] == '?')) {
            const unsigned char *gt = memchr(s + i + 1, '>', n - i - 1);
            if (gt == NULL)
                return -1;
            i = (size_t)(gt - s);
        }
    }
    return -1;
}

/* Content-Type: type/subtype; charset=...: the first charset parameter. */
static void header_charset(const char *ct, char *out)
{
    out[0] = '\0';
    if (ct == NULL)
        return;
    const char *s = strchr(ct, ';');
    while (s != NULL && *s == ';') {
        s++;
        while (is_ws((unsigned char)*s))
            s++;
        const char *name = s;
        while (*s && *s != '=' && *s != ';')
            s++;
        size_t nlen = (size_t)(s - name);
        while (nlen > 0 && is_ws((unsigned char)name[nlen - 1]))
            nlen--;
        if (*s != '=')
            continue;
        s++;
        while (is_ws((unsigned char)*s))
            s++;
        const char *v = s;
        size_t vlen;
        if (*s == '"') {
            v = ++s;
            while (*s && *s != '"')
                s++;
            vlen = (size_t)(s - v);
            if (*s == '"')
                s++;
        } else {
            while (*s && *s != ';')
                s++;
            vlen = (size_t)(s - v);
        }
        if (out[0] == '\0' && ieq_n(name, nlen, "charset"))
            label_copy(out, v, vlen);
        while (*s && *s != ';')
            s++;
    }
}

/* ---- API ------------------------------------------------------------------ */

void charset_header_label(const char *content_type, char out[CHARSET_LABEL_MAX])
{
    header_charset(content_type, out);
}

bool charset_label_known(const char *label)
{
    return label_lookup(label) >= 0;
}

static const char *choose(int enc, size_t bom, charset_source src, charset_choice *out)
{
    if (out != NULL) {
        out->name = encs[enc].name;
        out->mode = encs[enc].mode;
        out->unit = (enc == E_U16LE || enc == E_U16BE) ? 2 : 1;
        out->bom_len = bom;
        out->source = src;
    }
    return encs[enc].name;
}

const char *charset_sniff(const void *bytes, size_t len, const char *header_label,
                          charset_choice *out)
{
    const unsigned char *s = bytes;
    size_t n = len < CHARSET_SNIFF_MAX ? len : CHARSET_SNIFF_MAX;
    int enc;
    if (n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF)
        return choose(E_UTF8, 3, CHARSET_FROM_BOM, out);
    if (n >= 2 && s[0] == 0xFF && s[1] == 0xFE)
        return choose(E_U16LE, 2, CHARSET_FROM_BOM, out);
    if (n >= 2 && s[0] == 0xFE && s[1] == 0xFF)
        return choose(E_U16BE, 2, CHARSET_FROM_BOM, out);
    if (header_label != NULL && (enc = label_lookup(header_label)) >= 0)
        return choose(enc, 0, CHARSET_FROM_HEADER, out);
    if ((enc = prescan(s, n)) >= 0)
        return choose(enc, 0, CHARSET_FROM_META, out);
    return choose(E_UTF8, 0, CHARSET_FROM_DEFAULT, out);
}

const char *charset_prescan(const void *bytes, size_t len)
{
    int enc = prescan(bytes, len < CHARSET_SNIFF_MAX ? len : CHARSET_SNIFF_MAX);
    return enc >= 0 ? encs[enc].name : NULL;
}

const char *charset_default(charset_choice *out)
{
    return choose(E_UTF8, 0, CHARSET_FROM_DEFAULT, out);
}
