// tests/replay/drive.mjs: drives Debian's headless Chromium over the DevTools
// protocol for tests/test_replay.c. No npm dependencies: the WebSocket
// client below is our own (Node 18 has no global WebSocket).
//
//   node drive.mjs replay CHROMIUM PROFILE URL ORIGIN SHOT TIMEOUT_MS
//     opens URL (the page embedding <replay-web-page>), waits until the
//     replayed document (found under shadow roots and same-origin iframes by
//     its #photo and .tile) has loaded, measures it, saves a PNG screenshot
//     to SHOT, and prints one JSON line: the stage reached, the computed
//     background colour, natural widths, the font's status, and every
//     request that went to the network somewhere else than ORIGIN.
//   node drive.mjs oldstyle CHROMIUM PROFILE URL SHOT R,G,B
//     the plain `chromium --headless --screenshot` way, for the record:
//     prints how many pixels of its screenshot have the colour R,G,B.
// Exit status 0 when it ran (the C test judges the figures), 2 on usage or
// launch errors. Chromium is killed (its whole process group) on every exit.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];
const WIDTH = 1000, HEIGHT = 720;

let chrome = null;
function killChrome() {
  if (chrome && chrome.exitCode === null) {
    try { process.kill(-chrome.pid, 'SIGKILL'); } catch { /* gone */ }
  }
}
process.on('exit', killChrome);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killChrome(); process.exit(3); });

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

function launch(bin, args) {
  chrome = spawn(bin, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  chrome.stderr.on('data', (d) => { if (err.length < 65536) err += d; });
  chrome.errText = () => err;
  return chrome;
}

// ---- a minimal WebSocket client (RFC 6455), enough for the DevTools protocol

function wsConnect(port, wsPath) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const key = crypto.randomBytes(16).toString('base64');
    let buf = Buffer.alloc(0), open = false, frags = [];
    const ws = {
      onmessage: null,
      send(text) {
        const data = Buffer.from(text, 'utf8');
        const n = data.length;
        const head = n < 126 ? Buffer.from([0x81, 0x80 | n])
          : n < 65536 ? Buffer.from([0x81, 0x80 | 126, n >> 8, n & 255])
            : Buffer.concat([Buffer.from([0x81, 0x80 | 127]), (() => {
              const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b;
            })()]);
        const mask = crypto.randomBytes(4);
        for (let i = 0; i < n; i++) data[i] ^= mask[i & 3];
        sock.write(Buffer.concat([head, mask, data]));
      },
      close() { sock.destroy(); },
    };
    function frames() {
      for (;;) {
        if (buf.length < 2) return;
        const fin = buf[0] & 0x80, op = buf[0] & 0x0f;
        let len = buf[1] & 0x7f, off = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
        const masked = buf[1] & 0x80;
        const mask = masked ? buf.subarray(off, off + 4) : null;
        if (masked) off += 4;
        if (buf.length < off + len) return;
        const payload = Buffer.from(buf.subarray(off, off + len));
        buf = buf.subarray(off + len);
        if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
        if (op === 0x8) { sock.destroy(); return; }
        if (op === 0x9) { // ping: pong with the same data, masked as a client must
          const m = crypto.randomBytes(4);
          for (let i = 0; i < payload.length; i++) payload[i] ^= m[i & 3];
          sock.write(Buffer.concat([Buffer.from([0x8a, 0x80 | payload.length]), m, payload]));
          continue;
        }
        if (op === 0x1 || op === 0x0) {
          frags.push(payload);
          if (fin) {
            const text = Buffer.concat(frags).toString('utf8');
            frags = [];
            if (ws.onmessage) ws.onmessage(text);
          }
        }
      }
    }
    sock.on('connect', () => {
      sock.write(`GET ${wsPath} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (!open) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const want = crypto.createHash('sha1')
          .update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
        if (!/^HTTP\/1\.1 101/.test(head) || !head.includes(want)) {
          reject(new Error('WebSocket handshake refused: ' + head.split('\r\n')[0]));
          sock.destroy();
          return;
        }
        open = true;
        buf = buf.subarray(end + 4);
        resolve(ws);
      }
      frames();
    });
    sock.on('error', (e) => { if (!open) reject(e); });
  });
}

// ---- the DevTools protocol over it

function cdp(ws) {
  let next = 1;
  const pending = new Map(), listeners = [];
  ws.onmessage = (text) => {
    const m = JSON.parse(text);
    if (m.id !== undefined) {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (p) m.error ? p.reject(new Error(m.error.message)) : p.resolve(m.result);
    } else {
      for (const l of listeners) l(m);
    }
  };
  return {
    call(method, params = {}, sessionId) {
      const id = next++;
      const msg = { id, method, params };
      if (sessionId) msg.sessionId = sessionId;
      ws.send(JSON.stringify(msg));
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    on(fn) { listeners.push(fn); },
  };
}

async function devtoolsPort(profile, ms) {
  const file = path.join(profile, 'DevToolsActivePort');
  for (const t0 = Date.now(); Date.now() - t0 < ms;) {
    try {
      const [port, wsPath] = fs.readFileSync(file, 'utf8').split('\n');
      if (port && wsPath) return { port: Number(port), wsPath };
    } catch { /* not yet */ }
    if (chrome.exitCode !== null) break;
    await sleep(50);
  }
  throw new Error('no DevToolsActivePort from chromium: ' + chrome.errText().slice(-2000));
}

// Runs in the embedding page: finds the replayed document and measures it.
const CHECK = `(async () => {
  const seen = new Set(), stack = [document];
  let target = null, frames = 0;
  while (stack.length && !target) {
    const root = stack.pop();
    if (seen.has(root)) continue;
    seen.add(root);
    if (root.nodeType === 9 && root.getElementById('photo') && root.querySelector('.tile')) {
      target = root;
      break;
    }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) stack.push(el.shadowRoot);
      if (el.tagName === 'IFRAME') {
        frames++;
        try { if (el.contentDocument) stack.push(el.contentDocument); } catch (e) { }
      }
    }
  }
  if (!target) {
    const rwp = document.querySelector('replay-web-page');
    const sr = rwp && rwp.shadowRoot ? rwp.shadowRoot.innerHTML : '(no shadow root)';
    return { stage: 'searching', frames, shadow: sr.slice(0, 600) };
  }
  const d = target, w = d.defaultView;
  if (d.readyState !== 'complete') return { stage: 'loading', href: d.location.href };
  const urlOf = (el) => {
    const m = /url\\("?([^")]*)"?\\)/.exec(w.getComputedStyle(el).backgroundImage);
    return m ? m[1] : null;
  };
  const widthOf = (src) => new Promise((res) => {
    if (!src) return res(-1);
    const img = new w.Image();
    img.onload = () => res(img.naturalWidth);
    img.onerror = () => res(0);
    img.src = src;
  });
  const photo = d.getElementById('photo');
  const tileUrl = urlOf(d.querySelector('.tile'));
  // A font is fetched when text first needs it, which may come after the
  // load event: ask for it (and wait, 5 s at most) before reading its entry.
  try {
    await Promise.race([d.fonts.load('16px "Crawld Replay"'),
      new Promise((res) => w.setTimeout(res, 5000))]);
  } catch (e) { }
  let font = 'none';
  for (const f of d.fonts) if (f.family.replace(/"/g, '') === 'Crawld Replay') font = f.status;
  const fontEntry = w.performance.getEntriesByType('resource').find((e) => e.name.includes('font.woff2'));
  return {
    stage: 'loaded', href: d.location.href, title: d.title,
    bg: w.getComputedStyle(d.body).backgroundColor,
    photoWidth: photo.complete ? photo.naturalWidth : 0, photoSrc: photo.currentSrc,
    tileUrl, tileWidth: await widthOf(tileUrl),
    inlineWidth: await widthOf(urlOf(d.querySelector('.inline'))),
    attrWidth: await widthOf(urlOf(d.querySelector('.attr'))),
    font, fontStatus: fontEntry ? (fontEntry.responseStatus || 0) : -1,
  };
})()`;

async function replay([bin, profile, url, origin, shot, timeoutMs]) {
  const t0 = Date.now();
  const limit = Number(timeoutMs) || 60000;
  launch(bin, [...FLAGS, `--user-data-dir=${profile}`, '--remote-debugging-port=0',
    `--window-size=${WIDTH},${HEIGHT}`, 'about:blank']);
  const { port, wsPath } = await devtoolsPort(profile, 30000);
  const c = cdp(await wsConnect(port, wsPath));
  const requests = [], offOrigin = [], failed = [];
  const bySession = new Map(); // request id per session -> url
  c.on(async (m) => {
    if (m.method === 'Target.attachedToTarget') {
      // A target paused for us: ask for its network events and its own
      // children, then let it run (a paused worker answers only after).
      const s = m.params.sessionId;
      const quiet = () => {};
      if (process.env.DRIVE_DEBUG)
        process.stderr.write(`attached ${m.params.targetInfo.type} ${m.params.targetInfo.url}\n`);
      c.call('Network.enable', {}, s).catch(quiet);
      c.call('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, s)
        .catch(quiet);
      if (process.env.DRIVE_DEBUG) {
        c.call('Runtime.enable', {}, s).catch(quiet);
        c.call('Log.enable', {}, s).catch(quiet);
      }
      c.call('Runtime.runIfWaitingForDebugger', {}, s).catch(quiet);
    } else if (process.env.DRIVE_DEBUG && (m.method === 'Runtime.consoleAPICalled' ||
      m.method === 'Runtime.exceptionThrown' || m.method === 'Log.entryAdded')) {
      process.stderr.write(`[${m.sessionId || '-'}] ${m.method} ${JSON.stringify(m.params).slice(0, 400)}\n`);
    } else if (m.method === 'Network.requestWillBeSent') {
      const u = m.params.request.url;
      if (process.env.DRIVE_DEBUG) process.stderr.write(`request ${u.slice(0, 200)}\n`);
      if (/^https?:/.test(u)) requests.push(u); /* chrome:// pages of the browser itself aside */
      bySession.set(m.sessionId + ' ' + m.params.requestId, u);
    } else if (m.method === 'Network.responseReceived') {
      const u = m.params.response.url;
      const local = u.startsWith(origin) || /^(data|blob|about|chrome):/.test(u);
      if (!local && !m.params.response.fromServiceWorker) offOrigin.push(u);
    } else if (m.method === 'Network.loadingFailed') {
      const u = bySession.get(m.sessionId + ' ' + m.params.requestId) || '?';
      if (!u.startsWith(origin) && !/^(data|blob|about):/.test(u))
        failed.push(`${u} (${m.params.errorText})`);
    }
  });
  const version = (await c.call('Browser.getVersion')).product;
  await c.call('Target.setDiscoverTargets', { discover: true });
  await c.call('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
  const { targetId } = await c.call('Target.createTarget', { url: 'about:blank' });
  const { sessionId: page } = await c.call('Target.attachToTarget', { targetId, flatten: true });
  await c.call('Network.enable', {}, page);
  await c.call('Page.enable', {}, page);
  if (process.env.DRIVE_DEBUG) {
    await c.call('Runtime.enable', {}, page);
    await c.call('Log.enable', {}, page);
  }
  await c.call('Emulation.setDeviceMetricsOverride',
    { width: WIDTH, height: HEIGHT, deviceScaleFactor: 1, mobile: false }, page);
  await c.call('Page.navigate', { url }, page);
  let last = { stage: 'navigating' };
  if (process.env.DRIVE_DEBUG) {
    await sleep(3000);
    const t = await c.call('Target.getTargets');
    process.stderr.write('targets ' + JSON.stringify(t.targetInfos.map((x) => [x.type, x.url])) + '\n');
    const r = await c.call('Runtime.evaluate', { expression: `navigator.serviceWorker.getRegistrations().then(rs => JSON.stringify(rs.map(r => [r.scope, !!r.active, !!r.installing, !!r.waiting, r.active && r.active.state])) + ' controller=' + !!navigator.serviceWorker.controller + ' secure=' + isSecureContext)`, returnByValue: true, awaitPromise: true }, page);
    process.stderr.write('sw ' + JSON.stringify(r.result) + '\n');
  }
  while (Date.now() - t0 < limit) {
    await sleep(250);
    try {
      const r = await c.call('Runtime.evaluate', { expression: CHECK, returnByValue: true, awaitPromise: true }, page);
      if (r.result && r.result.value) last = r.result.value;
    } catch (e) { last = { stage: 'evaluate failed: ' + e.message }; }
    if (last.stage === 'loaded' && last.photoWidth > 0 && last.tileWidth > 0) break;
  }
  last.elapsedMs = Date.now() - t0;
  if (last.stage === 'loaded') {
    await sleep(300); // let the last paint land
    const shotData = await c.call('Page.captureScreenshot', { format: 'png' }, page);
    fs.writeFileSync(shot, Buffer.from(shotData.data, 'base64'));
    last.screenshot = shot;
  }
  last.version = version;
  last.requests = requests.length;
  last.offOrigin = offOrigin;
  last.failedOffOrigin = failed;
  // a clean close lets chromium reap its own helpers; the kill is the fallback
  const gone = new Promise((res) => { if (chrome.exitCode !== null) res(); else chrome.on('exit', res); });
  c.call('Browser.close').catch(() => {});
  await Promise.race([gone, sleep(5000)]);
  killChrome();
  process.stdout.write(JSON.stringify(last) + '\n');
}

// ---- the plain --screenshot way, and a small PNG reader to judge it

function pngPixels(file) {
  const b = fs.readFileSync(file);
  let off = 8, w = 0, h = 0, type = 0;
  const idat = [];
  while (off < b.length) {
    const len = b.readUInt32BE(off), kind = b.toString('latin1', off + 4, off + 8);
    const data = b.subarray(off + 8, off + 8 + len);
    if (kind === 'IHDR') { w = data.readUInt32BE(0); h = data.readUInt32BE(4); type = data[9]; }
    if (kind === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  const bpp = type === 6 ? 4 : 3;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const out = Buffer.alloc(w * h * bpp), stride = w * bpp;
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0, up = y > 0 ? out[(y - 1) * stride + x] : 0;
      const ul = x >= bpp && y > 0 ? out[(y - 1) * stride + x - bpp] : 0;
      let v = row[x];
      if (f === 1) v += a; else if (f === 2) v += up; else if (f === 3) v += (a + up) >> 1;
      else if (f === 4) {
        const p = a + up - ul, pa = Math.abs(p - a), pb = Math.abs(p - up), pc = Math.abs(p - ul);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? up : ul;
      }
      out[y * stride + x] = v & 255;
    }
  }
  return { w, h, bpp, px: out };
}

async function oldstyle([bin, profile, url, shot, rgb]) {
  const [r, g, b] = rgb.split(',').map(Number);
  const t0 = Date.now();
  const p = launch(bin, [...FLAGS, `--user-data-dir=${profile}`, `--screenshot=${shot}`,
    `--window-size=${WIDTH},${HEIGHT}`, url]);
  const code = await new Promise((res) => {
    const timer = setTimeout(() => { killChrome(); res('timeout'); }, 60000);
    p.on('exit', (c) => { clearTimeout(timer); res(c); });
  });
  const result = { exit: code, elapsedMs: Date.now() - t0, matching: 0, pixels: 0 };
  if (fs.existsSync(shot)) {
    const img = pngPixels(shot);
    result.pixels = img.w * img.h;
    for (let i = 0; i < img.px.length; i += img.bpp)
      if (Math.abs(img.px[i] - r) < 8 && Math.abs(img.px[i + 1] - g) < 8 && Math.abs(img.px[i + 2] - b) < 8)
        result.matching++;
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}

const [mode, ...args] = process.argv.slice(2);
const modes = { replay, oldstyle };
if (!modes[mode]) {
  process.stderr.write('usage: drive.mjs replay|oldstyle ...\n');
  process.exit(2);
}
modes[mode](args).then(() => process.exit(0), (e) => {
  process.stderr.write(`drive.mjs: ${e.stack || e}\n`);
  killChrome();
  process.exit(2);
});
