/* tests/site/sitemaps: the test site's sitemaps (testsite --sitemaps).
 *
 * With the option, a.test (host 0) has sitemaps listing pages that no page
 * links to; every other host has none (/sitemap.xml is 404 there):
 *
 *   /robots.txt            gains "Sitemap: http://a.test:PORT/sitemaps/index.xml"
 *   /sitemap.xml           urlset: / (its <lastmod>: --sitemap-lastmod),
 *                          /sm/only/1..3.html (sitemap-only), and
 *                          entries a crawler must refuse: b.test (another
 *                          host), https (another scheme), a relative loc
 *   /sitemaps/index.xml    sitemapindex: child.xml.gz, plain.xml, broken.xml,
 *                          and b.test's /sitemaps/x.xml (another host)
 *   /sitemaps/child.xml.gz gzip file (application/gzip, no Content-Encoding):
 *                          /sitemaps/only/1..2.html, and /sm/outside.html,
 *                          which lies outside /sitemaps/ (refused)
 *   /sitemaps/plain.xml    urlset: /sitemaps/only/3.html
 *   /sitemaps/broken.xml   not well-formed XML before its first entry
 *   /sm/only/N.html, /sitemaps/only/N.html, /sm/outside.html
 *                          small HTML pages without links
 *
 * The expected set (expect.c) reads the same entries through
 * site_sitemap_entries and applies the protocol's rule (same host, below
 * the sitemap's directory) and the crawler's index depth of 1. */
#ifndef CRAWLD_TESTSITE_SITEMAPS_H
#define CRAWLD_TESTSITE_SITEMAPS_H

#include "common/buf.h"
#include "tests/site/site.h"

/* site_res.n of an SK_SITEMAP: */
enum { SITEMAP_RES_URLSET = 0, SITEMAP_RES_INDEX = 1, SITEMAP_RES_PAGE = 2, SITEMAP_RES_BROKEN = 3 };

/* 0 with *r filled when target is one of the sitemap targets of host h
 * (only with the option), else -ENOENT. */
int site_sitemap_lookup(const site *s, int h, const char *target, site_res *r /* OUT */);
/* The Sitemap lines host h adds to its robots.txt. 0 or -ENOMEM. */
int site_sitemap_robots(const site *s, int h, cr_buf *out);
/* The body of an SK_SITEMAP (gzip bytes for a .gz target). 0 or -ENOMEM. */
int site_sitemap_body(const site *s, int h, const char *target, const site_res *r, cr_buf *out);
/* The entries of a sitemap that name a host of the site over http: each as
 * a site_link (elem SE_A for a page, SE_LINK_CANONICAL for a child
 * sitemap), in file order, appended to links. 0 or -ENOMEM. */
int site_sitemap_entries(const site *s, int h, const char *target, const site_res *r,
                         site_links *links);

#endif
