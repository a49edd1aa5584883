"""Scrapy peer of bench/bench_crawl.sh: a whole-site crawl of one host.

run: scrapy runspider spider.py -a start=http://127.0.0.1:PORT/
Follows <a>/<area> links on the start URL's host (LinkExtractor with its
default extension filter), obeys robots.txt, no delay, no item output."""

from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class BenchSpider(CrawlSpider):
    name = "bench"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 0,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DEPTH_LIMIT": 0,
        "LOG_LEVEL": "ERROR",
        "HTTPCACHE_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "FEEDS": {},
        "ITEM_PIPELINES": {},
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }

    def __init__(self, start=None, *args, **kwargs):
        if not start:
            raise ValueError("spider.py needs -a start=URL")
        host = urlsplit(start).hostname
        self.start_urls = [start]
        self.allowed_domains = [host]
        # CrawlSpider compiles self.rules in its __init__: set them first.
        # (No allow_domains in the LinkExtractor: it compares host:port with
        # the domain; the offsite middleware checks the host alone.)
        self.rules = (Rule(LinkExtractor(), follow=True),)
        super().__init__(*args, **kwargs)
