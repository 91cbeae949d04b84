// A small AHP client: JSON-RPC 2.0 over one WebSocket, channel mirrors
// kept by the reducers, optimistic dispatch with write-ahead
// reconciliation, and reconnect with backoff after a dropped connection.

import { reducerFor } from './reducer.js';

export const ROOT = 'ahp-root://';
export const PROTOCOL_VERSIONS = ['1.0.0'];

// RPCError is a JSON-RPC error reply.
export class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

// wireError reads an error member. Frame-level errors of some daemon
// versions spell the keys Code and Message; accept both spellings.
function wireError(e) {
  if (e === null || typeof e !== 'object') return new RPCError(-32603, String(e));
  const code = e.code ?? e.Code ?? -32603;
  const message = e.message ?? e.Message ?? 'error';
  return new RPCError(code, message, e.data ?? e.Data);
}

const BACKOFF_MS = [250, 500, 1000, 2000, 4000];

// socketFor is where the page's socket goes and the subprotocols it asks
// for: the token travels in Sec-WebSocket-Protocol, never in the URL, as
// changesetd.token.<token> beside changesetd.v1, the one the daemon
// answers with. A token that cannot be a subprotocol (one given with
// --token may hold any character) goes in the query, as other clients
// send it. boot.js does the same before the modules load.
export function socketFor(token) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = `${proto}//${location.host}/ahp`;
  if (/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(token)) return { url, protocols: ['changesetd.v1', `changesetd.token.${token}`] };
  return { url: `${url}?token=${encodeURIComponent(token)}`, protocols: [] };
}

export class Client extends EventTarget {
  // url is ws://host/ahp, and protocols the subprotocols that carry the
  // token (socketFor); clientId identifies this page for reconnect and in
  // the origin of the actions it dispatches.
  constructor(url, clientId, protocols = []) {
    super();
    this.url = url;
    this.protocols = protocols;
    this.clientId = clientId;
    this.nextId = 1;
    this.clientSeq = 0;
    this.pending = new Map(); // request id -> {resolve, reject}
    this.channels = new Map(); // channel -> {state, confirmed, fromSeq, optimistic:[]}
    this.lastSeen = 0;
    this.initialized = false;
    this.ws = null;
    this.attempt = 0;
    this.closedByUs = false;
    this.status = 'connecting';
    this.early = new Map(); // channel -> the subscription boot.js made for it
  }

  // start connects and initializes; later drops reconnect by themselves.
  // boot, when given, is the socket boot.js opened for the same URL and
  // token.
  start(boot) {
    this.closedByUs = false;
    if (boot && boot.url === this.url && String(boot.protocols) === String(this.protocols) && boot.ws.readyState <= WebSocket.OPEN) {
      this.adopt(boot);
      return;
    }
    boot?.ws.close();
    this.open();
  }

  // adopt takes over boot.js's socket: its initialize and subscribe
  // requests become this client's, and the frames received so far are
  // read as if they had just arrived.
  adopt(boot) {
    const ws = boot.ws;
    this.ws = ws;
    this.setStatus('connecting');
    const expect = (id) => new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
    const init = expect(boot.init);
    const list = expect(boot.list);
    list.catch(() => {});
    this.earlyList = list;
    for (const [id, channel] of boot.subscribed) {
      this.channels.set(channel, { optimistic: [] });
      const sub = expect(id).then(
        (res) => {
          if (res && res.snapshot) this.installSnapshot(res.snapshot);
          return this.state(channel);
        },
        (e) => {
          this.channels.delete(channel);
          throw e;
        },
      );
      sub.catch(() => {}); // claimed or dropped later: not unhandled
      this.early.set(channel, sub);
    }
    const opened = () => {
      ws.opened = true;
      this.handshake(ws, init);
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => this.dropped(ws, ev);
    if (boot.opened) opened();
    else boot.then = opened; // after boot.js has sent its requests
    for (const f of boot.frames) this.receive(f);
    if (boot.closed) this.dropped(ws, boot.closed);
  }

  // listSessions lists the sessions, one page after cursor; the first
  // page may be the one boot.js asked for.
  listSessions(cursor) {
    const early = this.earlyList;
    this.earlyList = null;
    if (early && !cursor) return early;
    return this.request('listSessions', cursor ? { channel: ROOT, cursor } : { channel: ROOT });
  }

  // dropEarly unsubscribes from what boot.js subscribed to and the page
  // did not take: a session or changeset that is gone or not shown.
  dropEarly() {
    this.earlyList = null;
    for (const [channel, sub] of this.early) {
      this.early.delete(channel);
      sub.then(() => this.unsubscribe(channel), () => {});
    }
  }

  close() {
    this.closedByUs = true;
    clearTimeout(this.retryTimer);
    if (this.ws) this.ws.close(1000, 'page closed');
  }

  setStatus(status, detail) {
    this.status = status;
    this.dispatchEvent(new CustomEvent('status', { detail: { status, detail } }));
  }

  open() {
    let ws;
    try {
      ws = new WebSocket(this.url, this.protocols);
    } catch (e) {
      this.setStatus('error', e.message);
      return;
    }
    this.ws = ws;
    this.setStatus(this.initialized ? 'reconnecting' : 'connecting');
    ws.onopen = () => {
      ws.opened = true;
      this.handshake(ws);
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => this.dropped(ws, ev);
  }

  async handshake(ws, sent) {
    try {
      if (!this.initialized) {
        await this.initialize(sent);
      } else {
        await this.resume();
      }
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.setStatus('connected');
      this.dispatchEvent(new CustomEvent('ready', { detail: { resumed: this.initialized && this.resumed } }));
    } catch (e) {
      if (this.ws !== ws) return; // dropped meanwhile; the retry is scheduled
      if (e.code === -32005) {
        this.closedByUs = true;
        this.setStatus('error', `the daemon speaks none of ${PROTOCOL_VERSIONS.join(', ')}: ${e.message}`);
      } else {
        this.setStatus('error', e.message);
      }
      ws.close();
    }
  }

  // initialize initializes the connection; sent, when given, is the
  // reply to an initialize boot.js already sent.
  async initialize(sent) {
    const res = await (sent || this.request('initialize', {
      channel: ROOT,
      protocolVersions: PROTOCOL_VERSIONS,
      clientId: this.clientId,
      clientInfo: { name: 'changesetd-review-page' },
      initialSubscriptions: [ROOT],
    }));
    this.protocolVersion = res.protocolVersion;
    this.serverInfo = res.serverInfo;
    this.seen(res.serverSeq);
    for (const snap of res.snapshots || []) this.installSnapshot(snap);
    this.initialized = true;
    this.resumed = false;
  }

  // resume re-attaches every mirrored channel with reconnect: a replay of
  // what was missed, or fresh snapshots when the gap is too old.
  async resume() {
    const subs = [...this.channels.keys()];
    let res;
    try {
      res = await this.request('reconnect', { channel: ROOT, clientId: this.clientId, lastSeenServerSeq: this.lastSeen, subscriptions: subs });
    } catch (e) {
      if (e.code !== -32602 && e.code !== -32600 && e.code !== -32008) throw e;
      // The daemon does not know how to resume us (-32008: it restarted,
      // or forgot us): start over, and subscribe afresh to every channel
      // the page mirrors.
      this.initialized = false;
      await this.initialize();
      for (const ch of subs) {
        if (ch === ROOT) continue;
        this.channels.delete(ch);
        await this.subscribe(ch).catch(() => this.dispatchEvent(new CustomEvent('gone', { detail: { channel: ch } })));
      }
      return;
    }
    for (const uri of res.missing || []) this.forget(uri);
    if (res.type === 'snapshot') {
      // The daemon may have restarted, and its sequence numbers with it:
      // the snapshots set the cursor afresh.
      this.lastSeen = 0;
      for (const snap of res.snapshots || []) this.installSnapshot(snap);
    } else {
      for (const env of res.actions || []) this.applyEnvelope(env);
    }
    // Dispatches whose echo did not come back before the drop were lost
    // with the connection: roll them back.
    for (const [ch, m] of this.channels) {
      if (m.optimistic.length) {
        m.optimistic = [];
        this.recompute(ch);
      }
    }
    this.resumed = true;
  }

  dropped(ws, ev) {
    if (this.ws !== ws) return;
    this.ws = null;
    for (const [, p] of this.pending) p.reject(new RPCError(-32000, 'connection lost'));
    this.pending.clear();
    if (this.closedByUs) {
      this.setStatus('closed');
      return;
    }
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt++;
    // A socket that never opened was refused before the protocol began:
    // the daemon is down, or it turned the upgrade down (a wrong token).
    this.neverOpened = !ws.opened;
    this.setStatus('disconnected', `${ev.reason || 'connection lost'}; retrying in ${(delay / 1000).toFixed(1)} s`);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new RPCError(-32000, 'not connected');
    this.ws.send(JSON.stringify(msg));
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      try {
        this.send({ jsonrpc: '2.0', id, method, params });
      } catch (e) {
        reject(e);
        return;
      }
      this.pending.set(id, { resolve, reject });
    });
  }

  notify(method, params) {
    this.send({ jsonrpc: '2.0', method, params });
  }

  receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      console.warn('ahp: frame is not JSON', data);
      return;
    }
    if (msg === null || typeof msg !== 'object') return;
    // A reply with an error member is an error, whatever else it carries.
    if ('error' in msg && msg.error !== undefined && msg.error !== null) {
      const err = wireError(msg.error);
      const p = msg.id !== undefined && msg.id !== null ? this.pending.get(msg.id) : undefined;
      if (p) {
        this.pending.delete(msg.id);
        p.reject(err);
      } else {
        this.dispatchEvent(new CustomEvent('protocolError', { detail: err }));
      }
      return;
    }
    if ('method' in msg) {
      this.notification(msg.method, msg.params || {});
      return;
    }
    if ('id' in msg) {
      const p = this.pending.get(msg.id);
      if (p) {
        this.pending.delete(msg.id);
        p.resolve(msg.result);
      }
    }
  }

  notification(method, params) {
    if (method === 'action') {
      this.applyEnvelope(params);
      return;
    }
    this.dispatchEvent(new CustomEvent('notification', { detail: { method, params } }));
  }

  seen(seq) {
    if (typeof seq === 'number' && seq > this.lastSeen) this.lastSeen = seq;
  }

  installSnapshot(snap) {
    const m = this.channels.get(snap.resource) || { optimistic: [] };
    m.confirmed = snap.state;
    m.fromSeq = snap.fromSeq;
    m.lastSeq = snap.fromSeq;
    m.optimistic = [];
    this.channels.set(snap.resource, m);
    this.seen(snap.fromSeq);
    this.recompute(snap.resource);
  }

  // applyEnvelope reconciles one action envelope with the mirror.
  applyEnvelope(env) {
    this.seen(env.serverSeq);
    const m = this.channels.get(env.channel);
    if (!m || m.confirmed === undefined) return;
    const mine = env.origin && env.origin.clientId === this.clientId;
    if (env.rejectionReason !== undefined && env.rejectionReason !== null) {
      // A rejection takes no serverSeq of its own: it carries the current
      // one, often that of the last action already applied. It is told
      // apart by the dispatch it answers, still pending.
      if (!mine || !m.optimistic.some((p) => p.clientSeq === env.origin.clientSeq)) return;
      m.optimistic = m.optimistic.filter((p) => p.clientSeq !== env.origin.clientSeq);
      this.dispatchEvent(new CustomEvent('rejected', { detail: { channel: env.channel, action: env.action, reason: env.rejectionReason, clientSeq: env.origin.clientSeq } }));
      this.recompute(env.channel);
      return;
    }
    if (env.serverSeq <= m.lastSeq) return; // already in the snapshot or seen
    m.lastSeq = env.serverSeq;
    if (mine) {
      m.optimistic = m.optimistic.filter((p) => p.clientSeq !== env.origin.clientSeq);
    }
    const reduce = reducerFor(env.channel);
    [m.confirmed] = reduce(m.confirmed, env.action);
    this.recompute(env.channel, env.action);
  }

  // recompute derives the shown state: the confirmed state with the
  // pending optimistic actions applied on top.
  recompute(channel, action) {
    const m = this.channels.get(channel);
    if (!m) return;
    const reduce = reducerFor(channel);
    let s = m.confirmed;
    for (const p of m.optimistic) [s] = reduce(s, p.action);
    m.state = s;
    this.dispatchEvent(new CustomEvent('state', { detail: { channel, state: s, action } }));
  }

  state(channel) {
    return this.channels.get(channel)?.state;
  }

  // unconfirmed lists the actions dispatched on channel whose echo has
  // not come back yet.
  unconfirmed(channel) {
    return (this.channels.get(channel)?.optimistic || []).map((p) => p.action);
  }

  async subscribe(channel) {
    const early = this.early.get(channel);
    if (early) {
      this.early.delete(channel);
      return early;
    }
    if (this.channels.has(channel) && this.channels.get(channel).confirmed !== undefined) return this.state(channel);
    this.channels.set(channel, { optimistic: [] });
    let res;
    try {
      res = await this.request('subscribe', { channel });
    } catch (e) {
      this.channels.delete(channel);
      throw e;
    }
    if (res && res.snapshot) this.installSnapshot(res.snapshot);
    return this.state(channel);
  }

  unsubscribe(channel) {
    if (!this.channels.delete(channel)) return;
    try {
      this.notify('unsubscribe', { channel });
    } catch {
      // Not connected: the next reconnect simply does not list it.
    }
  }

  forget(channel) {
    if (this.channels.delete(channel)) this.dispatchEvent(new CustomEvent('gone', { detail: { channel } }));
  }

  // dispatch applies action optimistically and sends it; the echo confirms
  // it, a rejection rolls it back.
  dispatch(channel, action) {
    const m = this.channels.get(channel);
    if (!m || m.confirmed === undefined) throw new Error(`dispatch: not subscribed to ${channel}`);
    const clientSeq = ++this.clientSeq;
    m.optimistic.push({ clientSeq, action });
    this.recompute(channel);
    try {
      this.notify('dispatchAction', { channel, clientSeq, action });
    } catch (e) {
      m.optimistic = m.optimistic.filter((p) => p.clientSeq !== clientSeq);
      this.recompute(channel);
      throw e;
    }
    return clientSeq;
  }
}
