"""Scrapy peer of bench/bench_broad.sh: a polite broad crawl of many hosts.

run: PYTHONPATH=bench/broad scrapy runspider bench/broad/scrapy_broad.py \
        -s DNS_RESOLVER=scrapy_broad.PinResolver -a seeds=FILE
FILE holds one seed URL per line; each seed's host is in scope. Per host one
request at a time and DOWNLOAD_DELAY 1 s between them, CONCURRENT_REQUESTS
1024 in all, robots.txt obeyed, no item output. Every host name resolves to
127.0.0.1 (the test site tells its hosts apart by the Host header)."""

from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
from twisted.internet import defer
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer


@implementer(IResolverSimple)
class PinResolver:
    """Answers 127.0.0.1 for every name, as crawld's fetch.resolve pins do."""

    def __init__(self, reactor):
        self.reactor = reactor

    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls(reactor)

    def install_on_reactor(self):
        self.reactor.installResolver(self)

    def getHostByName(self, name, timeout=None):
        return defer.succeed("127.0.0.1")


class BroadSpider(CrawlSpider):
    name = "broad"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 1.0,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 1024,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DEPTH_LIMIT": 0,
        "LOG_LEVEL": "ERROR",
        "HTTPCACHE_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "FEEDS": {},
        "ITEM_PIPELINES": {},
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }

    def __init__(self, seeds=None, *args, **kwargs):
        if not seeds:
            raise ValueError("scrapy_broad.py needs -a seeds=FILE")
        with open(seeds, encoding="utf-8") as f:
            self.start_urls = [line.strip() for line in f if line.strip()]
        self.allowed_domains = sorted({urlsplit(u).hostname for u in self.start_urls})
        # CrawlSpider compiles self.rules in its __init__: set them first.
        self.rules = (Rule(LinkExtractor(), follow=True),)
        super().__init__(*args, **kwargs)
