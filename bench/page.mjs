// Times a raw AHP client's connect → ready on the review page's path: open
// the socket, initialize, list the sessions, subscribe to the first one
// and then to its uncommitted changeset, until its snapshot is ready with
// every file and parsed. Run by bench -page; ws comes from test/node.
//
// Usage: node bench/page.mjs WS_URL FILES RUNS
// Prints one JSON line: {"ready":[ms...]}.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const WebSocket = createRequire(path.join(here, '..', 'test', 'node', 'package.json'))('ws');
const [url, files, runs] = process.argv.slice(2);

async function one(i) {
  const t0 = process.hrtime.bigint();
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  let id = 0;
  const waiting = new Map();
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString('utf8'));
    if (msg.id !== undefined && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    }
  });
  const call = (method, params) => new Promise((resolve) => {
    waiting.set(++id, resolve);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  });
  await call('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: `bench-page-raw-${i}`, initialSubscriptions: ['ahp-root://'] });
  const list = await call('listSessions', { channel: 'ahp-root://' });
  const session = list.result.items[0].resource;
  const s = await call('subscribe', { channel: session });
  const c = s.result.snapshot.state.changesets.find((x) => x.changeKind === 'uncommitted');
  const cs = await call('subscribe', { channel: c.uriTemplate });
  const st = cs.result.snapshot.state;
  const t1 = process.hrtime.bigint();
  ws.close();
  if (st.status !== 'ready' || st.files.length < Number(files)) throw new Error(`snapshot not ready with ${files} files`);
  return Number(t1 - t0) / 1e6;
}

const out = { ready: [] };
for (let i = 0; i < Number(runs); i++) out.ready.push(await one(i));
console.log(JSON.stringify(out));
