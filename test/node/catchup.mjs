// A slow reader not written in Go: it subscribes to a changeset, stops
// reading its socket while a burst is published, reads again, and keeps
// its copy of the state with the review page's own reducer
// (web/static/reducer.js), frame by frame as they come. The daemon
// replaces its backlog with a catch-up; what this client ends with must
// be what a fresh subscriber's snapshot holds.
//
// Usage: node catchup.mjs WS_URL CHANGESET_URI
// It talks with the test on its standard streams, a line each way:
//   out "subscribed N"   its snapshot is in (N files); it reads a
//                        millisecond in fifty from then on
//   in  "read"           it reads at full speed
//   in  "want FILE"      FILE holds the fresh snapshot's files (JSON)
//   out "ok ..."         its copy equals them; it exits 0
//   out "FAIL ..."       anything else; it exits 1

import readline from 'node:readline';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { applyChangeset } from '../../web/static/reducer.js';

const [url, channel] = process.argv.slice(2);
if (!url || !channel) {
  console.log('FAIL usage: node catchup.mjs WS_URL CHANGESET_URI');
  process.exit(2);
}
const fail = (why) => {
  console.log(`FAIL ${why}`);
  process.exit(1);
};
setTimeout(() => {
  const mine = state ? JSON.parse(canon(state.files)) : [];
  const theirs = want ? JSON.parse(want) : [];
  const at = mine.findIndex((f, i) => JSON.stringify(f) !== JSON.stringify(theirs[i]));
  fail(`timed out: ${state?.status}, ${mine.length} files against ${theirs.length}, first difference at ${at}: ${JSON.stringify(mine[at])?.slice(0, 300)} / ${JSON.stringify(theirs[at])?.slice(0, 300)}; ${frames} frames, ${contentChanges} contentChanged`);
}, 60000).unref();

const ws = new WebSocket(url, { headers: { Origin: new URL(url.replace(/^ws/, 'http')).origin }, maxPayload: 0 });
let state = null;
let lastSeq = 0;
let contentChanges = 0; // contentChanged actions after the snapshot: a catch-up sends one
let frames = 0;
let trickle = null;
let want = null;
const pending = new Map();
let nextId = 1;
const call = (method, params) =>
  new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  });

// canon is the files in id order with every object's members sorted:
// the test writes what it wants through Go's encoder, whose member order
// need not be the daemon's.
const sorted = (v) => {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
  return v;
};
const canon = (files) => JSON.stringify(sorted([...files].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))));

function settled() {
  if (!want || !state || state.status !== 'ready') return;
  if (canon(state.files) !== want) return;
  console.log(`ok ${state.files.length} files, ${frames} frames, ${contentChanges} contentChanged after the snapshot`);
  ws.close();
  process.exit(0);
}

ws.on('message', (data) => {
  frames++;
  const msg = JSON.parse(data.toString('utf8'));
  if ('id' in msg && pending.has(msg.id)) {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if ('result' in msg) p.resolve(msg.result);
    else p.reject(new Error(JSON.stringify(msg.error)));
    return;
  }
  if (msg.method !== 'action' || msg.params.channel !== channel || !state) return;
  const env = msg.params;
  if (env.serverSeq <= lastSeq) fail(`serverSeq ${env.serverSeq} after ${lastSeq}: out of order or repeated`);
  lastSeq = env.serverSeq;
  if (!env.action.type.startsWith('changeset/')) fail(`a ${env.action.type} on a changeset channel`);
  if (env.action.type === 'changeset/contentChanged') contentChanges++;
  [state] = applyChangeset(state, env.action);
  settled();
});
ws.on('close', (code, reason) => {
  if (!want || canon(state?.files || []) !== want) fail(`closed (${code} ${reason}) before its copy was current`);
});
ws.on('error', (e) => fail(`socket: ${e.message}`));

ws.on('open', async () => {
  try {
    await call('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: 'node-slow-reader' });
    const res = await call('subscribe', { channel });
    state = res.snapshot.state;
    lastSeq = res.snapshot.fromSeq ?? 0;
    // Until told to read, it takes its socket in a millisecond every
    // 50 ms: slower than any burst, never stalled (a client that reads
    // nothing at all is closed once a write times out).
    const sock = ws._socket;
    sock.pause();
    trickle = setInterval(() => {
      sock.resume();
      setTimeout(() => sock.pause(), 1);
    }, 50);
    console.log(`subscribed ${state.files.length}`);
  } catch (e) {
    fail(e.message);
  }
});

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'read') {
    clearInterval(trickle);
    setTimeout(() => ws._socket.resume(), 2); // after a pending pause

  } else if (line.startsWith('want ')) {
    want = canon(JSON.parse(readFileSync(line.slice(5), 'utf8')));
    settled();
  }
});
