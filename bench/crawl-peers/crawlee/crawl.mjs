// Crawlee peer of bench/bench_crawl.sh: CheerioCrawler (plain HTTP + cheerio,
// no browser) over one site. usage: node crawl.mjs http://127.0.0.1:PORT/
// Enqueues same-origin <a href> links, obeys robots.txt (respectRobotsTxtFile,
// in Crawlee since 3.13), keeps its request queue in memory (no dataset, no
// storage files), no request cap. 4xx answers are not retried by
// Crawlee (only 5xx and network errors are).
import { CheerioCrawler, Configuration, log, LogLevel } from '@crawlee/cheerio';

const start = process.argv[2];
if (!start) {
    console.error('usage: node crawl.mjs URL');
    process.exit(2);
}
log.setLevel(LogLevel.ERROR);
const config = new Configuration({ persistStorage: false, purgeOnStart: true });
const crawler = new CheerioCrawler({
    respectRobotsTxtFile: true,
    maxConcurrency: 32,
    additionalMimeTypes: ['text/plain'],
    async requestHandler({ enqueueLinks }) {
        await enqueueLinks({ strategy: 'same-origin' });
    },
}, config);
const stats = await crawler.run([start]);
console.error(`crawlee: ${stats.requestsFinished} finished, ${stats.requestsFailed} failed`);
