// Times what a JavaScript client waits for as a later subscriber of a
// resident changeset: subscribe → the whole reply received → parsed with
// JSON.parse. Run by bench (go run ./bench) with the daemon's URL and the
// changeset URI; ws comes from test/node (npm ci --prefix test/node).
//
// Usage: node bench/later.mjs WS_URL CHANGESET_URI FILES RUNS
// Prints one JSON line: {"receive":[ms...],"parse":[ms...],"bytes":N}.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const WebSocket = createRequire(path.join(here, '..', 'test', 'node', 'package.json'))('ws');
const [url, uri, files, runs] = process.argv.slice(2);

function next(ws) {
  return new Promise((resolve, reject) => {
    ws.once('message', resolve);
    ws.once('close', () => reject(new Error('connection closed')));
  });
}

async function one(i) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: `bench-node-${i}` } }));
  await next(ws);
  const t0 = process.hrtime.bigint();
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'subscribe', params: { channel: uri } }));
  const data = await next(ws);
  const t1 = process.hrtime.bigint();
  const msg = JSON.parse(data.toString('utf8'));
  const t2 = process.hrtime.bigint();
  ws.close();
  const st = msg.result && msg.result.snapshot && msg.result.snapshot.state;
  if (!st || st.status !== 'ready' || st.files.length < Number(files)) {
    throw new Error(`subscriber ${i}: snapshot not ready with ${files} files: ${data.toString('utf8').slice(0, 200)}`);
  }
  return { receive: Number(t1 - t0) / 1e6, parse: Number(t2 - t1) / 1e6, bytes: data.length };
}

const out = { receive: [], parse: [], bytes: 0 };
for (let i = 0; i < Number(runs); i++) {
  const r = await one(i);
  out.receive.push(r.receive);
  out.parse.push(r.parse);
  out.bytes = r.bytes;
}
console.log(JSON.stringify(out));
