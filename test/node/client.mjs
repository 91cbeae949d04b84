// A client not written in Go. It reads the daemon's replies the way the
// AHP TypeScript client does — `'result' in msg` decides success — so a
// reply that carries both members, or an error whose members are spelled
// differently, fails here even where Go's lenient decoder would accept it.
//
// Usage: node client.mjs ws://127.0.0.1:PORT/ahp?token=...
//        (or AHP_URL=...). AHP_MAX_FRAME, when set, is the daemon's
//        --max-frame; an oversized frame is then sent as well.
// Exits non-zero when any check fails; the last line is a summary.

import WebSocket from 'ws';

const url = process.argv[2] || process.env.AHP_URL;
if (!url) {
  console.error('usage: node client.mjs WS_URL (or set AHP_URL)');
  process.exit(2);
}
const maxFrame = Number(process.env.AHP_MAX_FRAME || 0);
const TIMEOUT_MS = 30000;
const ROOT = 'ahp-root://';

let passed = 0;
const failures = [];

function check(name, ok, detail) {
  if (ok) {
    passed++;
  } else {
    failures.push(`${name}: ${detail}`);
    console.log(`FAIL ${name}: ${detail}`);
  }
}

// A connection that hands out every incoming message in order.
class Conn {
  constructor(ws) {
    this.ws = ws;
    this.queue = [];
    this.waiters = [];
    this.notes = [];
    this.closed = null;
    this.nextId = 1;
    ws.on('message', (data, isBinary) => {
      let msg;
      try {
        msg = JSON.parse(data.toString('utf8'));
      } catch (e) {
        msg = { unparsable: data.toString('utf8'), isBinary };
      }
      if (msg && typeof msg === 'object' && 'method' in msg) {
        this.notes.push(msg);
      } else {
        this.queue.push(msg);
      }
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
  }

  static open(u) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(u, { maxPayload: 64 << 20 });
      const c = new Conn(ws);
      ws.once('open', () => resolve(c));
      ws.once('error', reject);
    });
  }

  wake() {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  // until waits for cond() to return a value other than undefined.
  async until(what, cond) {
    const deadline = Date.now() + TIMEOUT_MS;
    for (;;) {
      const v = cond();
      if (v !== undefined) return v;
      if (this.closed && what !== 'close') throw new Error(`${what}: connection closed (${this.closed.code} ${this.closed.reason})`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${what}: no answer in ${TIMEOUT_MS} ms`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }

  // reply waits for the next response (a message without method).
  reply(what) {
    return this.until(what, () => (this.queue.length ? this.queue.shift() : undefined));
  }

  // send writes a raw frame and returns the next response.
  async send(what, frame, binary = false) {
    this.ws.send(frame, { binary });
    return this.reply(what);
  }

  // call sends a request with a fresh numeric id and returns its response.
  async call(method, params) {
    const id = this.nextId++;
    const msg = await this.send(method, JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    if (msg.id !== id) throw new Error(`${method}: response id ${JSON.stringify(msg.id)}, want ${id}`);
    return msg;
  }

  close() {
    this.ws.close();
  }
}

// JSON-RPC 2.0 allows a string, a number or null as an id.
function idOK(msg) {
  return 'id' in msg && (msg.id === null || typeof msg.id === 'string' || typeof msg.id === 'number');
}

function members(msg) {
  return msg && typeof msg === 'object' ? Object.keys(msg).sort().join(',') : typeof msg;
}

// expectResult checks a success reply the way the TypeScript client does.
function expectResult(name, msg) {
  const ok = msg && typeof msg === 'object' && 'result' in msg && !('error' in msg);
  check(name, ok, `want a result and no error, got ${JSON.stringify(msg).slice(0, 300)}`);
  if (ok) {
    check(`${name}: members`, members(msg) === 'id,jsonrpc,result', `members ${members(msg)}`);
    check(`${name}: jsonrpc`, msg.jsonrpc === '2.0', `jsonrpc ${JSON.stringify(msg.jsonrpc)}`);
    check(`${name}: id`, idOK(msg), `id ${JSON.stringify(msg.id)}`);
  }
  return ok ? msg.result : undefined;
}

// expectError checks an error reply: 'error' and no 'result', a numeric
// code (the one wanted, when given) and a string message.
function expectError(name, msg, code) {
  const isErr = msg && typeof msg === 'object' && 'error' in msg && !('result' in msg);
  check(name, isErr, `want an error and no result, got ${JSON.stringify(msg).slice(0, 300)}`);
  if (!isErr) return;
  const e = msg.error;
  check(`${name}: error.code is a number`, e && typeof e.code === 'number' && Number.isInteger(e.code), `error ${JSON.stringify(e)}`);
  check(`${name}: error.message is a string`, e && typeof e.message === 'string' && e.message !== '', `error ${JSON.stringify(e)}`);
  if (code !== undefined) {
    check(`${name}: code ${code}`, e && e.code === code, `got ${e && e.code}: ${e && e.message}`);
  }
  const allowed = ['code', 'message', 'data'];
  const extra = Object.keys(e || {}).filter((k) => !allowed.includes(k));
  check(`${name}: error members`, extra.length === 0, `unexpected ${extra.join(', ')}`);
  check(`${name}: members`, members(msg) === 'error,id,jsonrpc', `members ${members(msg)}`);
  check(`${name}: jsonrpc`, msg.jsonrpc === '2.0', `jsonrpc ${JSON.stringify(msg.jsonrpc)}`);
  check(`${name}: id`, idOK(msg), `id ${JSON.stringify(msg.id)}`);
}

async function main() {
  const c = await Conn.open(url);

  expectResult('ping before initialize', await c.call('ping', { channel: ROOT }));
  expectError('subscribe before initialize', await c.call('subscribe', { channel: ROOT }), -32600);
  const init = expectResult('initialize', await c.call('initialize', {
    channel: ROOT, protocolVersions: ['1.0.0'], clientId: 'node-client', clientInfo: { name: 'changesetd-node-client' },
  }));
  check('initialize: protocolVersion', init && init.protocolVersion === '1.0.0', JSON.stringify(init));

  const list = expectResult('listSessions', await c.call('listSessions', { channel: ROOT }));
  const session = list && list.items && list.items[0] && list.items[0].resource;
  if (!session) throw new Error(`listSessions: no session in ${JSON.stringify(list)}`);

  // The session's changeset catalogue, from its snapshot or, while it is
  // starting, from session/changesetsChanged.
  const sub = expectResult('subscribe session', await c.call('subscribe', { channel: session }));
  let changesets = sub && sub.snapshot && sub.snapshot.state && sub.snapshot.state.changesets;
  if (!changesets || changesets.length === 0) {
    changesets = await c.until('session/changesetsChanged', () => {
      const n = c.notes.find((m) => m.method === 'action' && m.params.channel === session && m.params.action.type === 'session/changesetsChanged');
      return n ? n.params.action.changesets : undefined;
    });
  }
  const byKind = Object.fromEntries(changesets.map((cs) => [cs.changeKind, cs.uriTemplate]));
  const uncommitted = byKind.uncommitted;
  if (!uncommitted) throw new Error(`no uncommitted changeset in ${JSON.stringify(changesets)}`);
  const snap = expectResult('subscribe changeset', await c.call('subscribe', { channel: uncommitted }));
  check('subscribe changeset: snapshot', snap && snap.snapshot && snap.snapshot.resource === uncommitted, JSON.stringify(snap).slice(0, 300));
  const workdir = list.items[0].workingDirectories && list.items[0].workingDirectories[0];
  expectResult('resourceRead inside the session', await c.call('resourceRead', { channel: ROOT, uri: `${workdir}/a.txt` }));

  // Review comments: the session's annotations channel.
  const notes = list.items[0].annotations;
  check('listSessions: annotations summary', notes && notes.resource === `${session}/annotations` && notes.annotationCount === 0 && notes.entryCount === 0, JSON.stringify(notes));
  const annotations = `${session}/annotations`;
  const asnap = expectResult('subscribe annotations', await c.call('subscribe', { channel: annotations }));
  check('subscribe annotations: an empty AnnotationsState', asnap && asnap.snapshot && Array.isArray(asnap.snapshot.state.annotations) && asnap.snapshot.state.annotations.length === 0, JSON.stringify(asnap).slice(0, 300));
  const annotation = {
    id: 'node-1', turnId: 'baseline', resource: `${workdir}/a.txt`, resolved: false,
    range: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } },
    entries: [{ id: 'e1', text: { markdown: 'Is *this* right?' } }],
  };
  const dispatched = await c.call('dispatchAction', { channel: annotations, clientSeq: 1, action: { type: 'annotations/set', annotation } });
  expectResult('dispatchAction annotations/set', dispatched);
  check('dispatchAction: result is null', 'result' in dispatched && dispatched.result === null, JSON.stringify(dispatched));
  const echo = await c.until('annotations/set echo', () => c.notes.find((m) => m.method === 'action' && m.params.channel === annotations && m.params.origin && m.params.origin.clientSeq === 1));
  check('echo: origin is ours', echo.params.origin.clientId === 'node-client', JSON.stringify(echo.params.origin));
  check('echo: not rejected', !('rejectionReason' in echo.params), JSON.stringify(echo.params));
  const echoed = echo.params.action.annotation;
  check('echo: markdown text kept as an object', echoed && echoed.entries[0].text && echoed.entries[0].text.markdown === 'Is *this* right?', JSON.stringify(echoed));
  check('echo: entry stamped with changesetd/createdAt', echoed && echoed.entries[0]._meta && typeof echoed.entries[0]._meta['changesetd/createdAt'] === 'string', JSON.stringify(echoed));
  const placed = await c.until('changesetd/current', () => c.notes.find((m) => m.method === 'action' && m.params.channel === annotations && !m.params.origin && m.params.action.annotation && m.params.action.annotation._meta && m.params.action.annotation._meta['changesetd/current']));
  check('current place: the line is where it was', placed.params.action.annotation._meta['changesetd/current'].status === 'same', JSON.stringify(placed.params.action.annotation._meta));
  await c.call('dispatchAction', { channel: annotations, clientSeq: 2, action: { type: 'annotations/set', annotation: { ...annotation, id: 'node-2', entries: [] } } });
  const rejected = await c.until('rejection', () => c.notes.find((m) => m.method === 'action' && m.params.channel === annotations && m.params.origin && m.params.origin.clientSeq === 2));
  check('rejection: rejectionReason is a sentence', typeof rejected.params.rejectionReason === 'string' && /entry/.test(rejected.params.rejectionReason), JSON.stringify(rejected.params));
  const delivered = expectResult('x-changesetd/annotationsDelivered', await c.call('x-changesetd/annotationsDelivered', { channel: annotations, annotationIds: ['node-1'], turnId: '' }));
  check('annotationsDelivered: result is {}', delivered !== null && typeof delivered === 'object' && Object.keys(delivered).length === 0, JSON.stringify(delivered));
  expectError('annotationsDelivered on a session channel', await c.call('x-changesetd/annotationsDelivered', { channel: session, annotationIds: [] }), -32602);

  // Errors answered by the method handlers.
  expectError('unknown method', await c.call('noSuchMethod', { channel: ROOT }), -32601);
  const bad = await c.call('subscribe', { channel: 5 });
  expectError('invalid params', bad, -32602);
  check('invalid params: names params.channel', bad.error && /\bparams\.channel\b/.test(bad.error.message), `message ${JSON.stringify(bad.error && bad.error.message)}`);
  expectError('listSessions limit not a number', await c.call('listSessions', { channel: ROOT, limit: 'ten' }), -32602);
  const sessionId = session.replace(/^ahp-session:\//, '');
  expectError('subscribe unknown changeset', await c.call('subscribe', { channel: `ahp-changeset:/${sessionId}/changeset/nosuch` }), -32008);
  expectError('subscribe changeset of unknown session', await c.call('subscribe', { channel: 'ahp-changeset:/00000000-0000-4000-8000-000000000000/changeset/uncommitted' }));
  if (byKind.turn) {
    expectError('subscribe unknown turn', await c.call('subscribe', { channel: byKind.turn.replace('{turnId}', 'nope') }), -32008);
  }
  expectError('subscribe unknown session', await c.call('subscribe', { channel: 'ahp-session:/does-not-exist' }), -32001);
  expectError('resourceRead outside the session', await c.call('resourceRead', { channel: ROOT, uri: 'file:///etc/passwd' }), -32009);
  expectError('invokeChangesetOperation unknown op', await c.call('invokeChangesetOperation', {
    channel: uncommitted, operationId: 'nope', target: { kind: 'resource', resource: `${workdir}/a.txt` },
  }), -32602);
  expectError('initialize twice', await c.call('initialize', { channel: ROOT, protocolVersions: ['1.0.0'], clientId: 'node-client' }), -32600);

  // Errors for frames that are not a valid request.
  expectError('parse error', await c.send('parse error', 'not json'), -32700);
  expectError('truncated object', await c.send('truncated object', '{"jsonrpc":"2.0","id":'), -32700);
  expectError('batch', await c.send('batch', '[{"jsonrpc":"2.0","id":90,"method":"ping"}]'), -32600);
  expectError('empty batch', await c.send('empty batch', '[]'), -32600);
  expectError('not an object', await c.send('not an object', '42'), -32600);
  expectError('bad jsonrpc version', await c.send('bad jsonrpc version', '{"jsonrpc":"1.0","id":91,"method":"ping"}'), -32600);
  expectError('missing jsonrpc', await c.send('missing jsonrpc', '{"id":92,"method":"ping"}'), -32600);
  for (const [what, id] of [['object id', '{"a":1}'], ['boolean id', 'true']]) {
    const msg = await c.send(what, `{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
    expectError(what, msg, -32600);
    check(`${what}: answered with a null id`, msg.id === null, `id ${JSON.stringify(msg.id)}`);
  }
  const neg = await c.send('negative id', '{"jsonrpc":"2.0","id":-1,"method":"ping"}');
  expectError('negative id', neg, -32600);
  check('negative id: echoed', neg.id === -1, `id ${JSON.stringify(neg.id)}`);
  expectError('params not an object', await c.send('params not an object', '{"jsonrpc":"2.0","id":93,"method":"subscribe","params":5}'), -32602);
  expectError('binary frame', await c.send('binary frame', Buffer.from('{"jsonrpc":"2.0","id":94,"method":"ping"}'), true), -32600);

  // Still usable after all of it.
  expectResult('ping after errors', await c.call('ping', { channel: ROOT }));
  c.close();

  // A version the server does not speak: -32005 with supportedVersions.
  const v = await Conn.open(url);
  const refused = await v.call('initialize', { channel: ROOT, protocolVersions: ['99.0.0'], clientId: 'node-old' });
  expectError('unsupported version', refused, -32005);
  check('unsupported version: data.supportedVersions', refused.error && refused.error.data && Array.isArray(refused.error.data.supportedVersions), JSON.stringify(refused.error));
  v.close();

  // An oversized frame: an error, then close 1009.
  if (maxFrame > 0) {
    const o = await Conn.open(url);
    const pad = 'x'.repeat(maxFrame + 1);
    expectError('oversized frame', await o.send('oversized frame', `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${pad}"}}`), -32600);
    const closed = await o.until('close', () => o.closed || undefined);
    check('oversized frame: close 1009', closed.code === 1009, `close ${closed.code} ${closed.reason}`);
  }
}

main().then(
  () => {
    const line = `node client: ${passed} checks passed, ${failures.length} failed`;
    console.log(line);
    process.exit(failures.length ? 1 : 0);
  },
  (err) => {
    console.log(`node client: aborted after ${passed} checks passed, ${failures.length} failed: ${err.message}`);
    process.exit(1);
  },
);
