// tests/warc/check.js: reads crawld's WARC files back with warcio (a parser
// we did not write) and checks them. Usage: node check.js FILE.warc.gz...
//
// For every record of every file (warcio WARCParser, records iterated):
//   - the block's sha1 (base32) equals WARC-Block-Digest, its length
//     Content-Length; for request/response records the bytes after the
//     HTTP header block hash to WARC-Payload-Digest; a revisit holds
//     headers only;
//   - a second pass with HTTP parsing on reads each response's content the
//     way replay tools do (transfer- and content-decoding): it must not
//     fail, and without a Content-Encoding it must equal the stored payload
//     (a stale "Transfer-Encoding: chunked" would make warcio de-chunk it);
//   - the file is whole gzip members (node's zlib: warcio itself stops
//     quietly at a torn last record);
//   - each file opens with a warcinfo record naming the file, and every
//     other record names that warcinfo; record ids are unique; every
//     WARC-Concurrent-To names a record that exists;
//   - every revisit's WARC-Refers-To-Target-URI + -Date name a response
//     record (in any of the files) with the same payload digest and the id
//     given in WARC-Refers-To; a server-not-modified revisit (a 304 of a
//     re-crawl) names its original the same way, with its payload digest.
// For every line of FILE's .cdxj index: the slice [offset, offset+length)
// of the file parses as exactly one record, the response or revisit of the
// line's URL, date and digest; the key equals warcio's getSurt(url); the
// fields equal what warcio's own CDXIndexer says for that record; lines are
// sorted; there is one line per response/revisit.
// Prints the counts as one JSON object; exits 0 when nothing was wrong.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import zlib from "node:zlib";
import { WARCParser, CDXIndexer, getSurt } from "warcio";

const counts = {
  files: 0, records: 0, warcinfo: 0, request: 0, response: 0, revisit: 0, other: 0,
  block_digest_ok: 0, payload_digest_ok: 0, content_ok: 0, revisit_ok: 0, revisit_not_modified_ok: 0,
  concurrent_ok: 0, cdxj_lines: 0, cdxj_ok: 0, bad: 0, warnings: 0,
};
const errors = [];

function bad(msg) {
  counts.bad++;
  if (errors.length < 20) errors.push(msg);
}

// warcio reports problems it recovers from with console.warn: count them.
console.warn = (...args) => {
  counts.warnings++;
  bad("warcio warning: " + args.join(" "));
};

const ALPHA = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(buf) {
  let bits = 0, value = 0, out = "";
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHA[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHA[(value << (5 - bits)) & 31];
  return out;
}
const sha1 = (buf) => "sha1:" + base32(crypto.createHash("sha1").update(buf).digest());

function headerEnd(block) {
  for (let i = 0; i + 3 < block.length; i++) {
    if (block[i] === 13 && block[i + 1] === 10 && block[i + 2] === 13 && block[i + 3] === 10)
      return i + 4;
  }
  return -1;
}

const byId = new Map();          // record id -> {file, type}
const responses = new Map();     // uri + " " + date -> {id, digest}
const revisits = [];
const concurrent = [];
const perFile = new Map();       // file -> {indexable: [{offset, uri}]}

// warcio stops quietly at a torn last record, so check apart (with node's
// zlib) that the file is whole gzip members from start to end.
async function wholeGzip(file) {
  const sink = new Writable({ write(chunk, enc, done) { done(); } });
  try {
    await pipeline(fs.createReadStream(file), zlib.createGunzip(), sink);
  } catch (e) {
    bad(`${path.basename(file)}: not whole gzip members: ${e.message}`);
  }
}

async function rawPass(file) {
  const name = path.basename(file);
  await wholeGzip(file);
  const parser = new WARCParser(fs.createReadStream(file), { parseHttp: false });
  let infoId = null, first = true;
  const indexable = [];
  for await (const record of parser) {
    const h = (k) => record.warcHeaders.headers.get(k);
    const type = record.warcType;
    const id = h("WARC-Record-ID");
    const block = await record.readFully(false);
    const offset = parser.offset;
    counts.records++;
    counts[type in counts ? type : "other"]++;
    if (first) {
      if (type !== "warcinfo") bad(`${name}: first record is ${type}`);
      else if (h("WARC-Filename") !== name) bad(`${name}: warcinfo names ${h("WARC-Filename")}`);
      infoId = id;
      first = false;
    } else if (h("WARC-Warcinfo-ID") !== infoId) {
      bad(`${name}@${offset}: WARC-Warcinfo-ID ${h("WARC-Warcinfo-ID")} is not ${infoId}`);
    }
    if (!id || byId.has(id)) bad(`${name}@${offset}: record id missing or repeated: ${id}`);
    byId.set(id, { file: name, type });
    if (Number(h("Content-Length")) !== block.length)
      bad(`${name}@${offset}: Content-Length ${h("Content-Length")} but block ${block.length}`);
    if (sha1(block) === h("WARC-Block-Digest")) counts.block_digest_ok++;
    else bad(`${name}@${offset}: block digest ${sha1(block)} != ${h("WARC-Block-Digest")}`);
    if (h("WARC-Concurrent-To")) concurrent.push({ from: id, to: h("WARC-Concurrent-To") });
    if (type === "request" || type === "response" || type === "revisit") {
      const end = headerEnd(block);
      if (end < 0) {
        bad(`${name}@${offset}: no end of HTTP headers in ${type}`);
        continue;
      }
      const payload = block.subarray(end);
      if (type === "revisit") {
        if (payload.length !== 0) bad(`${name}@${offset}: revisit carries ${payload.length} payload bytes`);
        revisits.push({
          name, offset, digest: h("WARC-Payload-Digest"), profile: h("WARC-Profile"),
          refersTo: h("WARC-Refers-To"), uri: h("WARC-Refers-To-Target-URI"),
          date: h("WARC-Refers-To-Date"),
        });
      } else if (sha1(payload) === h("WARC-Payload-Digest")) {
        counts.payload_digest_ok++;
      } else {
        bad(`${name}@${offset}: payload digest ${sha1(payload)} != ${h("WARC-Payload-Digest")}`);
      }
      if (type === "response")
        responses.set(h("WARC-Target-URI") + " " + h("WARC-Date"), { id, digest: h("WARC-Payload-Digest") });
      if (type !== "request") indexable.push({ uri: h("WARC-Target-URI") });
    }
  }
  if (first) bad(`${name}: no records`);
  perFile.set(file, { indexable });
}

// Reads responses as replay tools do: HTTP parsed, content decoded.
async function contentPass(file) {
  const name = path.basename(file);
  const parser = new WARCParser(fs.createReadStream(file));
  for await (const record of parser) {
    if (record.warcType !== "response") {
      await record.skipFully();
      continue;
    }
    const where = `${name} ${record.warcTargetURI}`;
    if (!record.httpHeaders) {
      bad(`${where}: warcio found no HTTP headers`);
      await record.skipFully();
      continue;
    }
    try {
      const encoded = record.httpHeaders.headers.get("Content-Encoding");
      const content = await record.readFully(true);
      if (encoded || sha1(content) === record.warcPayloadDigest) counts.content_ok++;
      else bad(`${where}: decoded content differs from the stored payload`);
    } catch (e) {
      bad(`${where}: reading content failed: ${e}`);
    }
  }
}

async function recordAt(file, offset, length) {
  const stream = fs.createReadStream(file, { start: offset, end: offset + length - 1 });
  const parser = new WARCParser(stream);
  const record = await parser.parse();
  if (!record) return { record: null, extra: false };
  await record.readFully(false);
  const next = await parser.parse();
  stream.destroy();
  return { record, extra: next !== null };
}

async function indexPass(file) {
  const name = path.basename(file);
  const cdxj = file.replace(/\.warc\.gz$/, ".cdxj");
  let text;
  try {
    text = fs.readFileSync(cdxj, "latin1");
  } catch (e) {
    bad(`${name}: no index: ${e.message}`);
    return;
  }
  // warcio's own view of the same file.
  const theirs = new Map();
  const indexer = new CDXIndexer({ format: "cdxj" });
  for await (const r of indexer.iterIndex([{ filename: name, reader: fs.createReadStream(file) }]))
    theirs.set(Number(r.offset), r);

  const lines = text.split("\n");
  if (lines.pop() !== "") bad(`${cdxj}: last line has no LF`);
  const expect = perFile.get(file).indexable.length;
  if (lines.length !== expect) bad(`${cdxj}: ${lines.length} lines for ${expect} response/revisit records`);
  let prev = null;
  for (const raw of lines) {
    counts.cdxj_lines++;
    if (prev !== null && Buffer.compare(Buffer.from(prev, "latin1"), Buffer.from(raw, "latin1")) > 0)
      bad(`${cdxj}: not sorted at ${raw.slice(0, 80)}`);
    prev = raw;
    const line = Buffer.from(raw, "latin1").toString("utf8");
    const m = /^(\S+) (\d{14}) (\{.*\})$/.exec(line);
    if (!m) {
      bad(`${cdxj}: malformed line ${line.slice(0, 80)}`);
      continue;
    }
    let j;
    try {
      j = JSON.parse(m[3]);
    } catch (e) {
      bad(`${cdxj}: bad JSON ${e.message}`);
      continue;
    }
    let ok = true;
    const fail = (msg) => {
      ok = false;
      bad(`${cdxj} ${j.url}: ${msg}`);
    };
    if (j.filename !== name) fail(`filename ${j.filename}`);
    if (m[1] !== getSurt(j.url)) fail(`key ${m[1]} but warcio's SURT is ${getSurt(j.url)}`);
    const offset = Number(j.offset), length = Number(j.length);
    const { record, extra } = await recordAt(file, offset, length);
    if (!record) {
      fail(`no record at ${offset}+${length}`);
      continue;
    }
    if (extra) fail(`more than one record at ${offset}+${length}`);
    if (record.warcTargetURI !== j.url) fail(`record at ${offset} is for ${record.warcTargetURI}`);
    if (record.warcType !== "response" && record.warcType !== "revisit") fail(`record at ${offset} is a ${record.warcType}`);
    if (record.warcPayloadDigest !== "sha1:" + j.digest) fail(`digest ${j.digest} vs ${record.warcPayloadDigest}`);
    if (record.warcDate.replace(/[-:T]/g, "").slice(0, 14) !== m[2]) fail(`timestamp ${m[2]} vs ${record.warcDate}`);
    const t = theirs.get(offset);
    if (!t) {
      fail(`warcio's indexer has no record at ${offset}`);
    } else {
      const want = { url: t.url, mime: t.mime ?? "unk", status: String(t.status ?? ""), digest: t.digest, length: String(t.length) };
      for (const k of Object.keys(want))
        if (String(j[k]) !== want[k]) fail(`${k} ${j[k]} but warcio's indexer says ${want[k]}`);
      if (t.urlkey !== m[1]) fail(`key ${m[1]} but warcio's indexer says ${t.urlkey}`);
    }
    if (ok) counts.cdxj_ok++;
  }
}

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node check.js FILE.warc.gz...");
    process.exit(2);
  }
  for (const f of files) {
    counts.files++;
    try {
      await rawPass(f);
      await contentPass(f);
    } catch (e) {
      bad(`${path.basename(f)}: parse failed: ${e}`);
      perFile.set(f, perFile.get(f) ?? { indexable: [] });
    }
  }
  for (const f of files) {
    try {
      await indexPass(f);
    } catch (e) {
      bad(`${path.basename(f)}: index check failed: ${e}`);
    }
  }
  for (const c of concurrent) {
    if (byId.has(c.to)) counts.concurrent_ok++;
    else bad(`WARC-Concurrent-To ${c.to} (from ${c.from}) names no record`);
  }
  for (const r of revisits) {
    const orig = responses.get(r.uri + " " + r.date);
    if (r.profile === "http://netpreserve.org/warc/1.1/revisit/server-not-modified") {
      // a 304 to a re-crawl's conditional request: no payload of its own;
      // it must name the stored original (and its id when it gives one)
      if (!orig) bad(`${r.name}@${r.offset}: not-modified revisit refers to ${r.uri} ${r.date}: no such response`);
      else if (r.refersTo && orig.id !== r.refersTo) bad(`${r.name}@${r.offset}: WARC-Refers-To ${r.refersTo} != ${orig.id}`);
      else if (r.digest !== orig.digest) bad(`${r.name}@${r.offset}: not-modified revisit digest ${r.digest} != original ${orig.digest}`);
      else counts.revisit_not_modified_ok++;
    } else if (r.profile !== "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
      bad(`${r.name}@${r.offset}: revisit profile ${r.profile}`);
    else if (!orig) bad(`${r.name}@${r.offset}: revisit refers to ${r.uri} ${r.date}: no such response`);
    else if (orig.digest !== r.digest) bad(`${r.name}@${r.offset}: revisit digest ${r.digest} != original ${orig.digest}`);
    else if (orig.id !== r.refersTo) bad(`${r.name}@${r.offset}: WARC-Refers-To ${r.refersTo} != ${orig.id}`);
    else counts.revisit_ok++;
  }
  counts.errors = errors;
  process.stdout.write(JSON.stringify(counts) + "\n");
  process.exit(counts.bad === 0 ? 0 : 1);
}

main().catch((e) => {
  counts.bad++;
  counts.errors = errors.concat([String(e && e.stack ? e.stack : e)]);
  process.stdout.write(JSON.stringify(counts) + "\n");
  process.exit(1);
});
