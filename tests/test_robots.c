/* tests/test_robots: frontier/robots against the rules of RFC 9309.
 *
 * Each case names the section it comes from: §2.1/§2.2.1 groups and agent
 * matching, §2.2.2 longest match, §2.2.3 special characters, §2.3 access
 * results, §5 examples; then parsing details, Crawl-delay, Sitemap, the
 * description text, bounded cost on hostile input, and out of memory.
 *
 * Why one file of about 1,750 lines: one test binary per module (STYLE.md);
 * most of its length is 130 small cases, one per RFC 9309 rule or example. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "frontier/robots.h"

/* ---- helpers ---------------------------------------------------------- */

static robots *parse_n(const char *txt, size_t len, const char *agent)
{
    robots *r = robots_parse(txt, len, agent, 0);
    assert_non_null(r);
    return r;
}

static robots *parse(const char *txt, const char *agent)
{
    return parse_n(txt, strlen(txt), agent);
}

static int allowed(const robots *r, const char *path)
{
    return robots_allowed(r, path, strlen(path), NULL);
}

/* The decision and the rule text behind it. */
static void assert_decision(const robots *r, const char *path, int expect, const char *rule)
{
    robots_rule why;
    int got = robots_allowed(r, path, strlen(path), &why);
    char text[256];
    assert_int_equal(robots_rule_describe(&why, text, sizeof text), 0);
    if (got != expect || strcmp(text, rule) != 0)
        fail_msg("path %s: got %d (%s), want %d (%s)", path, got, text, expect, rule);
}

/* One robots.txt, one agent, one path. */
static int verdict(const char *txt, const char *agent, const char *path)
{
    robots *r = parse(txt, agent);
    int a = allowed(r, path);
    robots_free(r);
    return a;
}

/* ---- §2.1, §2.2.1: groups and user-agent matching ---------------------- */

static void ua_exact_group_applies(void **s)
{
    (void)s;
    const char *t = "User-agent: foobot\nDisallow: /private/\n";
    assert_int_equal(verdict(t, "foobot", "/private/x"), 0);
    assert_int_equal(verdict(t, "foobot", "/public/x"), 1);
}

static void ua_match_is_case_insensitive(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: FooBot\nDisallow: /\n", "foobot", "/a"), 0);
    assert_int_equal(verdict("User-agent: foobot\nDisallow: /\n", "FOOBOT", "/a"), 0);
}

static void ua_key_is_case_insensitive(void **s)
{
    (void)s;
    assert_int_equal(verdict("USER-AGENT: foobot\nDisallow: /\n", "foobot", "/a"), 0);
    assert_int_equal(verdict("user-Agent: foobot\nDisallow: /\n", "foobot", "/a"), 0);
}

static void ua_line_token_stops_at_version(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: FooBot/1.2\nDisallow: /\n", "foobot", "/a"), 0);
    assert_int_equal(verdict("User-agent: FooBot 2\nDisallow: /\n", "foobot", "/a"), 0);
}

static void agent_argument_token_stops_at_version(void **s)
{
    (void)s;
    const char *t = "User-agent: crawld\nDisallow: /\n";
    assert_int_equal(verdict(t, "crawld/0.1 (+https://example.com/bot)", "/a"), 0);
}

static void ua_prefix_of_agent_does_not_match(void **s)
{
    (void)s;
    const char *t = "User-agent: foo\nDisallow: /\n";
    assert_int_equal(verdict(t, "foobot", "/a"), 1);
}

static void ua_longer_than_agent_does_not_match(void **s)
{
    (void)s;
    const char *t = "User-agent: foobotx\nDisallow: /\n";
    assert_int_equal(verdict(t, "foobot", "/a"), 1);
}

static void ua_falls_back_to_star(void **s)
{
    (void)s;
    const char *t = "User-agent: other\nDisallow: /o/\n\nUser-agent: *\nDisallow: /s/\n";
    assert_int_equal(verdict(t, "foobot", "/s/a"), 0);
    assert_int_equal(verdict(t, "foobot", "/o/a"), 1);
}

static void ua_exact_group_replaces_star(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /\n\nUser-agent: foobot\nDisallow: /tmp/\n";
    assert_int_equal(verdict(t, "foobot", "/index.html"), 1);
    assert_int_equal(verdict(t, "foobot", "/tmp/x"), 0);
    assert_int_equal(verdict(t, "otherbot", "/index.html"), 0);
}

static void ua_no_group_and_no_star_allows_all(void **s)
{
    (void)s;
    robots *r = parse("User-agent: otherbot\nDisallow: /\n", "foobot");
    assert_int_equal(robots_rule_count(r), 0);
    assert_decision(r, "/anything", 1, "-");
    robots_free(r);
}

static void empty_file_allows_all(void **s)
{
    (void)s;
    robots *r = parse("", "foobot");
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(allowed(r, "/"), 1);
    robots_free(r);
    r = robots_parse(NULL, 0, "foobot", 0);
    assert_non_null(r);
    assert_int_equal(allowed(r, "/x"), 1);
    robots_free(r);
}

static void ua_same_agent_groups_merge(void **s)
{
    (void)s;
    const char *t = "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n"
                    "user-agent: *\ndisallow: /star\n\n"
                    "user-agent: ExampleBot\ndisallow: /baz\n";
    robots *r = parse(t, "examplebot");
    assert_int_equal(robots_rule_count(r), 3);
    assert_int_equal(allowed(r, "/foo"), 0);
    assert_int_equal(allowed(r, "/bar"), 0);
    assert_int_equal(allowed(r, "/baz"), 0);
    assert_int_equal(allowed(r, "/star"), 1);
    robots_free(r);
}

static void ua_star_groups_merge(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /x\n\n"
                    "User-agent: *\nDisallow: /b\n";
    robots *r = parse(t, "foobot");
    assert_int_equal(robots_rule_count(r), 2);
    assert_int_equal(allowed(r, "/a"), 0);
    assert_int_equal(allowed(r, "/b"), 0);
    assert_int_equal(allowed(r, "/x"), 1);
    robots_free(r);
}

static void ua_several_agents_share_a_group(void **s)
{
    (void)s;
    const char *t = "User-agent: barbot\nUser-agent: bazbot\nDisallow: /p\n";
    assert_int_equal(verdict(t, "barbot", "/p"), 0);
    assert_int_equal(verdict(t, "bazbot", "/p"), 0);
    assert_int_equal(verdict(t, "quxbot", "/p"), 1);
}

static void ua_blank_line_between_agents_keeps_group(void **s)
{
    (void)s;
    const char *t = "User-agent: a\n\nUser-agent: foobot\n\nDisallow: /p\n";
    assert_int_equal(verdict(t, "a", "/p"), 0);
    assert_int_equal(verdict(t, "foobot", "/p"), 0);
}

static void ua_after_rule_starts_new_group(void **s)
{
    (void)s;
    const char *t = "User-agent: a\nDisallow: /a\nUser-agent: b\nDisallow: /b\n";
    assert_int_equal(verdict(t, "a", "/b"), 1);
    assert_int_equal(verdict(t, "a", "/a"), 0);
    assert_int_equal(verdict(t, "b", "/a"), 1);
    assert_int_equal(verdict(t, "b", "/b"), 0);
}

static void ua_exact_group_without_rules_allows_all(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /\n\nUser-agent: quxbot\n";
    robots *r = parse(t, "quxbot");
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(allowed(r, "/anything"), 1);
    robots_free(r);
}

static void rules_before_any_user_agent_are_ignored(void **s)
{
    (void)s;
    const char *t = "Disallow: /early\nAllow: /x\n\nUser-agent: *\nDisallow: /late\n";
    robots *r = parse(t, "foobot");
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/early"), 1);
    assert_int_equal(allowed(r, "/late"), 0);
    robots_free(r);
}

static void ua_star_and_named_in_one_group(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nUser-agent: foobot\nDisallow: /both\n";
    assert_int_equal(verdict(t, "foobot", "/both"), 0);
    assert_int_equal(verdict(t, "other", "/both"), 0);
}

static void ua_value_with_comment(void **s)
{
    (void)s;
    const char *t = "User-agent: foobot # our friend\nDisallow: /c\n";
    assert_int_equal(verdict(t, "foobot", "/c"), 0);
}

static void ua_token_with_underscore_and_hyphen(void **s)
{
    (void)s;
    const char *t = "User-agent: my_bot-x\nDisallow: /m\n";
    assert_int_equal(verdict(t, "MY_BOT-X/3", "/m"), 0);
    assert_int_equal(verdict(t, "my_bot", "/m"), 1);
}

static void agent_null_or_empty_uses_star(void **s)
{
    (void)s;
    const char *t = "User-agent: foobot\nDisallow: /f\n\nUser-agent: *\nDisallow: /s\n";
    assert_int_equal(verdict(t, NULL, "/s"), 0);
    assert_int_equal(verdict(t, NULL, "/f"), 1);
    assert_int_equal(verdict(t, "", "/s"), 0);
    assert_int_equal(verdict(t, "/1.0", "/s"), 0);
}

static void ua_star_prefix_is_not_global(void **s)
{
    (void)s;
    const char *t = "User-agent: *bot\nDisallow: /\n";
    assert_int_equal(verdict(t, "foobot", "/a"), 1);
    assert_int_equal(verdict("User-agent: * \t\nDisallow: /\n", "foobot", "/a"), 0);
}

static void unknown_line_does_not_end_agent_run(void **s)
{
    (void)s;
    const char *t = "User-agent: a\nHost: example.com\nUser-agent: b\nDisallow: /p\n";
    assert_int_equal(verdict(t, "a", "/p"), 0);
    assert_int_equal(verdict(t, "b", "/p"), 0);
}

static void sitemap_line_does_not_end_agent_run(void **s)
{
    (void)s;
    const char *t = "User-agent: a\nSitemap: https://e.com/s.xml\nUser-agent: b\nDisallow: /p\n";
    assert_int_equal(verdict(t, "a", "/p"), 0);
}

static void crawl_delay_line_is_a_group_member(void **s)
{
    (void)s;
    const char *t = "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /p\n";
    assert_int_equal(verdict(t, "a", "/p"), 1);
    assert_int_equal(verdict(t, "b", "/p"), 0);
}

/* ---- RFC 9309 §5.1: the simple example ---------------------------------- */

static const char rfc_example[] = "User-Agent: *\n"
                                  "Disallow: *.gif$\n"
                                  "Disallow: /example/\n"
                                  "Allow: /publications/\n"
                                  "\n"
                                  "User-Agent: foobot\n"
                                  "Disallow:/\n"
                                  "Allow:/example/page.html\n"
                                  "Allow:/example/allowed.gif\n"
                                  "\n"
                                  "User-Agent: barbot\n"
                                  "User-Agent: bazbot\n"
                                  "Disallow: /example/page.html\n"
                                  "\n"
                                  "User-Agent: quxbot\n"
                                  "\n"
                                  "EOF\n";

static void rfc_example_star_gif(void **s)
{
    (void)s;
    robots *r = parse(rfc_example, "somebot");
    assert_decision(r, "/images/a.gif", 0, "disallow: *.gif$");
    assert_decision(r, "/a.gif?x=1", 1, "-");
    robots_free(r);
}

static void rfc_example_star_example_dir(void **s)
{
    (void)s;
    robots *r = parse(rfc_example, "somebot");
    assert_decision(r, "/example/x.html", 0, "disallow: /example/");
    assert_decision(r, "/example", 1, "-");
    robots_free(r);
}

static void rfc_example_star_publications(void **s)
{
    (void)s;
    robots *r = parse(rfc_example, "somebot");
    assert_decision(r, "/publications/2022.html", 1, "allow: /publications/");
    robots_free(r);
}

static void rfc_example_foobot(void **s)
{
    (void)s;
    robots *r = parse(rfc_example, "foobot");
    assert_int_equal(robots_rule_count(r), 3);
    assert_decision(r, "/", 0, "disallow: /");
    assert_decision(r, "/example/page.html", 1, "allow: /example/page.html");
    assert_decision(r, "/example/allowed.gif", 1, "allow: /example/allowed.gif");
    assert_decision(r, "/example/other.gif", 0, "disallow: /");
    robots_free(r);
}

static void rfc_example_barbot_bazbot(void **s)
{
    (void)s;
    robots *r = parse(rfc_example, "barbot");
    assert_decision(r, "/example/page.html", 0, "disallow: /example/page.html");
    assert_decision(r, "/example/a.gif", 1, "-"); /* the `*` group does not apply */
    robots_free(r);
    r = parse(rfc_example, "bazbot");
    assert_int_equal(allowed(r, "/example/page.html"), 0);
    robots_free(r);
}

static void rfc_example_quxbot(void **s)
{
    (void)s;
    robots *r = parse(rfc_example, "quxbot");
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(allowed(r, "/example/page.html"), 1);
    assert_int_equal(allowed(r, "/a.gif"), 1);
    robots_free(r);
}

/* ---- §2.2.2 and §5.2: longest match ----------------------------------- */

static void rfc_longest_match_example(void **s)
{
    (void)s;
    robots *r = parse("User-Agent: foobot\nAllow: /example/page/\n"
                      "Disallow: /example/page/disallowed.gif\n",
                      "foobot");
    assert_decision(r, "/example/page/", 1, "allow: /example/page/");
    assert_decision(r, "/example/page/disallowed.gif", 0,
                    "disallow: /example/page/disallowed.gif");
    robots_free(r);
}

static void longest_match_longer_disallow_wins(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nAllow: /p\nDisallow: /page\n";
    assert_int_equal(verdict(t, "x", "/page"), 0);
    assert_int_equal(verdict(t, "x", "/pa"), 1);
}

static void longest_match_longer_allow_wins(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /folder/\nAllow: /folder/page\n";
    assert_int_equal(verdict(t, "x", "/folder/page"), 1);
    assert_int_equal(verdict(t, "x", "/folder/other"), 0);
}

static void longest_match_order_does_not_matter(void **s)
{
    (void)s;
    const char *a = "User-agent: *\nAllow: /folder/page\nDisallow: /folder/\n";
    const char *b = "User-agent: *\nDisallow: /folder/\nAllow: /folder/page\n";
    assert_int_equal(verdict(a, "x", "/folder/page"), verdict(b, "x", "/folder/page"));
    assert_int_equal(verdict(a, "x", "/folder/x"), 0);
    assert_int_equal(verdict(b, "x", "/folder/x"), 0);
}

static void allow_wins_a_tie(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /page\nAllow: /page\n", "x");
    assert_decision(r, "/page", 1, "allow: /page");
    robots_free(r);
    r = parse("User-agent: *\nAllow: /page\nDisallow: /page\n", "x");
    assert_decision(r, "/page", 1, "allow: /page");
    robots_free(r);
}

static void allow_wins_a_tie_between_different_patterns(void **s)
{
    (void)s;
    /* both 5 octets: "/pag*" and "/page" */
    const char *t = "User-agent: *\nDisallow: /page\nAllow: /pag*\n";
    assert_int_equal(verdict(t, "x", "/page"), 1);
}

static void longest_match_counts_wildcard_octets(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nAllow: /p\nDisallow: /*.php\n", "x");
    assert_decision(r, "/p.php", 0, "disallow: /*.php");
    assert_decision(r, "/p.html", 1, "allow: /p");
    robots_free(r);
}

static void longest_match_counts_the_dollar(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /ab\nAllow: /ab$\n", "x");
    assert_decision(r, "/ab", 1, "allow: /ab$");
    assert_decision(r, "/abc", 0, "disallow: /ab");
    robots_free(r);
}

static void longest_match_uses_normalized_length(void **s)
{
    (void)s;
    /* "/%7Ea" is 5 octets as written but "/~a" (3) once normalized, so the
     * 4-octet Allow is the longer match */
    robots *r = parse("User-agent: *\nDisallow: /%7Ea\nAllow: /~ab\n", "x");
    assert_decision(r, "/~abc", 1, "allow: /~ab");
    assert_decision(r, "/~ax", 0, "disallow: /%7Ea");
    robots_free(r);
}

static void no_matching_rule_means_allowed(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a\nAllow: /b\n", "x");
    assert_decision(r, "/c", 1, "-");
    robots_free(r);
}

static void duplicate_rules_are_harmless(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /d\nDisallow: /d\nDisallow: /d\n";
    assert_int_equal(verdict(t, "x", "/d"), 0);
    assert_int_equal(verdict(t, "x", "/e"), 1);
}

/* ---- §2.2.2: paths ---------------------------------------------------- */

static void paths_are_case_sensitive(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /Private\n";
    assert_int_equal(verdict(t, "x", "/Private/a"), 0);
    assert_int_equal(verdict(t, "x", "/private/a"), 1);
    assert_int_equal(verdict(t, "x", "/PRIVATE"), 1);
}

static void pattern_is_a_prefix_match(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /fish\n", "x");
    assert_int_equal(allowed(r, "/fish"), 0);
    assert_int_equal(allowed(r, "/fish.html"), 0);
    assert_int_equal(allowed(r, "/fish/salmon.html"), 0);
    assert_int_equal(allowed(r, "/fishheads/yummy.html"), 0);
    assert_int_equal(allowed(r, "/fish.php?id=anything"), 0);
    assert_int_equal(allowed(r, "/Fish.asp"), 1);
    assert_int_equal(allowed(r, "/catfish"), 1);
    assert_int_equal(allowed(r, "/?id=fish"), 1);
    robots_free(r);
}

static void pattern_with_trailing_slash(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /fish/\n", "x");
    assert_int_equal(allowed(r, "/fish/"), 0);
    assert_int_equal(allowed(r, "/fish/?id=anything"), 0);
    assert_int_equal(allowed(r, "/fish/salmon.htm"), 0);
    assert_int_equal(allowed(r, "/fish"), 1);
    assert_int_equal(allowed(r, "/fish.html"), 1);
    robots_free(r);
}

static void query_is_part_of_the_match(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /search?q=\nDisallow: /*?sid=\n", "x");
    assert_int_equal(allowed(r, "/search?q=cats"), 0);
    assert_int_equal(allowed(r, "/search"), 1);
    assert_int_equal(allowed(r, "/search?page=2"), 1);
    assert_int_equal(allowed(r, "/a/b?sid=1"), 0);
    assert_int_equal(allowed(r, "/a/b?x=1&sid=1"), 1);
    robots_free(r);
}

static void disallow_root_blocks_everything(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /\n", "x");
    assert_int_equal(allowed(r, "/"), 0);
    assert_int_equal(allowed(r, "/a/b/c?d"), 0);
    assert_int_equal(allowed(r, "/robots.txt"), 1);
    robots_free(r);
}

static void empty_path_is_root(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /$\n", "x");
    assert_int_equal(robots_allowed(r, "", 0, NULL), 0);
    assert_int_equal(robots_allowed(r, NULL, 0, NULL), 0);
    assert_int_equal(allowed(r, "/a"), 1);
    robots_free(r);
}

static void pattern_without_leading_slash_is_rooted(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: tmp/\n", "x");
    assert_decision(r, "/tmp/a", 0, "disallow: tmp/");
    assert_int_equal(allowed(r, "/x/tmp/a"), 1);
    robots_free(r);
}

static void path_length_argument_is_respected(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /ab$\n", "x");
    assert_int_equal(robots_allowed(r, "/abc", 3, NULL), 0);
    assert_int_equal(robots_allowed(r, "/abc", 4, NULL), 1);
    robots_free(r);
}

/* ---- §2.2.3: special characters --------------------------------------- */

static void star_matches_any_sequence(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /*/private/\n", "x");
    assert_int_equal(allowed(r, "/a/private/b"), 0);
    assert_int_equal(allowed(r, "/a/b/c/private/"), 0);
    assert_int_equal(allowed(r, "//private/"), 0);
    assert_int_equal(allowed(r, "/private/"), 1);
    robots_free(r);
}

static void star_matches_empty_sequence(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /fish*\n", "x");
    assert_int_equal(allowed(r, "/fish"), 0);
    assert_int_equal(allowed(r, "/fishheads"), 0);
    assert_int_equal(allowed(r, "/fis"), 1);
    robots_free(r);
}

static void star_before_extension(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /*.php\n", "x");
    assert_int_equal(allowed(r, "/filename.php"), 0);
    assert_int_equal(allowed(r, "/folder/filename.php"), 0);
    assert_int_equal(allowed(r, "/folder/filename.php?parameters"), 0);
    assert_int_equal(allowed(r, "/folder/any.php.file.html"), 0);
    assert_int_equal(allowed(r, "/filename.php/"), 0);
    assert_int_equal(allowed(r, "/"), 1);
    assert_int_equal(allowed(r, "/windows.PHP"), 1);
    robots_free(r);
}

static void dollar_anchors_the_end(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /*.php$\n", "x");
    assert_int_equal(allowed(r, "/filename.php"), 0);
    assert_int_equal(allowed(r, "/folder/filename.php"), 0);
    assert_int_equal(allowed(r, "/filename.php?parameters"), 1);
    assert_int_equal(allowed(r, "/filename.php/"), 1);
    assert_int_equal(allowed(r, "/filename.php5"), 1);
    assert_int_equal(allowed(r, "/windows.PHP"), 1);
    robots_free(r);
}

static void dollar_with_plain_path(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /exact$\n", "x");
    assert_int_equal(allowed(r, "/exact"), 0);
    assert_int_equal(allowed(r, "/exact/"), 1);
    assert_int_equal(allowed(r, "/exactly"), 1);
    robots_free(r);
}

static void dollar_inside_pattern_is_literal(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a$b\n", "x");
    assert_int_equal(allowed(r, "/a$b"), 0);
    assert_int_equal(allowed(r, "/a%24b"), 0);
    assert_int_equal(allowed(r, "/a"), 1);
    robots_free(r);
}

static void star_then_dollar_is_unanchored(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /fish*$\n", "x");
    assert_int_equal(allowed(r, "/fish"), 0);
    assert_int_equal(allowed(r, "/fish/and/chips?x"), 0);
    assert_int_equal(allowed(r, "/fis"), 1);
    robots_free(r);
}

static void several_stars(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a*b*c$\n", "x");
    assert_int_equal(allowed(r, "/abc"), 0);
    assert_int_equal(allowed(r, "/a-b-c"), 0);
    assert_int_equal(allowed(r, "/axxbyyc"), 0);
    assert_int_equal(allowed(r, "/acb"), 1);
    assert_int_equal(allowed(r, "/abcd"), 1);
    assert_int_equal(allowed(r, "/ab-c-c"), 0);
    robots_free(r);
}

static void leading_star_pattern(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: *.gif$\n", "x");
    assert_int_equal(allowed(r, "/a.gif"), 0);
    assert_int_equal(allowed(r, "/x/y/z.gif"), 0);
    assert_int_equal(allowed(r, "/a.gifs"), 1);
    robots_free(r);
}

static void lone_star_blocks_everything(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: *\n", "x");
    assert_int_equal(allowed(r, "/"), 0);
    assert_int_equal(allowed(r, "/anything?at=all"), 0);
    robots_free(r);
}

static void percent_2a_matches_a_literal_star(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /path/file-with-a-%2A.html\n", "x");
    assert_int_equal(allowed(r, "/path/file-with-a-*.html"), 0);
    assert_int_equal(allowed(r, "/path/file-with-a-%2a.html"), 0);
    assert_int_equal(allowed(r, "/path/file-with-a-x.html"), 1);
    robots_free(r);
}

static void percent_24_matches_a_literal_dollar(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /path/foo-%24\n", "x");
    assert_int_equal(allowed(r, "/path/foo-$"), 0);
    assert_int_equal(allowed(r, "/path/foo-%24"), 0);
    assert_int_equal(allowed(r, "/path/foo-"), 1);
    robots_free(r);
}

/* ---- §2.2.2: percent-encoding ----------------------------------------- */

static void percent_hex_case_is_ignored(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: *\nDisallow: /a%3cd\n", "x", "/a%3Cd"), 0);
    assert_int_equal(verdict("User-agent: *\nDisallow: /a%3Cd\n", "x", "/a%3cd"), 0);
    assert_int_equal(verdict("User-agent: *\nDisallow: /a%3Cd\n", "x", "/a%3Dd"), 1);
}

static void percent_unreserved_in_path_is_decoded(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: *\nDisallow: /~a\n", "x", "/%7Ea"), 0);
    assert_int_equal(verdict("User-agent: *\nDisallow: /~a\n", "x", "/%7ea"), 0);
}

static void percent_unreserved_in_pattern_is_decoded(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: *\nDisallow: /%7Ea\n", "x", "/~a"), 0);
    assert_int_equal(verdict("User-agent: *\nDisallow: /%41%2d%5F\n", "x", "/A-_/x"), 0);
}

static void rfc_table_encoded_unreserved(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /foo/bar/baz\n", "x");
    assert_int_equal(allowed(r, "/foo/bar/%62%61%7A"), 0);
    robots_free(r);
    r = parse("User-agent: *\nDisallow: /foo/bar/%62%61%7A\n", "x");
    assert_int_equal(allowed(r, "/foo/bar/baz"), 0);
    robots_free(r);
}

static void rfc_table_non_ascii_pattern(void **s)
{
    (void)s;
    /* U+30C4 written raw in the file matches its UTF-8 percent-encoding */
    robots *r = parse("User-agent: *\nDisallow: /foo/bar/\xE3\x83\x84\n", "x");
    assert_int_equal(allowed(r, "/foo/bar/%E3%83%84"), 0);
    assert_int_equal(allowed(r, "/foo/bar/%e3%83%84"), 0);
    assert_int_equal(allowed(r, "/foo/bar/\xE3\x83\x84"), 0);
    assert_int_equal(allowed(r, "/foo/bar/%E3%83%85"), 1);
    robots_free(r);
}

static void rfc_table_encoded_pattern_matches_raw_path(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", "x");
    assert_int_equal(allowed(r, "/foo/bar/\xE3\x83\x84"), 0);
    assert_int_equal(allowed(r, "/foo/bar/%E3%83%84"), 0);
    robots_free(r);
}

static void percent_reserved_is_not_decoded(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a/b\n", "x");
    assert_int_equal(allowed(r, "/a%2Fb"), 1);
    robots_free(r);
    r = parse("User-agent: *\nDisallow: /a%2fb\n", "x");
    assert_int_equal(allowed(r, "/a%2Fb"), 0);
    assert_int_equal(allowed(r, "/a/b"), 1);
    robots_free(r);
}

static void stray_percent_is_literal(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /100%\n", "x");
    assert_int_equal(allowed(r, "/100%"), 0);
    assert_int_equal(allowed(r, "/100%25"), 0);
    assert_int_equal(allowed(r, "/100%zz"), 0);
    assert_int_equal(allowed(r, "/100"), 1);
    robots_free(r);
}

static void raw_space_in_path_matches_its_encoding(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a%20b\n", "x");
    assert_int_equal(allowed(r, "/a b"), 0);
    assert_int_equal(allowed(r, "/a%20b"), 0);
    assert_int_equal(allowed(r, "/a+b"), 1);
    robots_free(r);
}

/* ---- §2.2.2: /robots.txt ---------------------------------------------- */

static void robots_txt_is_always_allowed(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /\nDisallow: /robots.txt\n", "x");
    assert_decision(r, "/robots.txt", 1, "implicit allow: /robots.txt");
    robots_free(r);
}

static void robots_txt_only_exactly(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /\n", "x");
    assert_int_equal(allowed(r, "/robots.txt?x=1"), 0);
    assert_int_equal(allowed(r, "/robots.txt/"), 0);
    assert_int_equal(allowed(r, "/a/robots.txt"), 0);
    assert_int_equal(allowed(r, "/%72obots.txt"), 1); /* %72 is 'r' */
    robots_free(r);
}

/* ---- §2.3: access results are the caller's ---------------------------- */

static void allow_all_constructor(void **s)
{
    (void)s;
    robots *r = robots_allow_all();
    assert_non_null(r);
    assert_decision(r, "/", 1, "-");
    assert_decision(r, "/private/x", 1, "-");
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(robots_crawl_delay_ms(r), -1);
    assert_int_equal(robots_sitemap_count(r), 0);
    robots_free(r);
}

static void disallow_all_constructor(void **s)
{
    (void)s;
    robots *r = robots_disallow_all();
    assert_non_null(r);
    assert_decision(r, "/", 0, "disallow all: robots.txt unavailable");
    assert_decision(r, "/x?y", 0, "disallow all: robots.txt unavailable");
    assert_decision(r, "/robots.txt", 1, "implicit allow: /robots.txt");
    assert_int_equal(robots_crawl_delay_ms(r), -1);
    robots_free(r);
}

/* ---- parsing details -------------------------------------------------- */

static void comment_lines_are_ignored(void **s)
{
    (void)s;
    const char *t = "# hello\n#User-agent: foobot\nUser-agent: *\n# Disallow: /c\nDisallow: /d\n";
    robots *r = parse(t, "foobot");
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/c"), 1);
    assert_int_equal(allowed(r, "/d"), 0);
    robots_free(r);
}

static void comment_after_value_is_stripped(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a # not /b\n", "x");
    assert_decision(r, "/a", 0, "disallow: /a");
    assert_int_equal(allowed(r, "/b"), 1);
    robots_free(r);
}

static void comment_right_after_colon_empties_value(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow:# /a\n", "x");
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(allowed(r, "/a"), 1);
    robots_free(r);
}

static void keys_are_case_insensitive(void **s)
{
    (void)s;
    robots *r = parse("user-agent: *\nDISALLOW: /a\naLLoW: /a/b\nDisAllow: /c\n", "x");
    assert_int_equal(robots_rule_count(r), 3);
    assert_int_equal(allowed(r, "/a/x"), 0);
    assert_int_equal(allowed(r, "/a/b"), 1);
    assert_int_equal(allowed(r, "/c"), 0);
    robots_free(r);
}

static void lf_line_endings(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: *\nDisallow: /a\nDisallow: /b\n", "x", "/b"), 0);
}

static void crlf_line_endings(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\r\nDisallow: /a\r\nDisallow: /b\r\n", "x");
    assert_int_equal(robots_rule_count(r), 2);
    assert_decision(r, "/b", 0, "disallow: /b");
    robots_rule why;
    robots_allowed(r, "/b", 2, &why);
    assert_int_equal(why.line, 3);
    robots_free(r);
}

static void cr_line_endings(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\rDisallow: /a\rDisallow: /b\r", "x");
    assert_int_equal(robots_rule_count(r), 2);
    assert_int_equal(allowed(r, "/a"), 0);
    assert_int_equal(allowed(r, "/b"), 0);
    robots_free(r);
}

static void mixed_line_endings(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\rDisallow: /a\r\nDisallow: /b\nDisallow: /c\n\rDisallow: /d", "x");
    assert_int_equal(robots_rule_count(r), 4);
    robots_rule why;
    robots_allowed(r, "/d", 2, &why);
    assert_int_equal(why.line, 6); /* "\n\r" is two line ends */
    robots_free(r);
}

static void last_line_without_newline(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent: *\nDisallow: /end", "x", "/end"), 0);
}

static void utf8_bom_is_skipped(void **s)
{
    (void)s;
    robots *r = parse("\xEF\xBB\xBFUser-agent: foobot\nDisallow: /bom\n", "foobot");
    assert_int_equal(allowed(r, "/bom"), 0);
    robots_free(r);
}

static void bom_elsewhere_is_not_skipped(void **s)
{
    (void)s;
    /* a BOM in front of a later line makes its key unknown */
    const char *t = "User-agent: *\n\xEF\xBB\xBF"
                    "Disallow: /x\nDisallow: /y\n";
    robots *r = parse(t, "foobot");
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/x"), 1);
    assert_int_equal(allowed(r, "/y"), 0);
    robots_free(r);
}

static void empty_disallow_is_no_rule(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow:\n", "x");
    assert_int_equal(robots_rule_count(r), 0);
    assert_decision(r, "/", 1, "-");
    robots_free(r);
    r = parse("User-agent: *\nDisallow:    \t \n", "x");
    assert_int_equal(robots_rule_count(r), 0);
    robots_free(r);
}

static void empty_disallow_still_selects_the_group(void **s)
{
    (void)s;
    /* foobot's group exists (its only rule is empty), so `*` does not apply */
    const char *t = "User-agent: *\nDisallow: /\n\nUser-agent: foobot\nDisallow:\n";
    assert_int_equal(verdict(t, "foobot", "/a"), 1);
    assert_int_equal(verdict(t, "other", "/a"), 0);
}

static void empty_allow_is_no_rule(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nAllow:\nDisallow: /a\n", "x");
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/a"), 0);
    robots_free(r);
}

static void unknown_keys_are_ignored(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nNoindex: /a\nClean-param: x\nHost: e.com\nDisallow: /b\n";
    robots *r = parse(t, "x");
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/a"), 1);
    assert_int_equal(allowed(r, "/b"), 0);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.lines_skipped, 3);
    robots_free(r);
}

static void whitespace_around_colon_and_value(void **s)
{
    (void)s;
    robots *r = parse("  User-agent   :   foobot  \n\tDisallow\t:\t/w  \t\n", "foobot");
    assert_decision(r, "/w", 0, "disallow: /w");
    robots_free(r);
}

static void no_space_after_colon(void **s)
{
    (void)s;
    assert_int_equal(verdict("User-agent:*\nDisallow:/n\n", "x", "/n"), 0);
}

static void line_without_colon_is_ignored(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow /a\nDisallow: /b\n", "x");
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/a"), 1);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.lines_skipped, 1);
    robots_free(r);
}

static void common_key_typos_are_accepted(void **s)
{
    (void)s;
    const char *t = "useragent: a\ndisalow: /1\n\nuser agent: b\ndissallow: /2\n\n"
                    "User-Agent: c\nDissalow: /3\n";
    assert_int_equal(verdict(t, "a", "/1"), 0);
    assert_int_equal(verdict(t, "b", "/2"), 0);
    assert_int_equal(verdict(t, "c", "/3"), 0);
}

static void far_typos_are_not_accepted(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisalloww: /1\nDis-allow: /2\n", "x");
    assert_int_equal(robots_rule_count(r), 0);
    robots_free(r);
}

static void rule_reports_its_line_and_text(void **s)
{
    (void)s;
    robots *r = parse("# c\nUser-agent: *\n\nDisallow: /p*q$  # why\n", "x");
    robots_rule why;
    assert_int_equal(robots_allowed(r, "/pxq", 4, &why), 0);
    assert_int_equal(why.kind, ROBOTS_RULE_DISALLOW);
    assert_int_equal(why.line, 4);
    assert_int_equal(why.pattern_len, 5);
    assert_memory_equal(why.pattern, "/p*q$", 5);
    robots_free(r);
}

/* ---- Crawl-delay ------------------------------------------------------ */

static long delay_of(const char *txt, const char *agent)
{
    robots *r = parse(txt, agent);
    long d = robots_crawl_delay_ms(r);
    robots_free(r);
    return d;
}

static void crawl_delay_whole_seconds(void **s)
{
    (void)s;
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 10\n", "x"), 10000);
    assert_int_equal(delay_of("User-agent: *\ncrawl-DELAY:0\n", "x"), 0);
}

static void crawl_delay_fraction(void **s)
{
    (void)s;
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 0.5\n", "x"), 500);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 2.25\n", "x"), 2250);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: .1\n", "x"), 100);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 3.\n", "x"), 3000);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 1.23456\n", "x"), 1234);
}

static void crawl_delay_invalid_is_ignored(void **s)
{
    (void)s;
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: abc\n", "x"), -1);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: -1\n", "x"), -1);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 5s\n", "x"), -1);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay:\n", "x"), -1);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: .\n", "x"), -1);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 1 2\n", "x"), -1);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: junk\nCrawl-delay: 4\n", "x"), 4000);
}

static void crawl_delay_none_is_minus_one(void **s)
{
    (void)s;
    assert_int_equal(delay_of("User-agent: *\nDisallow: /\n", "x"), -1);
}

static void crawl_delay_of_the_chosen_group_only(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nCrawl-delay: 9\n\nUser-agent: foobot\nCrawl-delay: 2\n"
                    "\nUser-agent: other\nCrawl-delay: 30\n";
    assert_int_equal(delay_of(t, "foobot"), 2000);
    assert_int_equal(delay_of(t, "nobot"), 9000);
    assert_int_equal(delay_of(t, "other"), 30000);
}

static void crawl_delay_exact_group_without_delay(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nCrawl-delay: 9\n\nUser-agent: foobot\nDisallow: /x\n";
    assert_int_equal(delay_of(t, "foobot"), -1);
}

static void crawl_delay_merged_groups_take_largest(void **s)
{
    (void)s;
    const char *t = "User-agent: foobot\nCrawl-delay: 2\n\nUser-agent: foobot\nCrawl-delay: 7\n"
                    "\nUser-agent: foobot\nCrawl-delay: 1\n";
    assert_int_equal(delay_of(t, "foobot"), 7000);
}

static void crawl_delay_is_clamped(void **s)
{
    (void)s;
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 99999999999999999999999\n", "x"),
                     ROBOTS_MAX_DELAY_MS);
    assert_int_equal(delay_of("User-agent: *\nCrawl-delay: 86401\n", "x"), ROBOTS_MAX_DELAY_MS);
}

static void crawl_delay_before_any_agent_is_ignored(void **s)
{
    (void)s;
    assert_int_equal(delay_of("Crawl-delay: 5\nUser-agent: *\nDisallow: /\n", "x"), -1);
}

/* ---- Sitemap ---------------------------------------------------------- */

static void sitemaps_are_collected_from_anywhere(void **s)
{
    (void)s;
    const char *t = "Sitemap: https://e.com/a.xml\nUser-agent: other\nDisallow: /\n"
                    "SITEMAP: https://e.com/b.xml # c\nUser-agent: *\n"
                    "Site-map:   https://e.com/c.xml  \n";
    robots *r = parse(t, "foobot");
    assert_int_equal(robots_sitemap_count(r), 3);
    assert_string_equal(robots_sitemap(r, 0), "https://e.com/a.xml");
    assert_string_equal(robots_sitemap(r, 1), "https://e.com/b.xml");
    assert_string_equal(robots_sitemap(r, 2), "https://e.com/c.xml");
    assert_null(robots_sitemap(r, 3));
    robots_free(r);
}

static void sitemap_invalid_values_are_dropped(void **s)
{
    (void)s;
    robots *r = parse("Sitemap:\nSitemap: https://e.com/a b.xml\nSitemap: /ok.xml\n", "x");
    assert_int_equal(robots_sitemap_count(r), 1);
    assert_string_equal(robots_sitemap(r, 0), "/ok.xml");
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.sitemaps_dropped, 1);
    robots_free(r);
}

static void sitemaps_are_capped(void **s)
{
    (void)s;
    size_t n = ROBOTS_MAX_SITEMAPS + 5;
    size_t cap = n * 48;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len, "Sitemap: https://e.com/%zu.xml\n", i);
    robots *r = robots_parse(t, len, "x", len);
    assert_non_null(r);
    assert_int_equal(robots_sitemap_count(r), ROBOTS_MAX_SITEMAPS);
    assert_string_equal(robots_sitemap(r, ROBOTS_MAX_SITEMAPS - 1), "https://e.com/9999.xml");
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.sitemaps_dropped, 5);
    robots_free(r);
    free(t);
}

/* ---- describe --------------------------------------------------------- */

static void describe_each_kind(void **s)
{
    (void)s;
    char out[64];
    robots_rule why = {ROBOTS_RULE_NONE, NULL, 0, 0};
    assert_int_equal(robots_rule_describe(&why, out, sizeof out), 0);
    assert_string_equal(out, "-");
    why = (robots_rule){ROBOTS_RULE_ALLOW, "/pub/", 5, 3};
    assert_int_equal(robots_rule_describe(&why, out, sizeof out), 0);
    assert_string_equal(out, "allow: /pub/");
    why = (robots_rule){ROBOTS_RULE_DISALLOW, "*.gif$", 6, 3};
    assert_int_equal(robots_rule_describe(&why, out, sizeof out), 0);
    assert_string_equal(out, "disallow: *.gif$");
    assert_int_equal(robots_rule_describe(NULL, out, sizeof out), 0);
    assert_string_equal(out, "-");
}

static void describe_truncates_safely(void **s)
{
    (void)s;
    char out[8];
    robots_rule why = {ROBOTS_RULE_DISALLOW, "/a/long/path", 12, 1};
    assert_int_equal(robots_rule_describe(&why, out, sizeof out), -ENOSPC);
    assert_string_equal(out, "disallo");
    assert_int_equal(robots_rule_describe(&why, out, 0), -ENOSPC);
}

static void describe_escapes_control_bytes(void **s)
{
    (void)s;
    static const char t[] = "User-agent: *\nDisallow: /a\x01\x7f" "b\n";
    robots *r = parse_n(t, sizeof t - 1, "x");
    assert_decision(r, "/a%01%7Fb", 0, "disallow: /a%01%7Fb");
    robots_free(r);
}

/* ---- bounded cost ----------------------------------------------------- */

static void ten_megabytes_only_the_cap_is_parsed(void **s)
{
    (void)s;
    size_t len = 10u << 20;
    char *t = malloc(len);
    assert_non_null(t);
    const char head[] = "User-agent: *\nDisallow: /early\n";
    memcpy(t, head, sizeof head - 1);
    for (size_t i = sizeof head - 1; i < len; i++)
        t[i] = (i % 64 == 63) ? '\n' : '#';
    const char tail[] = "\nDisallow: /late\n";
    memcpy(t + len - (sizeof tail - 1), tail, sizeof tail - 1);
    robots *r = robots_parse(t, len, "x", 0);
    assert_non_null(r);
    assert_int_equal(allowed(r, "/early"), 0);
    assert_int_equal(allowed(r, "/late"), 1);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_true(st.bytes_parsed <= ROBOTS_DEFAULT_MAX_BYTES);
    assert_true(st.bytes_parsed > ROBOTS_DEFAULT_MAX_BYTES - 64);
    assert_int_equal(st.bytes_parsed + st.bytes_ignored, len);
    robots_free(r);
    /* with a cap that covers it all, the late rule is read */
    r = robots_parse(t, len, "x", len);
    assert_non_null(r);
    assert_int_equal(allowed(r, "/late"), 0);
    robots_free(r);
    free(t);
}

static void cap_cutting_a_line_drops_that_line(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /abcdef\n";
    /* a cap inside "/abcdef" must not leave a shorter "/abc" rule behind */
    robots *r = robots_parse(t, strlen(t), "x", 18);
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(allowed(r, "/abc"), 1);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.bytes_parsed, 14);
    robots_free(r);
}

static void cap_at_a_line_end_keeps_that_line(void **s)
{
    (void)s;
    const char *t = "User-agent: *\nDisallow: /abcdef\nDisallow: /x\n";
    robots *r = robots_parse(t, strlen(t), "x", 31); /* t[31] is the '\n' */
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/abcdef"), 0);
    assert_int_equal(allowed(r, "/x"), 1);
    robots_free(r);
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void binary_junk_is_harmless(void **s)
{
    (void)s;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    size_t len = 256 * 1024;
    char *t = malloc(len);
    assert_non_null(t);
    for (int round = 0; round < 8; round++) {
        for (size_t i = 0; i < len; i++)
            t[i] = (char)(rng_next(&seed) & 0xFF);
        robots *r = robots_parse(t, len, "foobot", 0);
        assert_non_null(r);
        assert_int_equal(allowed(r, "/"), 1); /* random bytes make no group */
        assert_int_equal(allowed(r, "/robots.txt"), 1);
        robots_free(r);
    }
    free(t);
}

static void binary_bytes_inside_rules(void **s)
{
    (void)s;
    static const char t[] = "User-agent: *\nDisallow: /a\0b\nAllow: /\xff\xfe\n";
    robots *r = parse_n(t, sizeof t - 1, "x");
    assert_int_equal(robots_rule_count(r), 2);
    assert_int_equal(robots_allowed(r, "/a\0b", 4, NULL), 0);
    assert_int_equal(allowed(r, "/a%00b"), 0);
    assert_int_equal(allowed(r, "/ab"), 1);
    assert_int_equal(allowed(r, "/%FF%FE"), 1);
    robots_free(r);
}

static char *many_rules(size_t n, size_t *len)
{
    size_t cap = n * 32 + 64;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t l = (size_t)snprintf(t, cap, "User-agent: *\n");
    for (size_t i = 0; i < n; i++)
        l += (size_t)snprintf(t + l, cap - l, "%s: /r%zu/\n", i % 2 ? "Allow" : "Disallow", i);
    *len = l;
    return t;
}

static void hundred_thousand_rules(void **s)
{
    (void)s;
    size_t len;
    char *t = many_rules(100000, &len);
    robots *r = robots_parse(t, len, "x", len);
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), 100000);
    char path[64];
    for (size_t i = 0; i < 100000; i += 997) {
        int n = snprintf(path, sizeof path, "/r%zu/page", i);
        assert_int_equal(robots_allowed(r, path, (size_t)n, NULL), i % 2 ? 1 : 0);
    }
    assert_int_equal(allowed(r, "/none"), 1);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.rules_dropped, 0);
    robots_free(r);
    /* the default cap reads only the first 500 KiB of them */
    r = robots_parse(t, len, "x", 0);
    assert_non_null(r);
    assert_true(robots_rule_count(r) > 10000);
    assert_true(robots_rule_count(r) < 100000);
    assert_int_equal(allowed(r, "/r99998/"), 1);
    robots_free(r);
    free(t);
}

static void rules_over_the_cap_are_dropped_and_counted(void **s)
{
    (void)s;
    size_t len;
    char *t = many_rules(ROBOTS_MAX_RULES + 10, &len);
    robots *r = robots_parse(t, len, "x", len);
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), ROBOTS_MAX_RULES);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.rules_dropped, 10);
    assert_int_equal(allowed(r, "/r0/"), 0);
    assert_int_equal(allowed(r, "/r100002/"), 1); /* a dropped Disallow */
    robots_free(r);
    free(t);
}

static void html_served_as_robots_txt(void **s)
{
    (void)s;
    const char *t = "<!DOCTYPE html>\n<html><head><title>Not Found</title>\n"
                    "<style>body { color: red; } a:hover { color: blue; }</style></head>\n"
                    "<body><h1>404: page not found</h1>\n"
                    "<p>Try <a href=\"https://example.com/\">home</a>, Disallow: /x</p>\n"
                    "<script>var a = {b: 1}; // User-agent: *</script>\n</body></html>\n";
    robots *r = parse(t, "foobot");
    assert_int_equal(robots_rule_count(r), 0);
    assert_int_equal(allowed(r, "/x"), 1);
    assert_int_equal(allowed(r, "/"), 1);
    robots_free(r);
}

static void overlong_line_is_skipped(void **s)
{
    (void)s;
    size_t n = ROBOTS_MAX_LINE + 100;
    size_t len = 0;
    char *t = malloc(n + 128);
    assert_non_null(t);
    len += (size_t)snprintf(t, n + 128, "User-agent: *\nDisallow: /");
    memset(t + len, 'a', n);
    len += n;
    len += (size_t)snprintf(t + len, 128, "\nDisallow: /short\n");
    robots *r = robots_parse(t, len, "x", 0);
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), 1);
    assert_int_equal(allowed(r, "/aaaa"), 1);
    assert_int_equal(allowed(r, "/short"), 0);
    robots_stats st;
    robots_get_stats(r, &st);
    assert_int_equal(st.lines_skipped, 1);
    robots_free(r);
    free(t);
}

static void pathological_wildcards_on_a_long_path(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*b\n"
                      "Disallow: /*aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab$\n",
                      "x");
    size_t n = 200000;
    char *p = malloc(n + 2);
    assert_non_null(p);
    p[0] = '/';
    memset(p + 1, 'a', n);
    assert_int_equal(robots_allowed(r, p, n + 1, NULL), 1);
    p[n + 1] = 'b';
    assert_int_equal(robots_allowed(r, p, n + 2, NULL), 0);
    robots_free(r);
    free(p);
}

static void many_stars_pattern(void **s)
{
    (void)s;
    /* a 16 KiB-line worth of "*a" against a long path of 'a's without 'b' */
    size_t k = 4000;
    char *t = malloc(2 * k + 64);
    assert_non_null(t);
    size_t len = (size_t)snprintf(t, 64, "User-agent: *\nDisallow: /");
    for (size_t i = 0; i < k; i++) {
        t[len++] = '*';
        t[len++] = 'a';
    }
    t[len++] = 'b';
    t[len++] = '\n';
    robots *r = robots_parse(t, len, "x", 0);
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), 1);
    size_t n = 20000;
    char *p = malloc(n + 2);
    assert_non_null(p);
    p[0] = '/';
    memset(p + 1, 'a', n);
    assert_int_equal(robots_allowed(r, p, n + 1, NULL), 1);
    p[n + 1] = 'b';
    assert_int_equal(robots_allowed(r, p, n + 2, NULL), 0);
    robots_free(r);
    free(p);
    free(t);
}

static void tail_segment_needs_its_border(void **s)
{
    (void)s;
    /* a naive restart after a partial "abcabd" would miss these */
    robots *r = parse("User-agent: *\nDisallow: /*abcabd\nDisallow: /x*aab$\n", "x");
    assert_int_equal(allowed(r, "/abcabcabd"), 0);
    assert_int_equal(allowed(r, "/abcabcab"), 1);
    assert_int_equal(allowed(r, "/xaaab"), 0);
    assert_int_equal(allowed(r, "/xaaaba"), 1);
    robots_free(r);
}

static void anchored_tail_uses_the_last_occurrence(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /*ab$\n", "x");
    assert_int_equal(allowed(r, "/abxab"), 0);
    assert_int_equal(allowed(r, "/abxabx"), 1);
    robots_free(r);
    r = parse("User-agent: *\nDisallow: /q*a*ab$\n", "x");
    assert_int_equal(allowed(r, "/qab"), 1); /* "a" and "ab" cannot share the a */
    assert_int_equal(allowed(r, "/qaab"), 0);
    robots_free(r);
}

static void weight_not_head_length_decides(void **s)
{
    (void)s;
    /* head "/a" but 11 octets beats head "/abc" with 4 */
    robots *r = parse("User-agent: *\nAllow: /abc\nDisallow: /a*xxxxxxxx\n", "x");
    assert_decision(r, "/abc/xxxxxxxx", 0, "disallow: /a*xxxxxxxx");
    assert_decision(r, "/abc/xxxxxxx", 1, "allow: /abc");
    robots_free(r);
}

static void allow_wins_a_tie_across_heads(void **s)
{
    (void)s;
    /* both 3 octets; the Disallow's head "/" is met before the Allow's "/ab" */
    robots *r = parse("User-agent: *\nDisallow: /*b\nAllow: /ab\n", "x");
    assert_decision(r, "/ab", 1, "allow: /ab");
    assert_decision(r, "/xb", 0, "disallow: /*b");
    robots_free(r);
}

static void heads_that_extend_each_other(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /a\nAllow: /ab\nDisallow: /abc\n"
                      "Allow: /abcd\nDisallow: /b\n",
                      "x");
    assert_decision(r, "/a", 0, "disallow: /a");
    assert_decision(r, "/ab", 1, "allow: /ab");
    assert_decision(r, "/abc", 0, "disallow: /abc");
    assert_decision(r, "/abcde", 1, "allow: /abcd");
    assert_decision(r, "/ac", 0, "disallow: /a");
    assert_decision(r, "/b", 0, "disallow: /b");
    assert_decision(r, "/c", 1, "-");
    robots_free(r);
}

static void equal_rules_report_the_first_line(void **s)
{
    (void)s;
    robots *r = parse("User-agent: *\nDisallow: /x*\nDisallow: /x*\nDisallow: /x*\n", "x");
    robots_rule why;
    assert_int_equal(robots_allowed(r, "/x", 2, &why), 0);
    assert_int_equal(why.line, 2);
    robots_free(r);
}

static void cap_full_of_long_wildcard_literals(void **s)
{
    (void)s;
    /* each rule is a slash, a star, 16000 'a' and a 'b': a matcher that
     * retries the literal at every offset does 8 KiB x 16 KB work per rule */
    size_t cap = ROBOTS_DEFAULT_MAX_BYTES;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t len = (size_t)snprintf(t, cap, "User-agent: *\n");
    size_t rules = 0;
    while (len + 16100 < cap) {
        len += (size_t)snprintf(t + len, cap - len, "Disallow: /*");
        memset(t + len, 'a', 16000);
        len += 16000;
        t[len++] = 'b';
        t[len++] = '\n';
        rules++;
    }
    robots *r = robots_parse(t, len, "x", 0);
    assert_non_null(r);
    assert_int_equal(robots_rule_count(r), rules);
    size_t n = 8192;
    char *p = malloc(n + 16001);
    assert_non_null(p);
    p[0] = '/';
    memset(p + 1, 'a', n - 1);
    assert_int_equal(robots_allowed(r, p, n, NULL), 1);
    memset(p + 1, 'a', n + 15999);
    p[n + 16000] = 'b';
    assert_int_equal(robots_allowed(r, p, n + 16001, NULL), 0);
    robots_free(r);
    free(p);
    free(t);
}

/* ---- out of memory ---------------------------------------------------- */

static void parse_survives_every_allocation_failure(void **s)
{
    (void)s;
    const char *t = "Sitemap: https://e.com/s.xml\nUser-agent: *\nDisallow: /a\n"
                    "User-agent: foobot\nDisallow: /f\nAllow: /f/ok\nCrawl-delay: 1\n"
                    "Sitemap: https://e.com/t.xml\n";
    robots *r = NULL;
    long n;
    for (n = 1; n < 1000 && r == NULL; n++) {
        cr_alloc_fail_after(n);
        r = robots_parse(t, strlen(t), "foobot", 0);
        long failures = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (r == NULL)
            assert_true(failures > 0);
    }
    assert_non_null(r);
    assert_true(n > 3);
    assert_int_equal(allowed(r, "/f/x"), 0);
    assert_int_equal(allowed(r, "/f/ok"), 1);
    assert_int_equal(robots_sitemap_count(r), 2);
    robots_free(r);
}

static void constructors_report_out_of_memory(void **s)
{
    (void)s;
    cr_alloc_fail_after(1);
    assert_null(robots_allow_all());
    assert_null(robots_disallow_all());
    cr_alloc_fail_after(0);
}

/* RFC 9309 §2.3: what a fetch's status implies. */
static void status_decides_access(void **s)
{
    (void)s;
    const char *body = "User-agent: *\nDisallow: /private/\n";
    robots *r = robots_for_status(200, body, strlen(body), "crawld", 0);
    assert_non_null(r);
    assert_int_equal(allowed(r, "/private/x"), 0);
    assert_int_equal(allowed(r, "/public"), 1);
    robots_free(r);
    r = robots_for_status(404, body, strlen(body), "crawld", 0);
    assert_int_equal(allowed(r, "/private/x"), 1);
    robots_free(r);
    r = robots_for_status(410, NULL, 0, "crawld", 0);
    assert_int_equal(allowed(r, "/anything"), 1);
    robots_free(r);
    int unavailable[] = { 500, 503, 0, 301, 199 };
    for (size_t i = 0; i < sizeof unavailable / sizeof *unavailable; i++) {
        r = robots_for_status(unavailable[i], body, strlen(body), "crawld", 0);
        assert_int_equal(allowed(r, "/public"), 0);
        assert_int_equal(allowed(r, "/robots.txt"), 1);
        robots_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ua_exact_group_applies),
        cmocka_unit_test(ua_match_is_case_insensitive),
        cmocka_unit_test(ua_key_is_case_insensitive),
        cmocka_unit_test(ua_line_token_stops_at_version),
        cmocka_unit_test(agent_argument_token_stops_at_version),
        cmocka_unit_test(ua_prefix_of_agent_does_not_match),
        cmocka_unit_test(ua_longer_than_agent_does_not_match),
        cmocka_unit_test(ua_falls_back_to_star),
        cmocka_unit_test(ua_exact_group_replaces_star),
        cmocka_unit_test(ua_no_group_and_no_star_allows_all),
        cmocka_unit_test(empty_file_allows_all),
        cmocka_unit_test(ua_same_agent_groups_merge),
        cmocka_unit_test(ua_star_groups_merge),
        cmocka_unit_test(ua_several_agents_share_a_group),
        cmocka_unit_test(ua_blank_line_between_agents_keeps_group),
        cmocka_unit_test(ua_after_rule_starts_new_group),
        cmocka_unit_test(ua_exact_group_without_rules_allows_all),
        cmocka_unit_test(rules_before_any_user_agent_are_ignored),
        cmocka_unit_test(ua_star_and_named_in_one_group),
        cmocka_unit_test(ua_value_with_comment),
        cmocka_unit_test(ua_token_with_underscore_and_hyphen),
        cmocka_unit_test(agent_null_or_empty_uses_star),
        cmocka_unit_test(ua_star_prefix_is_not_global),
        cmocka_unit_test(unknown_line_does_not_end_agent_run),
        cmocka_unit_test(sitemap_line_does_not_end_agent_run),
        cmocka_unit_test(crawl_delay_line_is_a_group_member),
        cmocka_unit_test(rfc_example_star_gif),
        cmocka_unit_test(rfc_example_star_example_dir),
        cmocka_unit_test(rfc_example_star_publications),
        cmocka_unit_test(rfc_example_foobot),
        cmocka_unit_test(rfc_example_barbot_bazbot),
        cmocka_unit_test(rfc_example_quxbot),
        cmocka_unit_test(rfc_longest_match_example),
        cmocka_unit_test(longest_match_longer_disallow_wins),
        cmocka_unit_test(longest_match_longer_allow_wins),
        cmocka_unit_test(longest_match_order_does_not_matter),
        cmocka_unit_test(allow_wins_a_tie),
        cmocka_unit_test(allow_wins_a_tie_between_different_patterns),
        cmocka_unit_test(longest_match_counts_wildcard_octets),
        cmocka_unit_test(longest_match_counts_the_dollar),
        cmocka_unit_test(longest_match_uses_normalized_length),
        cmocka_unit_test(no_matching_rule_means_allowed),
        cmocka_unit_test(duplicate_rules_are_harmless),
        cmocka_unit_test(paths_are_case_sensitive),
        cmocka_unit_test(pattern_is_a_prefix_match),
        cmocka_unit_test(pattern_with_trailing_slash),
        cmocka_unit_test(query_is_part_of_the_match),
        cmocka_unit_test(disallow_root_blocks_everything),
        cmocka_unit_test(empty_path_is_root),
        cmocka_unit_test(pattern_without_leading_slash_is_rooted),
        cmocka_unit_test(path_length_argument_is_respected),
        cmocka_unit_test(star_matches_any_sequence),
        cmocka_unit_test(star_matches_empty_sequence),
        cmocka_unit_test(star_before_extension),
        cmocka_unit_test(dollar_anchors_the_end),
        cmocka_unit_test(dollar_with_plain_path),
        cmocka_unit_test(dollar_inside_pattern_is_literal),
        cmocka_unit_test(star_then_dollar_is_unanchored),
        cmocka_unit_test(several_stars),
        cmocka_unit_test(leading_star_pattern),
        cmocka_unit_test(lone_star_blocks_everything),
        cmocka_unit_test(percent_2a_matches_a_literal_star),
        cmocka_unit_test(percent_24_matches_a_literal_dollar),
        cmocka_unit_test(percent_hex_case_is_ignored),
        cmocka_unit_test(percent_unreserved_in_path_is_decoded),
        cmocka_unit_test(percent_unreserved_in_pattern_is_decoded),
        cmocka_unit_test(rfc_table_encoded_unreserved),
        cmocka_unit_test(rfc_table_non_ascii_pattern),
        cmocka_unit_test(rfc_table_encoded_pattern_matches_raw_path),
        cmocka_unit_test(percent_reserved_is_not_decoded),
        cmocka_unit_test(stray_percent_is_literal),
        cmocka_unit_test(raw_space_in_path_matches_its_encoding),
        cmocka_unit_test(robots_txt_is_always_allowed),
        cmocka_unit_test(robots_txt_only_exactly),
        cmocka_unit_test(allow_all_constructor),
        cmocka_unit_test(disallow_all_constructor),
        cmocka_unit_test(comment_lines_are_ignored),
        cmocka_unit_test(comment_after_value_is_stripped),
        cmocka_unit_test(comment_right_after_colon_empties_value),
        cmocka_unit_test(keys_are_case_insensitive),
        cmocka_unit_test(lf_line_endings),
        cmocka_unit_test(crlf_line_endings),
        cmocka_unit_test(cr_line_endings),
        cmocka_unit_test(mixed_line_endings),
        cmocka_unit_test(last_line_without_newline),
        cmocka_unit_test(utf8_bom_is_skipped),
        cmocka_unit_test(bom_elsewhere_is_not_skipped),
        cmocka_unit_test(empty_disallow_is_no_rule),
        cmocka_unit_test(empty_disallow_still_selects_the_group),
        cmocka_unit_test(empty_allow_is_no_rule),
        cmocka_unit_test(unknown_keys_are_ignored),
        cmocka_unit_test(whitespace_around_colon_and_value),
        cmocka_unit_test(no_space_after_colon),
        cmocka_unit_test(line_without_colon_is_ignored),
        cmocka_unit_test(common_key_typos_are_accepted),
        cmocka_unit_test(far_typos_are_not_accepted),
        cmocka_unit_test(rule_reports_its_line_and_text),
        cmocka_unit_test(crawl_delay_whole_seconds),
        cmocka_unit_test(crawl_delay_fraction),
        cmocka_unit_test(crawl_delay_invalid_is_ignored),
        cmocka_unit_test(crawl_delay_none_is_minus_one),
        cmocka_unit_test(crawl_delay_of_the_chosen_group_only),
        cmocka_unit_test(crawl_delay_exact_group_without_delay),
        cmocka_unit_test(crawl_delay_merged_groups_take_largest),
        cmocka_unit_test(crawl_delay_is_clamped),
        cmocka_unit_test(crawl_delay_before_any_agent_is_ignored),
        cmocka_unit_test(sitemaps_are_collected_from_anywhere),
        cmocka_unit_test(sitemap_invalid_values_are_dropped),
        cmocka_unit_test(sitemaps_are_capped),
        cmocka_unit_test(describe_each_kind),
        cmocka_unit_test(describe_truncates_safely),
        cmocka_unit_test(describe_escapes_control_bytes),
        cmocka_unit_test(ten_megabytes_only_the_cap_is_parsed),
        cmocka_unit_test(cap_cutting_a_line_drops_that_line),
        cmocka_unit_test(cap_at_a_line_end_keeps_that_line),
        cmocka_unit_test(binary_junk_is_harmless),
        cmocka_unit_test(binary_bytes_inside_rules),
        cmocka_unit_test(hundred_thousand_rules),
        cmocka_unit_test(rules_over_the_cap_are_dropped_and_counted),
        cmocka_unit_test(html_served_as_robots_txt),
        cmocka_unit_test(overlong_line_is_skipped),
        cmocka_unit_test(pathological_wildcards_on_a_long_path),
        cmocka_unit_test(many_stars_pattern),
        cmocka_unit_test(tail_segment_needs_its_border),
        cmocka_unit_test(anchored_tail_uses_the_last_occurrence),
        cmocka_unit_test(weight_not_head_length_decides),
        cmocka_unit_test(allow_wins_a_tie_across_heads),
        cmocka_unit_test(heads_that_extend_each_other),
        cmocka_unit_test(equal_rules_report_the_first_line),
        cmocka_unit_test(cap_full_of_long_wildcard_literals),
        cmocka_unit_test(parse_survives_every_allocation_failure),
        cmocka_unit_test(constructors_report_out_of_memory),
        cmocka_unit_test(status_decides_access),
    };
    return cmocka_run_group_tests_name("robots", tests, NULL, NULL);
}
