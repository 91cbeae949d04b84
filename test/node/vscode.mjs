// VS Code's Agents window, as its source connects to a remote agent host
// and opens a session's Changes view, replayed against the daemon. Each
// expectation names, in a comment, the identifier of microsoft/vscode's
// code it comes from (src/vs/platform/agentHost/…, src/vs/sessions/…).
//
// Usage: node vscode.mjs 'ws://127.0.0.1:PORT/ahp?tkn=TOKEN'
//   The address is the "vscode:" line changesetd serve prints, as
//   "Add Remote Agent Host…" takes it. The driving test runs a turn that
//   changes a.txt before, and restarts the daemon on the same address
//   when this script prints RESTART, answering RESTARTED on stdin.
// Exits non-zero when any check fails; the last line is a summary.

import WebSocket from 'ws';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

const address = process.argv[2];
if (!address) {
  console.error("usage: node vscode.mjs 'ws://HOST:PORT/ahp?tkn=TOKEN'");
  process.exit(2);
}
const TIMEOUT_MS = 30000;
const ROOT = 'ahp-root://';
// The Origin of VS Code desktop's renderer, whose WebSocket the Agents
// window uses (WebSocketClientTransport: a browser WebSocket, no headers).
const ORIGIN = 'vscode-file://vscode-app';
// CLIENT_SUPPORTED_PROTOCOL_VERSIONS, newest first: VS Code main offers
// 1.0.0, release/1.141 0.10.0, and every build from 1.140 on 0.9.0.
const OFFERED = ['1.0.0', '0.10.0', '0.9.0', '0.7.0', '0.6.0', '0.5.2', '0.5.1'];

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

const stdin = createInterface({ input: process.stdin });
const stdinLines = [];
let stdinWaiter = null;
stdin.on('line', (l) => {
  stdinLines.push(l);
  if (stdinWaiter) stdinWaiter();
});
async function readLine() {
  while (!stdinLines.length) await new Promise((r) => (stdinWaiter = r));
  return stdinLines.shift();
}

class RPCError extends Error {
  constructor(e) {
    super(`${e.code}: ${e.message}`);
    this.code = e.code;
    this.data = e.data;
  }
}

// A connection as AgentHostProtocolClient keeps it: requests by id,
// every notification in order, and waits on conditions over them.
class Conn {
  constructor(ws) {
    this.ws = ws;
    this.pending = new Map();
    this.notes = [];
    this.waiters = new Set();
    this.closed = null;
    this.nextId = 1;
    ws.on('message', (data, isBinary) => {
      // Non-text frames count as malformed (MALFORMED_FRAMES_FORCE_CLOSE_THRESHOLD).
      check('text frames only', !isBinary, 'a binary frame arrived');
      const msg = JSON.parse(data.toString('utf8'));
      if ('method' in msg) {
        this.notes.push(msg);
      } else if (this.pending.has(msg.id)) {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if ('result' in msg) p.resolve(msg.result);
        else p.reject(new RPCError(msg.error));
      }
      this.wake();
    });
    ws.on('close', (code) => {
      this.closed = { code };
      for (const [, p] of this.pending) p.reject(new Error(`closed (${code})`));
      this.pending.clear();
      this.wake();
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer in ${TIMEOUT_MS} ms`));
      }, TIMEOUT_MS);
      this.pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  notify(method, params) {
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  // until resolves with pred's first truthy value over the notifications.
  until(what, pred) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        reject(new Error(`waiting for ${what}: timed out`));
      }, TIMEOUT_MS);
      const w = () => {
        const v = pred(this);
        if (v) {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve(v);
        } else if (this.closed) {
          clearTimeout(timer);
          this.waiters.delete(w);
          reject(new Error(`waiting for ${what}: connection closed`));
        }
      };
      this.waiters.add(w);
      w();
    });
  }

  envelopes(channel) {
    return this.notes.filter((n) => n.method === 'action' && n.params.channel === channel).map((n) => n.params);
  }

  close() {
    this.ws.close();
    return this.until('the close', (c) => c.closed);
  }
}

// dial opens a WebSocket as WebSocketClientTransport.connect does: the
// stored address with the token appended as ?tkn= (connectionTokenQueryName),
// and the renderer's Origin.
function dial(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { origin: ORIGIN });
    ws.once('open', () => resolve(new Conn(ws)));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

// parseRemoteAgentHostInput: the token leaves the typed address as the
// entry's connectionToken; WebSocketClientTransport appends it again.
const typed = new URL(address);
const token = typed.searchParams.get('tkn');
typed.searchParams.delete('tkn');
const entryAddress = typed.host + (typed.pathname === '/' ? '' : typed.pathname);
const url = `ws://${entryAddress}?tkn=${encodeURIComponent(token)}`;
check('the address carries a token as tkn', !!token && entryAddress.endsWith('/ahp'), address);

// The subscriptions the client holds, which a reconnect names.
const subscriptions = new Set([ROOT]);
let lastSeenServerSeq = 0;
function seen(c) {
  for (const n of c.notes) if (n.method === 'action') lastSeenServerSeq = Math.max(lastSeenServerSeq, n.params.serverSeq);
}

// initialize as AgentHostProtocolClient.connect sends it.
async function initialize(c, clientId, initialSubscriptions) {
  const res = await c.request('initialize', {
    channel: ROOT,
    protocolVersions: OFFERED,
    clientId,
    clientInfo: { name: 'vscode-agents-window', title: 'Agents' },
    _meta: { 'vscode.telemetryLevel': 'off', 'vscode.clientConnectionKind': 'direct_websocket' },
    initialSubscriptions,
  });
  // _applyInitializeResult: serverSeq is required.
  check('initialize: serverSeq', Number.isInteger(res.serverSeq), JSON.stringify(res).slice(0, 200));
  check('initialize: a version VS Code offered', OFFERED.includes(res.protocolVersion), res.protocolVersion);
  // isAhpRootChannel → handleRootSnapshot: the root state arrives with
  // initialize; until it does every session shows "loading"
  // (authenticationPending, cleared in _authenticateWithConnection).
  const root = (res.snapshots || []).find((s) => s.resource === ROOT);
  check('initialize: the root snapshot', root && Array.isArray(root.state.agents), JSON.stringify(res.snapshots).slice(0, 300));
  lastSeenServerSeq = Math.max(lastSeenServerSeq, ...(res.snapshots || []).map((s) => s.fromSeq), 0);
  // supportsAgentHostSessionUris: ahp-session: URIs with the agent in
  // SessionSummary.provider; isNativeAgentHost must stay false, or VS Code
  // would address sessions as <provider>:/<id>.
  check('initialize: vscode.ahpSessionUris', res._meta?.['vscode.ahpSessionUris'] === true, JSON.stringify(res._meta));
  check('initialize: not a native VS Code host', res._meta?.['vscode.agentHost'] !== true && !root?.state?._meta?.hostBuild, JSON.stringify(res._meta));
  return res;
}

// _forwardClientConfig: root/configChanged notifications with clientSeq 0
// after every connect, and setClientManagedSettingsPermissions, which is
// not a protocol method.
async function forwardClientConfig(c) {
  for (const config of [{ 'telemetry.telemetryLevel': 'off' }, { 'chat.tools.terminal.autoApprove': {} }, { 'chat.agentHost.policyRestricted': false }]) {
    c.notify('dispatchAction', { channel: ROOT, clientSeq: 0, action: { type: 'root/configChanged', config } });
  }
  c.notify('setClientManagedSettingsPermissions', { channel: ROOT, permissions: {} });
  // The keep-alive (PING_INTERVAL_MS) doubles as a barrier: what the
  // server made of the notifications is in before its answer.
  await c.request('ping', { channel: ROOT });
  const rejected = c.envelopes(ROOT).filter((e) => e.rejectionReason);
  check('root/configChanged is not rejected', rejected.length === 0, JSON.stringify(rejected));
  check('the connection survives the client chatter', !c.closed, JSON.stringify(c.closed));
}

async function subscribe(c, channel) {
  const res = await c.request('subscribe', { channel });
  subscriptions.add(channel);
  lastSeenServerSeq = Math.max(lastSeenServerSeq, res.snapshot.fromSeq);
  return res.snapshot;
}

// applyChangeset reduces a changeset action into its state, as the
// client's reducer does for the actions this check needs.
function applyChangeset(st, a) {
  switch (a.type) {
    case 'changeset/statusChanged':
      return { ...st, status: a.status };
    case 'changeset/contentChanged':
      return { ...st, files: a.files, ...(a.operations ? { operations: a.operations } : {}) };
    case 'changeset/operationsChanged':
      return { ...st, operations: a.operations || [] };
    case 'changeset/fileSet': {
      const files = st.files.filter((f) => f.id !== a.file.id);
      return { ...st, files: [...files, a.file] };
    }
    case 'changeset/fileRemoved':
      return { ...st, files: st.files.filter((f) => f.id !== a.fileId) };
    case 'changeset/filesReviewChanged':
      return { ...st, files: st.files.map((f) => (a.files.includes(f.id) ? { ...f, reviewed: a.reviewed } : f)) };
  }
  return st;
}

// A changeset's state once it is ready, its snapshot reduced with the
// actions that followed it.
async function readyChangeset(c, uri) {
  const snap = await subscribe(c, uri);
  const reduce = () => {
    let st = snap.state;
    for (const e of c.envelopes(uri)) if (e.serverSeq > snap.fromSeq && !e.rejectionReason) st = applyChangeset(st, e.action);
    return st;
  };
  return c.until(`${uri} ready`, () => {
    const st = reduce();
    return st.status === 'ready' && st;
  });
}

function base64urlDecode(s) {
  return Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
}

// parseChatUri (sessionState.ts): ahp-chat://<chatId>/<base64url(session)>.
function parseChatUri(uri) {
  const m = /^ahp-chat:\/\/([^/]+)\/(.+)$/.exec(uri);
  if (!m) return undefined;
  return { chatId: m[1], session: base64urlDecode(m[2]) };
}

// expandTemplate fills a catalogue entry's RFC 6570 template.
function expandTemplate(t, vars) {
  return t.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(vars[k]));
}

// lastAttributableTurnId: the newest completed turn's id.
function lastAttributableTurnId(turns) {
  return turns.length ? turns[turns.length - 1].id : undefined;
}

// toAgentHostUri: how the Changes view holds a host's file.
function toAgentHostUri(uri, authority) {
  const u = new URL(uri);
  return `vscode-agent-host://${authority}/${u.protocol.slice(0, -1)}/${u.host || '-'}${u.pathname}`;
}

// agentHostAuthority: the connection's name in its wrapped URIs.
function agentHostAuthority(addr) {
  if (/^[a-zA-Z0-9]+$/.test(addr)) return addr;
  if (/^[a-zA-Z0-9.:-]+$/.test(addr)) return addr.replaceAll(':', '__');
  return 'b64-' + Buffer.from(addr).toString('base64url');
}

// format(message, basename(resource)), as _invokeOperation shows a
// confirmation.
function format(message, ...args) {
  return message.replace(/\{(\d+)\}/g, (m, i) => (args[i] !== undefined ? args[i] : m));
}

// Codicon ids (codiconsLibrary) among those an operation could use.
const CODICONS = new Set(['add', 'remove', 'check', 'check-all', 'close', 'discard', 'history', 'git-commit', 'redo', 'trash', 'debug-restart', 'sync', 'x']);

// toSessionChangesetOperation: unknown scope or status values throw
// (toSessionChangesetOperationScope / …Status); icon goes through
// ThemeIcon.fromId, so it must be a codicon id.
function checkOperations(ops) {
  for (const op of ops || []) {
    check(`operation ${op.id}: known scopes`, (op.scopes || []).every((s) => ['changeset', 'resource', 'range'].includes(s)), JSON.stringify(op.scopes));
    check(`operation ${op.id}: known status`, ['idle', 'running', 'error', 'disabled'].includes(op.status), op.status);
    check(`operation ${op.id}: a codicon id`, !op.icon || CODICONS.has(op.icon), op.icon);
  }
}

async function main() {
  // The negotiation cases first, each on a socket of its own.
  {
    // RemoteAgentHostConnectionStatus.fromConnectError: -32005 on an
    // initialize makes the host "incompatible" (no retry loop) only while
    // the transport stays open ("The transport stays open after the
    // rejection", triggerVscodeUpgrade).
    const c = await dial(url);
    try {
      await c.request('initialize', { channel: ROOT, protocolVersions: ['0.1.0'], clientId: randomUUID(), initialSubscriptions: [ROOT] });
      check('an unknown version is refused', false, 'initialize succeeded');
    } catch (e) {
      check('an unknown version is -32005', e.code === -32005, e.message);
      check('-32005 carries supportedVersions', Array.isArray(e.data?.supportedVersions), JSON.stringify(e.data));
    }
    await c.request('ping', { channel: ROOT });
    check('the socket stays open after -32005', !c.closed, JSON.stringify(c.closed));
    await c.close();
  }
  {
    // _reconnectOrInitialize: -32008 (AhpErrorCodes.NotFound) on a
    // reconnect means "Server forgot client".
    const c = await dial(url);
    try {
      await c.request('reconnect', { channel: ROOT, clientId: randomUUID(), lastSeenServerSeq: 1, subscriptions: [ROOT] });
      check('a reconnect from a stranger is refused', false, 'reconnect succeeded');
    } catch (e) {
      check('a reconnect from a stranger is -32008', e.code === -32008, e.message);
    }
    await c.close();
  }
  {
    // VS Code 1.140 offers 0.9.0 and older versions only.
    const c = await dial(url);
    const res = await c.request('initialize', { channel: ROOT, protocolVersions: ['0.9.0', '0.7.0', '0.6.0', '0.5.2', '0.5.1'], clientId: randomUUID(), initialSubscriptions: [ROOT] });
    check("VS Code 1.140's offer gets 0.9.0", res.protocolVersion === '0.9.0', res.protocolVersion);
    await c.close();
  }

  const clientId = randomUUID();
  let c = await dial(url);
  const init = await initialize(c, clientId, [ROOT]);
  const root = init.snapshots.find((s) => s.resource === ROOT).state;
  // _registerAgent: remote-<authority>-<provider>, parsed back by splitting
  // on '-'; the provider must not contain one.
  const agent = root.agents[0];
  check('the agent provider is dash-free', agent && /^[^-]+$/.test(agent.provider), JSON.stringify(agent));
  check('the agent says it is read-only', agent && /read-only/.test(agent.displayName), agent && agent.displayName);
  await forwardClientConfig(c);

  // listSessions without limit or cursor; rows map to IAgentSessionMetadata.
  const list = await c.request('listSessions', { channel: ROOT });
  const sum = list.items[0];
  check('listSessions: one session', list.items.length === 1, JSON.stringify(list).slice(0, 300));
  // AgentSession.provider(uri) is the scheme; it throws without one.
  check('the session URI has a scheme', /^[a-z][a-z0-9+.-]*:/.test(sum.resource), sum.resource);
  check('createdAt and modifiedAt parse (Date.parse)', !isNaN(Date.parse(sum.createdAt)) && !isNaN(Date.parse(sum.modifiedAt)), `${sum.createdAt} ${sum.modifiedAt}`);
  // The session list groups by project.
  check('the summary has a project', sum.project && sum.project.uri && sum.project.displayName, JSON.stringify(sum.project));

  // The session: its state, and through its default chat the catalogue
  // (createChatChangesets reads state.defaultChat ?? state.chats[0]).
  const session = (await subscribe(c, sum.resource)).state;
  const chatUri = session.defaultChat ?? session.chats[0].resource;
  // parseRequiredSessionUriFromChatUri throws "Malformed AHP chat URI" on
  // any other shape.
  const parsed = parseChatUri(chatUri);
  check('the default chat parses as VS Code parses it', parsed && parsed.session === sum.resource && parsed.chatId === 'default', chatUri);
  for (const ch of session.chats) {
    check(`chat ${ch.resource} parses`, parseChatUri(ch.resource)?.session === sum.resource, ch.resource);
    // ChatInteractivity.ReadOnly: watched, no composer.
    check(`chat ${ch.resource} is read-only`, ch.interactivity === 'read-only', ch.interactivity);
  }
  // ISessionGitState under _meta.git (SESSION_META_GIT_KEY); the Branch
  // Changes description is `${branchName} → ${baseBranchName}`.
  const git = session._meta?.git;
  check('_meta.git names the branch and its base', git && git.branchName === 'main' && typeof git.baseBranchName === 'string', JSON.stringify(session._meta));
  const chat = (await subscribe(c, chatUri)).state;
  check('the chat has the turn', chat.turns.length >= 1, JSON.stringify(chat.turns).slice(0, 200));

  // createChangesets: branch, uncommitted, session and turn entries,
  // each an AgentHostChangeset; review is on iff capabilities.review.
  const byKind = Object.fromEntries(session.changesets.map((e) => [e.changeKind, e]));
  for (const kind of ['branch', 'uncommitted', 'session', 'turn']) {
    check(`catalogue: ${kind}`, byKind[kind] && byKind[kind].capabilities?.review !== undefined, JSON.stringify(byKind[kind]));
  }
  // "Last Turn Changes": {turnId} from activeTurn or lastAttributableTurnId.
  const turnId = chat.activeTurn?.id ?? lastAttributableTurnId(chat.turns);
  const turnCs = await readyChangeset(c, expandTemplate(byKind.turn.uriTemplate, { turnId }));
  check('Last Turn Changes has the turn\'s file', turnCs.files.some((f) => f.id.endsWith('/a.txt')), JSON.stringify(turnCs.files.map((f) => f.id)));
  // selectDefaultChangeset: branch first.
  await readyChangeset(c, expandTemplate(byKind.branch.uriTemplate, {}));

  const csUri = expandTemplate(byKind.uncommitted.uriTemplate, {});
  const cs = await readyChangeset(c, csUri);
  const file = cs.files.find((f) => f.id.endsWith('/a.txt'));
  // diffToChange: original = edit.before.content.uri, modified =
  // edit.after.uri, counts from edit.diff.
  check('a.txt: both sides and its counts', file && file.edit.before?.content?.uri && file.edit.after?.uri && Number.isInteger(file.edit.diff?.added) && Number.isInteger(file.edit.diff?.removed), JSON.stringify(file));
  checkOperations(cs.operations);

  // AHPFileSystemProvider.stat → resourceResolve, then readFile →
  // resourceRead, for each side of the diff.
  for (const [side, uri] of [['original', file.edit.before.content.uri], ['modified', file.edit.after.uri]]) {
    const st = await c.request('resourceResolve', { channel: ROOT, uri });
    check(`${side}: resolved as a file`, st.type === 'file' && Number.isInteger(st.size), JSON.stringify(st));
    // mtime: resolved.mtime ? Date.parse(resolved.mtime) : 0
    check(`${side}: mtime parses`, st.mtime === undefined || !isNaN(Date.parse(st.mtime)), st.mtime);
    const rd = await c.request('resourceRead', { channel: ROOT, uri });
    const bytes = rd.encoding === 'base64' ? Buffer.from(rd.data, 'base64') : Buffer.from(rd.data, 'utf8');
    check(`${side}: read ${st.size} bytes`, bytes.length === st.size, `${bytes.length} bytes read`);
  }

  // Mark as Viewed: setReviewState dispatches changeset/filesReviewChanged
  // with file ids on the changeset channel.
  c.notify('dispatchAction', { channel: csUri, clientSeq: 1, action: { type: 'changeset/filesReviewChanged', files: [file.id], reviewed: true } });
  const echo = await c.until('the review echo', (cc) => cc.envelopes(csUri).find((e) => e.origin?.clientId === clientId && e.origin.clientSeq === 1));
  check('Mark as Viewed is accepted', !echo.rejectionReason, echo.rejectionReason);

  // A file-scope operation with its confirmation (_invokeOperation): the
  // warning shows format(confirmation, basename(resource)) with the
  // operation's label as its button, then invokeChangesetOperation with
  // target {kind: 'resource', resource}.
  const revert = (cs.operations || []).find((o) => o.id === 'revert');
  check('Revert is offered on a file', revert && revert.scopes.includes('resource'), JSON.stringify(revert));
  const message = typeof revert.confirmation === 'string' ? revert.confirmation : revert.confirmation?.markdown;
  check('Revert asks for confirmation', typeof message === 'string' && format(message, 'a.txt').length > 0 && !!revert.label, JSON.stringify(revert.confirmation));
  const authority = agentHostAuthority(entryAddress);
  await c.request('invokeChangesetOperation', { channel: csUri, operationId: 'revert', target: { kind: 'resource', resource: toAgentHostUri(file.id, authority) } });
  await c.until('a.txt gone from the changeset', (cc) => cc.envelopes(csUri).some((e) => e.action.type === 'changeset/fileRemoved' && e.action.fileId === file.id));
  // The revert can be undone: the operations it brings are buttons too.
  const undoOps = await c.until('Undo Revert offered', (cc) => {
    const e = cc.envelopes(csUri).reverse().find((x) => x.action.operations?.some((o) => o.id === 'undo'));
    return e && e.action.operations;
  });
  checkOperations(undoOps);

  // Agent feedback: the annotations channel buildAnnotationsUri names,
  // with _meta["vscode.agentFeedback"] (readFeedbackAnnotationMeta).
  const notesUri = `${sum.resource}/annotations`;
  await subscribe(c, notesUri);
  c.notify('dispatchAction', {
    channel: notesUri,
    clientSeq: 2,
    action: {
      type: 'annotations/set',
      annotation: {
        id: randomUUID(), turnId: '', resource: toAgentHostUri(file.id, authority), resolved: false,
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
        entries: [{ id: randomUUID(), text: 'Why revert this?' }],
        _meta: { 'vscode.agentFeedback': { kind: 'user', state: 'accepted', sessionResource: sum.resource } },
      },
    },
  });
  const noteEcho = await c.until('the annotation echo', (cc) => cc.envelopes(notesUri).find((e) => e.origin?.clientSeq === 2));
  check('the comment is accepted', !noteEcho.rejectionReason, noteEcho.rejectionReason);
  const note = noteEcho.action.annotation;
  const fb = note?._meta?.['vscode.agentFeedback'];
  check('the comment keeps its feedback', fb && fb.kind === 'user' && ['accepted', 'submitted'].includes(fb.state) && fb.sessionResource === sum.resource, JSON.stringify(note?._meta));
  check('the comment is on the file as the server names it', note?.resource === file.id, note?.resource);
  // readFeedbackAnnotationEntryAuthor
  check('the entry names its author', note?.entries[0]._meta?.['vscode.agentFeedback']?.author === 'user', JSON.stringify(note?.entries[0]._meta));

  // A dropped transport: reconnect with the cursor gets a replay.
  seen(c);
  await c.close();
  c = await dial(url);
  const back = await c.request('reconnect', { channel: ROOT, clientId, lastSeenServerSeq, subscriptions: [...subscriptions] });
  // Either result is applied: a replay (with missing) or snapshots.
  check('reconnect after a drop resumes', (back.type === 'replay' && Array.isArray(back.missing)) || (back.type === 'snapshot' && back.snapshots.length > 0), JSON.stringify(back).slice(0, 200));
  await forwardClientConfig(c);

  // The daemon restarts on the same address.
  seen(c);
  console.log('RESTART');
  await c.until('the daemon going away', (cc) => cc.closed);
  check('the driver restarted the daemon', (await readLine()) === 'RESTARTED', 'no RESTARTED line');
  c = await dial(url);
  // _reconnectOrInitialize: reconnect first; -32008 means the server
  // forgot the client, so initialize again with the subscriptions as
  // initialSubscriptions.
  let reinit;
  try {
    await c.request('reconnect', { channel: ROOT, clientId, lastSeenServerSeq, subscriptions: [...subscriptions] });
    check('the restarted daemon forgot the client', false, 'reconnect succeeded');
  } catch (e) {
    check('the restarted daemon answers -32008', e.code === -32008, e.message);
    reinit = await initialize(c, clientId, [...subscriptions]);
  }
  if (reinit) {
    const got = new Set(reinit.snapshots.map((s) => s.resource));
    const missing = [...subscriptions].filter((s) => !got.has(s));
    check('every subscription is back', missing.length === 0, `missing ${missing.join(', ')}`);
    const st = reinit.snapshots.find((s) => s.resource === sum.resource)?.state;
    check('the session is back with its default chat', st && parseChatUri(st.defaultChat)?.session === sum.resource, JSON.stringify(st?.defaultChat));
  }
  await forwardClientConfig(c);
  await c.close();
}

try {
  await main();
} catch (e) {
  check('the replay ran to its end', false, e.stack || String(e));
}
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
