// The review page: sessions, their changeset catalogue and turns, and one
// changeset's files and diffs, all mirrored live from the daemon over AHP.

import { Client, ROOT } from './ahp.js';
import { expand, variables } from './uritemplate.js';
import { emptyTable, flatRows, pairWords, parsePatch, renderRows, renderUnified, renderSplit, selectedRange } from './diff.js';
import { colour, languageOf, load } from './highlight.js';
import { lastLine, linesLabel, newId, oldRange, placeThreads, plainText, renderComposer, renderThread, touchesAdded, wholeLines } from './comments.js';
import { renderNotes, workspaceNotes } from './warnings.js';
import { draftBadge, showDraft } from './drafts.js';
import { createTurnPager } from './turnpages.js';
import { createPatches } from './patches.js';
import { doneText, revertFileText, revertHunksText, rewindText } from './confirm.js';

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

// ---- token and identity ----------------------------------------------

// takeToken moves a token given in the URL (#token=… or ?token=…) to
// sessionStorage and removes it from the address bar.
function takeToken() {
  const frag = new URLSearchParams(location.hash.slice(1));
  const query = new URLSearchParams(location.search);
  const t = frag.get('token') || query.get('token');
  // The session the printed URL names (the one serve was given) is the
  // one the page opens on, not the newest, which may be one an agent's
  // hook made since.
  const open = frag.get('session');
  if (open && remembered().session !== open) sessionStorage.setItem('changesetd.selection', JSON.stringify({ session: open }));
  if (t) {
    sessionStorage.setItem('changesetd.token', t);
    history.replaceState(null, '', location.pathname);
  }
  return t || sessionStorage.getItem('changesetd.token');
}

function clientId() {
  let id = sessionStorage.getItem('changesetd.clientId');
  if (!id) {
    const b = new Uint8Array(8);
    crypto.getRandomValues(b);
    id = 'review-page-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    sessionStorage.setItem('changesetd.clientId', id);
  }
  return id;
}

// ---- page state -------------------------------------------------------

const ui = {
  client: null,
  sessions: new Map(), // uri -> SessionSummary
  session: null, // selected session uri
  chats: new Map(), // the session's chat uris -> agent key ('' for the default chat)
  cs: null, // {uri, label, kind, review}
  file: null, // selected file id
  view: localStorage.getItem('changesetd.view') === 'split' ? 'split' : 'unified',
  held: new Map(), // channel -> holders, for shared subscriptions
  turnCs: new Map(), // turn id -> changeset uri (for counts)
  picks: [], // turn ids ticked for comparison
  diffKey: '',
  diffFile: null, // "changeset\nfile" whose diff the pane shows
  bigOk: new Set(), // diffs too long to open by themselves that the reader opened
  unfolded: new Set(), // reviewed files whose diff the reader opened again
  filter: '', // the path filter's text
  author: '', // the author filter: an author of package attrib's, '' for everyone
  folded: new Set(), // folders of the file tree the reader folded
  hunkAt: -1, // the hunk n/p went to last
  diffHunks: [], // the parsed hunks of the diff shown
  expand: new Map(), // "changeset\nfile" -> the context shown around its hunks: {patch: its patchUri, above, below, lines}
  virtualDiff: null, // the virtual diff shown: {from, to, draw}
  lastSelection: null,
  ann: null, // the session's annotations channel, when the daemon has one
  sessionCs: null, // the session changeset, held to map working-tree lines to the baseline's
  composer: null, // the open comment box: {key: 'new' or an annotation id, resource, range, turnId, text, error}
  threadOpen: new Map(), // "id:resolved" -> open, where the reader folded or unfolded a thread
  sent: new Map(), // clientSeq -> the comment box a dispatch came from, to reopen it if refused
  swallowKey: null, // a key that opened a comment box, not to be typed into it
};

// The files' patches, read as they are shown (patches.js).
const patches = createPatches((uri) => ui.client.request('resourceRead', { channel: ROOT, uri }));

const remembered = () => JSON.parse(sessionStorage.getItem('changesetd.selection') || '{}');
function remember() {
  sessionStorage.setItem('changesetd.selection', JSON.stringify({ session: ui.session, cs: ui.cs, file: ui.file }));
}

// hold subscribes to channel once however many parts of the page use it.
async function hold(channel) {
  const n = ui.held.get(channel) || 0;
  ui.held.set(channel, n + 1);
  if (n === 0 || !ui.client.state(channel)) return ui.client.subscribe(channel);
  return ui.client.state(channel);
}

function release(channel) {
  const n = ui.held.get(channel) || 0;
  if (n <= 1) {
    ui.held.delete(channel);
    ui.client.unsubscribe(channel);
  } else {
    ui.held.set(channel, n - 1);
  }
}

// ---- notifications ----------------------------------------------------

function toast(text, kind = 'info') {
  const t = el('div', 'toast ' + kind, text);
  $('toasts').append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 9000 : 4000);
}

function errText(e) {
  return e && e.code !== undefined ? `${e.message} (${e.code})` : String(e && e.message ? e.message : e);
}

function plain(sm) {
  if (sm === undefined || sm === null) return '';
  if (typeof sm === 'string') return sm;
  if (typeof sm === 'object' && typeof sm.markdown === 'string') return plainText(sm);
  return String(sm);
}

// confirmDialog shows text in an in-page dialog and resolves to true on
// Confirm.
function confirmDialog(text, label) {
  const d = $('confirm');
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = label || 'Confirm';
  return new Promise((resolve) => {
    const done = (ok) => {
      $('confirm-ok').onclick = null;
      $('confirm-cancel').onclick = null;
      d.onclose = null;
      if (d.open) d.close();
      resolve(ok);
    };
    $('confirm-ok').onclick = () => done(true);
    $('confirm-cancel').onclick = () => done(false);
    // The close event of a dialog closed just before comes a task later,
    // maybe after this one opened: only a close that left it closed is
    // a cancel.
    d.onclose = () => { if (!d.open) done(false); };
    d.showModal();
    $('confirm-ok').focus();
  });
}

// ---- sessions ----------------------------------------------------------

async function loadSessions() {
  const items = [];
  let cursor;
  do {
    const res = await ui.client.listSessions(cursor);
    items.push(...(res.items || []));
    cursor = res.nextCursor;
  } while (cursor);
  ui.sessions = new Map(items.map((s) => [s.resource, s]));
  renderSessions();
  if (ui.session && ui.sessions.has(ui.session)) return;
  const want = remembered().session;
  const first = ui.sessions.has(want) ? want : items[0]?.resource;
  if (first) selectSession(first, remembered());
  else ui.client.dropEarly();
}

function counts(c) {
  if (!c) return '';
  return `+${c.additions ?? 0} −${c.deletions ?? 0}`;
}

function dirName(uri) {
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri;
  }
}

function renderSessions() {
  const ul = $('sessions');
  ul.replaceChildren();
  if (ui.sessions.size === 0) ul.append(el('li', 'muted', 'No sessions. Start the daemon with a directory: changesetd serve DIR'));
  for (const s of ui.sessions.values()) {
    const li = el('li', 'item' + (s.resource === ui.session ? ' selected' : ''));
    li.dataset.session = s.resource;
    li.tabIndex = 0;
    li.append(el('span', 'name', s.title || s.resource));
    if (s.changes) li.append(el('span', 'counts', counts(s.changes) + (s.changes.files !== undefined ? ` · ${s.changes.files} files` : '')));
    const n = s.annotations?.annotationCount || 0;
    if (n > 0) {
      const m = s.annotations.entryCount || 0;
      const b = el('span', 'cbadge', `${n} thread${n === 1 ? '' : 's'} · ${m} comment${m === 1 ? '' : 's'}`);
      b.title = 'Review comments in this session';
      li.append(b);
    }
    if (s.workingDirectories?.length) li.append(el('span', 'dir muted', s.workingDirectories.map(dirName).join(', ')));
    const rm = el('button', 'rm-session', 'Remove');
    rm.type = 'button';
    rm.title = `Remove session ${s.title || s.resource}`;
    rm.setAttribute('aria-label', rm.title);
    rm.disabled = !online();
    rm.onclick = (e) => { e.stopPropagation(); removeSession(s); };
    li.append(rm);
    li.onclick = () => selectSession(s.resource);
    li.onkeydown = (e) => { if (e.key === 'Enter' && e.target === li) selectSession(s.resource); };
    ul.append(li);
  }
}

// removeSession disposes of a session after the user confirms; the
// daemon keeps its turns, comments and review flags for a while, and the
// root channel's sessionRemoved takes it off the list.
async function removeSession(s) {
  const name = s.title || s.resource;
  const dirs = (s.workingDirectories || []).map(dirName).join(', ');
  const text = `Remove the session ${name}${dirs ? ` (${dirs})` : ''}? Its changesets stop being served. ` +
    'Its turns, comments and review flags are kept for 7 days: serving the same directory again within that time brings them back.';
  if (!(await confirmDialog(text, 'Remove'))) return;
  try {
    await ui.client.request('disposeSession', { channel: s.resource });
    toast(`Removed the session ${name}`);
  } catch (e) {
    toast(`Could not remove the session ${name}: ${errText(e)}`, 'error');
  }
}

function onRootNotification({ method, params }) {
  if (method === 'root/sessionAdded') {
    ui.sessions.set(params.summary.resource, params.summary);
    renderSessions();
    if (!ui.session) selectSession(params.summary.resource);
  } else if (method === 'root/sessionRemoved') {
    ui.sessions.delete(params.session);
    if (params.session === ui.session) clearSession();
    renderSessions();
  } else if (method === 'root/sessionSummaryChanged') {
    const s = ui.sessions.get(params.session);
    if (s) {
      Object.assign(s, params.changes || {});
      renderSessions();
    }
  }
}

function clearSession() {
  closeChangeset();
  if (ui.ann) release(ui.ann);
  ui.ann = null;
  if (ui.sessionCs) release(ui.sessionCs);
  ui.sessionCs = null;
  for (const uri of ui.turnCs.values()) release(uri);
  ui.turnCs.clear();
  ui.picks = [];
  turnPager.reset();
  if (ui.session) release(ui.session);
  for (const uri of ui.chats.keys()) release(uri);
  ui.chats.clear();
  ui.session = null;
  renderCatalog();
  renderTurns();
}

async function selectSession(uri, want = {}) {
  if (ui.session === uri) return;
  clearSession();
  ui.session = uri;
  renderSessions();
  remember();
  try {
    await hold(uri);
  } catch (e) {
    toast(`Cannot open the session: ${errText(e)}`, 'error');
    ui.client.dropEarly();
    return;
  }
  renderCatalog();
  syncChats();
  // A daemon without the annotations channel names none: the page then
  // offers no comments.
  const ann = ui.client.state(uri)?.annotations?.resource || ui.sessions.get(uri)?.annotations?.resource;
  if (ann) {
    ui.ann = ann;
    hold(ann).then(onAnnotations, (e) => {
      if (ui.ann === ann) toast(`Cannot load the review comments: ${errText(e)}`, 'error');
    });
  }
  if (want.session === uri && want.cs) {
    openChangeset(want.cs, want.file);
  } else {
    const cat = ui.client.state(uri)?.changesets || [];
    const first = cat.find((c) => c.changeKind === 'uncommitted') || cat.find((c) => variables(c.uriTemplate).length === 0);
    if (first) openChangeset(entryFor(first, {}));
  }
  // What was subscribed to before the page loaded and is not shown now.
  ui.client.dropEarly();
}

// ---- chats ---------------------------------------------------------------

// Turns live on chats: the session's default chat
// (ahp-chat://default/<base64url(session URI)>) for turns marked without
// an agent, and one chat per agent that names itself (--agent, or a hook's
// session_id: ahp-chat://<agent>/<base64url(session URI)>).
// The page holds every chat the session lists, and the default one even
// before the session lists it.

function defaultChat(session) {
  const b64 = btoa(session).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return 'ahp-chat://default/' + b64;
}

// chatKey is the agent a chat belongs to, '' for the default chat.
function chatKey(uri) {
  if (uri.startsWith('ahp-chat://')) {
    const id = uri.slice('ahp-chat://'.length).split('/')[0];
    return id === 'default' ? '' : id;
  }
  // The earlier shape: ahp-chat:/<session id>[/<agent>].
  const rest = uri.slice(uri.indexOf(':/') + 2);
  const i = rest.indexOf('/');
  if (i < 0) return '';
  try {
    return decodeURIComponent(rest.slice(i + 1));
  } catch {
    return rest.slice(i + 1);
  }
}

// syncChats holds the chats the session lists now and lets go of those it
// no longer does.
function syncChats() {
  if (!ui.session) return;
  const s = ui.client.state(ui.session);
  const want = new Set([defaultChat(ui.session), ...(s?.chats || []).map((c) => c.resource)]);
  for (const uri of want) {
    if (ui.chats.has(uri)) continue;
    ui.chats.set(uri, chatKey(uri));
    hold(uri).then(onChats, onChats);
  }
  for (const uri of [...ui.chats.keys()]) {
    if (want.has(uri)) continue;
    ui.chats.delete(uri);
    release(uri);
  }
}

function onChats() {
  renderTurns();
  renderChangeset();
}

// allTurns is every turn of every chat, oldest first, each with its chat
// and agent; a running turn has state 'running'.
function allTurns() {
  const out = [];
  for (const [uri, agent] of ui.chats) {
    const st = ui.client.state(uri);
    for (const t of st?.turns || []) out.push({ ...t, chat: uri, agent });
    if (st?.activeTurn) out.push({ ...st.activeTurn, state: 'running', chat: uri, agent });
  }
  // ISO-8601 times in one format sort as strings; the sort is stable, so
  // turns without a time keep their chat's order.
  return out.sort((a, b) => (a.startedAt || '').localeCompare(b.startedAt || ''));
}

function runningTurns() {
  return allTurns().filter((t) => t.state === 'running');
}

// agentLabel names an agent for a person: an agent's session id (a
// UUID, as hooks give it) by its first eight digits, like a short commit
// id (the turn's title has the whole id).
function agentLabel(agent) {
  if (!agent) return 'no agent';
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(agent) ? `agent ${agent.slice(0, 8)}` : `agent ${agent}`;
}

function fmtTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString();
}

// endCommand is what ends a turn from a shell.
function endCommand(t) {
  return 'changesetd turn end' + (t.agent ? ` --agent ${t.agent}` : '');
}

// disabledReason says why the daemon disabled the operations, and how to
// enable them again.
function disabledReason() {
  const run = runningTurns();
  if (run.length === 0) return 'Disabled by the daemon.';
  const t = run[run.length - 1];
  const since = fmtTime(t.startedAt);
  return `Disabled while turn “${t.message?.text || t.id}” (${agentLabel(t.agent)}${since ? `, started ${since}` : ''}) runs. ` +
    `It ends when the agent stops, or with: ${endCommand(t)}`;
}

// ---- catalogue and turns ---------------------------------------------

function entryFor(c, values) {
  return { uri: expand(c.uriTemplate, values), label: c.label, kind: c.changeKind, review: !!c.capabilities?.review };
}

function catalogEntry(kind) {
  const s = ui.session && ui.client.state(ui.session);
  return (s?.changesets || []).find((c) => c.changeKind === kind);
}

function renderCatalog() {
  const ul = $('catalog');
  ul.replaceChildren();
  const s = ui.session && ui.client.state(ui.session);
  for (const c of s?.changesets || []) {
    if (variables(c.uriTemplate).length > 0) continue; // turns and comparisons come from the timeline
    const e = entryFor(c, {});
    const li = el('li', 'item' + (ui.cs?.uri === e.uri ? ' selected' : ''));
    li.dataset.kind = c.changeKind;
    li.tabIndex = 0;
    li.append(el('span', 'name', c.label));
    if (c.description) li.title = c.description;
    li.onclick = () => openChangeset(e);
    li.onkeydown = (ev) => { if (ev.key === 'Enter') openChangeset(e); };
    ul.append(li);
  }
}

function fmtDuration(ms) {
  if (ms === undefined || ms === null) return '';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function totalsOf(state) {
  let added = 0;
  let removed = 0;
  for (const f of state?.files || []) {
    added += f.edit?.diff?.added || 0;
    removed += f.edit?.diff?.removed || 0;
  }
  return { added, removed, files: state?.files?.length || 0 };
}

// The turn list shows this many turns, and a page more each time older
// ones are asked for (turnpages.js): each shown turn holds a subscription
// for its counts.
const MAX_TURNS = 50;
const turnPager = createTurnPager({ page: MAX_TURNS, chats: () => ui.chats.keys(), state: (uri) => ui.client.state(uri),
  request: (method, params) => ui.client.request(method, params), rerender: () => renderTurns() });

function renderTurns() {
  const ol = $('turns');
  ol.replaceChildren();
  const turns = allTurns();
  $('no-turns').hidden = turns.length > 0;
  const tmpl = catalogEntry('turn');
  const shown = turns.slice(-turnPager.limit);
  const keep = new Set();
  for (const t of shown.slice().reverse()) {
    const li = el('li', 'item turn' + (ui.cs?.turn === t.id ? ' selected' : '') + (t.state === 'running' ? ' running' : ''));
    li.dataset.turn = t.id;
    li.dataset.agent = t.agent;
    const pick = el('input');
    pick.type = 'checkbox';
    pick.title = 'Tick two turns to compare them';
    pick.checked = ui.picks.includes(t.id);
    pick.onclick = (e) => {
      e.stopPropagation();
      ui.picks = pick.checked ? [...ui.picks, t.id].slice(-2) : ui.picks.filter((x) => x !== t.id);
      renderTurns();
    };
    li.append(pick);
    const body = el('span', 'turnbody');
    body.append(el('span', 'name', t.message?.text || '(no message)'));
    const meta = el('span', 'muted');
    if (t.agent) meta.title = `agent ${t.agent}`;
    const parts = [agentLabel(t.agent), t.state === 'running' ? `running since ${fmtTime(t.startedAt)}` : fmtDuration(t.duration)];
    if (tmpl) {
      const uri = expand(tmpl.uriTemplate, { turnId: t.id });
      keep.add(t.id);
      if (!ui.turnCs.has(t.id)) {
        ui.turnCs.set(t.id, uri);
        hold(uri).catch(() => {});
      }
      const st = ui.client.state(uri);
      if (st && (st.status === 'ready' || st.status === 'recomputing')) {
        const tot = totalsOf(st);
        parts.push(`+${tot.added} −${tot.removed}`);
      } else if (st) {
        parts.push(st.status);
      }
      li.onclick = () => openChangeset({ ...entryFor(tmpl, { turnId: t.id }), label: `Turn: ${t.message?.text || t.id}`, turn: t.id });
    }
    meta.textContent = parts.filter(Boolean).join(' · ');
    body.append(meta);
    li.append(body);
    ol.append(li);
  }
  for (const [id, uri] of ui.turnCs) {
    if (!keep.has(id)) {
      ui.turnCs.delete(id);
      release(uri);
    }
  }
  ui.picks = ui.picks.filter((id) => turns.some((t) => t.id === id));
  $('compare').disabled = ui.picks.length !== 2 || !catalogEntry('compare-turns');
  turnPager.render(turns.length);
}

function compareTurns() {
  const turns = allTurns();
  const order = turns.map((t) => t.id);
  const [a, b] = ui.picks.slice().sort((x, y) => order.indexOf(x) - order.indexOf(y));
  const c = catalogEntry('compare-turns');
  if (!c) return;
  const msg = (id) => turns.find((t) => t.id === id)?.message?.text || id;
  openChangeset({ ...entryFor(c, { originalTurnId: a, modifiedTurnId: b }), label: `Compare turns: “${msg(a)}” → “${msg(b)}”`, after: b, before: a });
}

// ---- the changeset ----------------------------------------------------

function closeChangeset() {
  if (ui.cs) release(ui.cs.uri);
  ui.cs = null;
  ui.file = null;
  ui.fileAt = 0;
  ui.diffKey = '';
  ui.composer = null;
  renderChangeset();
}

async function openChangeset(entry, file) {
  if (ui.cs?.uri === entry.uri) return;
  closeChangeset();
  ui.cs = entry;
  ui.file = file || null;
  remember();
  renderCatalog();
  renderTurns();
  renderChangeset();
  try {
    performance.mark('changesetd:subscribe-changeset');
    await hold(entry.uri);
    performance.mark('changesetd:changeset');
  } catch (e) {
    if (ui.cs === entry) {
      $('cs-error').hidden = false;
      $('cs-error').textContent = `Cannot open ${entry.label}: ${errText(e)}`;
    }
    return;
  }
  // The snapshot is rendered now, not in the next animation frame: the
  // first rows are painted a frame sooner.
  if (ui.cs !== entry) return;
  dirty.delete(entry.uri);
  renderChangeset();
  performance.mark('changesetd:rendered');
}

function workingDirs() {
  return ui.sessions.get(ui.session)?.workingDirectories || ui.client.state(ui.session)?.workingDirectories || NO_DIRS;
}
const NO_DIRS = [];

function relPath(uri) {
  const dirs = workingDirs();
  for (const d of dirs) {
    const base = d.endsWith('/') ? d : d + '/';
    if (uri.startsWith(base)) return decodeURIComponent(uri.slice(base.length));
  }
  return dirName(uri);
}

function operationOf(f) {
  const op = f._meta?.changesetd?.operation;
  if (op) return op;
  const b = f.edit?.before;
  const a = f.edit?.after;
  if (a && !b) return 'add';
  if (b && !a) return 'delete';
  if (a && b && a.uri !== b.uri) return 'move';
  return 'modify';
}

const OP_LABEL = { add: 'added', delete: 'deleted', move: 'renamed', modify: 'modified' };

// indexState is where an uncommitted file's change stands in git's index:
// 'staged', 'unstaged', 'partial' (some of each), or null where the
// daemon does not say (other changesets).
function indexState(f) {
  return f?._meta?.changesetd?.index || null;
}

const INDEX_LABEL = { staged: 'staged', partial: 'partly staged' };
const INDEX_TITLE = {
  staged: 'Staged: the whole change is in the index',
  partial: 'Partly staged: some of the change is in the index, some only in the working tree',
};

function pathOf(f) {
  const a = f.edit?.after?.uri;
  const b = f.edit?.before?.uri;
  if (a && b && a !== b) return `${relPath(b)} → ${relPath(a)}`;
  return relPath(a || b || f.id);
}

function csState() {
  return ui.cs && ui.client.state(ui.cs.uri);
}

function renderChangeset() {
  const s = csState();
  $('cs-label').textContent = ui.cs ? ui.cs.label : 'Pick a changeset';
  const status = s && !online() ? 'offline' : s?.status || (ui.cs ? 'subscribing' : '');
  $('cs-status').textContent = status === 'offline' ? 'offline: the daemon is not connected' : status;
  $('cs-status').dataset.status = status;
  $('cs-progress').hidden = !(status === 'computing' || status === 'recomputing' || status === 'subscribing');
  const err = $('cs-error');
  if (s?.status === 'error') {
    err.hidden = false;
    err.textContent = `Could not compute this changeset: ${s.error?.message || 'unknown error'}`;
  } else if (s) {
    err.hidden = true;
  }
  renderNotes($('cs-warnings'), workspaceNotes(ui.session ? ui.client?.state(ui.session) : null));
  const tot = totalsOf(s);
  const reviewed = (s?.files || []).filter((f) => f.reviewed).length;
  const totals = $('totals');
  totals.replaceChildren();
  if (s) {
    totals.append(el('span', 'nfiles', `${tot.files} file${tot.files === 1 ? '' : 's'}`),
      el('span', 'added', `+${tot.added}`), el('span', 'removed', `−${tot.removed}`));
    const staged = (s.files || []).filter((f) => INDEX_LABEL[indexState(f)]).length;
    if (staged) totals.append(el('span', 'nstaged', `${staged} staged`));
    if (ui.cs.review) totals.append(el('span', 'reviewed', `${reviewed}/${tot.files} reviewed`));
  }
  renderOps(s);
  renderFiles(s);
  renderDiff(s);
}

function online() {
  return ui.client?.status === 'connected';
}

const OFFLINE = 'Not connected to the daemon: this is the last state it sent.';

function opButton(op, target, label) {
  const b = el('button', 'op' + (op.confirmation ? ' danger' : ''), label || op.label);
  b.type = 'button';
  b.dataset.op = op.id;
  b.title = op.description || '';
  b.disabled = op.status === 'disabled' || op.status === 'running';
  if (op.status === 'disabled') b.title = `${op.label}: ${disabledReason()}`;
  else if (op.status === 'running') b.title = `${op.label} is running`;
  if (!online()) {
    b.disabled = true;
    b.title = `${op.label}: ${OFFLINE}`;
  }
  b.onclick = () => (op.id === 'commit' ? openCommit(op) : invoke(op, target));
  return b;
}

// renderRunning shows the turns running now, and why the operations are
// disabled while they do.
function renderRunning(s) {
  const box = $('running');
  box.replaceChildren();
  const run = runningTurns();
  for (const t of run) {
    const p = el('p', 'run');
    p.dataset.turn = t.id;
    p.append(el('strong', null, 'Turn running: '), `“${t.message?.text || t.id}” · ${agentLabel(t.agent)} · started ${fmtTime(t.startedAt)}. End it with `, el('code', null, endCommand(t)), '.');
    box.append(p);
  }
  const off = (s?.operations || []).filter((op) => op.status === 'disabled');
  if (off.length) box.append(el('p', 'opnote', `${off.map((op) => op.label).join(', ')}: ${disabledReason()}`));
  box.hidden = box.childElementCount === 0;
}

function renderOps(s) {
  renderRunning(s);
  const box = $('cs-ops');
  box.replaceChildren();
  for (const op of s?.operations || []) {
    if (AUTHOR_OPS[op.id]) continue; // beside the author filter
    if (op.scopes.includes('changeset')) box.append(opButton(op));
    if (op.status === 'running') box.append(el('span', 'opstatus running', `${op.label}: running…`));
    if (op.status === 'error') box.append(el('span', 'opstatus error', `${op.label} failed: ${op.error?.message || 'error'}`));
  }
}

// fileKey is a file's path as the list shows and sorts it.
// fileKey is the file's path in the working directory; kept per file
// object (the reducer replaces a file only when it changes) while the
// session's directories stay the same.
const keyCache = new WeakMap();
function fileKey(f) {
  const dirs = workingDirs();
  const hit = keyCache.get(f);
  if (hit && hit.dirs === dirs) return hit.key;
  const key = relPath(f.edit?.after?.uri || f.edit?.before?.uri || f.id);
  keyCache.set(f, { dirs, key });
  return key;
}

const sortedCache = new WeakMap();

// filesOf is the changeset's files sorted by path, whatever order the
// actions brought them in: a file removed and set again (a revert undone)
// comes back where it was.
function filesOf(s) {
  const files = s?.files;
  if (!files) return [];
  let out = sortedCache.get(files);
  if (!out) {
    out = files.map((f) => [fileKey(f), f]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((x) => x[1]);
    sortedCache.set(files, out);
  }
  return out;
}

// A list longer than this is virtual: only the rows in view (and a few
// around them) are in the document, each ROW_PX high.
const VIRTUAL_FILES = 200;
const ROW_PX = 28;
const OVERSCAN = 10;

// rowCache keeps each file's row while the file object (which the
// reducer replaces only when the file changed) and what the row shows of
// the page's state stay the same.
let rowCache = new WeakMap();

// visibleFiles is the sorted files the path filter lets through.
function visibleFiles(s) {
  const all = filesOf(s);
  const q = ui.filter.trim().toLowerCase();
  const who = ui.author;
  if (!q && !who) return all;
  if (filterCache.all !== all || filterCache.q !== q || filterCache.who !== who) {
    const out = all.filter((f) => fileKey(f).toLowerCase().includes(q) && (!who || authorsOfFile(f).includes(who)));
    filterCache = { all, q, who, out };
  }
  return filterCache.out;
}

// ---- who wrote each hunk ------------------------------------------------------

// The daemon names who wrote each file's changes and each hunk in
// _meta.changesetd: "author" (one, or "mixed") and "authors"; an author is
// an agent's chat URI, "you" or "unknown".
function authorsOfFile(f) {
  const own = f?._meta?.changesetd;
  if (Array.isArray(own?.authors)) return own.authors;
  return own?.author ? [own.author] : [];
}

// authorLabel is an author as the page shows it: an icon and a word, so
// that it does not rest on colour.
function authorLabel(a) {
  if (a === 'you') return { icon: '●', text: 'you', title: 'You: a write no agent reported' };
  if (a === 'unknown' || !a) return { icon: '?', text: 'unknown', title: 'Unknown: the evidence cannot tell who wrote it' };
  const key = String(a).split('/').slice(2).join('/');
  const name = !key ? 'agent' : key.length > 12 ? key.slice(0, 8) : key;
  return { icon: '◆', text: name, title: `Agent ${key || '(default chat)'}: ${a}` };
}

function authorBadge(authors) {
  const span = el('span', 'hunk-author');
  const labels = authors.map(authorLabel);
  span.textContent = labels.map((l) => `${l.icon} ${l.text}`).join(' + ');
  span.title = 'Written by ' + labels.map((l) => l.title).join('; ');
  span.dataset.authors = authors.join(' ');
  return span;
}

// renderAuthorFilter offers the authors of the changeset's files, and says
// how to turn attribution on when nobody can be told apart.
function renderAuthorFilter(s) {
  const all = filesOf(s);
  const seen = [];
  for (const f of all) for (const a of authorsOfFile(f)) if (!seen.includes(a)) seen.push(a);
  const sel = $('author-filter');
  const sig = seen.join('\n');
  if (sel.dataset.sig !== sig) {
    sel.dataset.sig = sig;
    const opts = [el('option', null, 'Everyone')];
    opts[0].value = '';
    for (const a of seen) {
      const l = authorLabel(a);
      const o = el('option', null, `${l.icon} ${l.text}`);
      o.value = a;
      opts.push(o);
    }
    sel.replaceChildren(...opts);
    sel.value = seen.includes(ui.author) ? ui.author : '';
  }
  sel.hidden = seen.length === 0 || (seen.length === 1 && seen[0] === 'unknown');
  $('author-note').hidden = !(seen.length === 1 && seen[0] === 'unknown');
  renderAuthorOps(s);
}

// The operations by author act on the author chosen in the filter: its
// hunks only, everyone else's left as they are.
const AUTHOR_OPS = { stageAuthor: 'Stage', revertAuthor: 'Revert' };

function renderAuthorOps(s) {
  const box = $('author-ops');
  box.replaceChildren();
  const who = ui.author;
  if (!who || who === 'unknown' || who === 'mixed') return;
  const l = authorLabel(who);
  const whose = who === 'you' ? 'your' : 'this agent\'s';
  for (const op of s?.operations || []) {
    if (!AUTHOR_OPS[op.id]) continue;
    const b = opButton(op, null, `${AUTHOR_OPS[op.id]} ${whose} changes`);
    b.onclick = () => invoke(op, null, `${op.label}: ${l.icon} ${l.text}`, { author: who });
    box.append(b);
  }
}
let filterCache = {};

// The tree of the files shown, kept while they and the folded folders
// stay the same: a key that only moves the selection recomputes nothing.
let treeCache = {};
function treeOf(files) {
  const fold = [...ui.folded].join('\n');
  if (treeCache.files !== files || treeCache.fold !== fold) treeCache = { files, fold, items: treeItems(files) };
  return treeCache.items;
}

// dirRowFor is the folder's row, the same node while it shows the same.
const dirCache = new Map();
function dirRowFor(it, i) {
  const sig = [it.n, it.added, it.removed, it.depth, ui.folded.has(it.dir), i].join();
  const hit = dirCache.get(it.dir);
  if (hit && hit.sig === sig) return hit.li;
  const li = dirRow(it);
  dirCache.set(it.dir, { sig, li });
  return li;
}

function renderFiles(s) {
  const ul = $('files');
  const all = filesOf(s);
  const files = visibleFiles(s);
  $('filter-count').textContent = ui.filter.trim() || ui.author ? `${files.length} of ${all.length}` : '';
  renderAuthorFilter(s);
  // The selected file gone (reverted, committed): the one that took its
  // place in the list is selected, as after a delete in a list.
  const at = files.findIndex((f) => f.id === ui.file);
  if (at >= 0) ui.fileAt = at;
  else if (files.length) ui.file = files[Math.min(ui.fileAt || 0, files.length - 1)].id;
  else ui.file = null;
  ui.fileList = files;
  const items = treeOf(files);
  ui.items = items;
  const virtual = items.length > VIRTUAL_FILES;
  ul.classList.toggle('virtual', virtual);
  ul.setAttribute('aria-rowcount', String(items.length));
  if (s && files.length === 0 && s.status === 'ready') {
    ul.replaceChildren(el('li', 'muted empty', ui.filter.trim() ? 'No file matches the filter.' : 'No changes.'));
    return;
  }
  let from = 0;
  let to = items.length;
  if (virtual) {
    const h = ul.clientHeight || 600;
    from = Math.max(0, Math.floor(ul.scrollTop / ROW_PX) - OVERSCAN);
    to = Math.min(items.length, Math.ceil((ul.scrollTop + h) / ROW_PX) + OVERSCAN);
  }
  const rows = [];
  if (from > 0) rows.push(spacer(from * ROW_PX));
  for (let i = from; i < to; i++) rows.push(items[i].file ? fileRowFor(items[i].file, i, items[i].depth) : dirRowFor(items[i], i));
  if (to < items.length) rows.push(spacer((items.length - to) * ROW_PX));
  // Rows that are the same nodes stay put: no reflow for them, and the
  // focus and hover on a row survive an update of another.
  const cur = ul.children;
  let same = cur.length === rows.length;
  for (let i = 0; same && i < rows.length; i++) same = cur[i] === rows[i];
  if (!same) ul.replaceChildren(...rows);
}

// treeItems lays the sorted files out as a tree: a row per folder, with
// the number of changed files under it and their counts, above its files
// and subfolders; the contents of a folded folder are left out.
function treeItems(files) {
  const stats = new Map();
  for (const f of files) {
    const parts = fileKey(f).split('/');
    for (let i = 1; i < parts.length; i++) {
      const d = parts.slice(0, i).join('/');
      const st = stats.get(d) || { n: 0, added: 0, removed: 0 };
      st.n++;
      st.added += f.edit?.diff?.added || 0;
      st.removed += f.edit?.diff?.removed || 0;
      stats.set(d, st);
    }
  }
  const folded = (dirs, upto) => {
    if (!ui.folded.size) return false;
    for (let i = 1; i <= upto; i++) if (ui.folded.has(dirs.slice(0, i).join('/'))) return true;
    return false;
  };
  const items = [];
  let prev = [];
  for (const f of files) {
    const dirs = fileKey(f).split('/').slice(0, -1);
    let common = 0;
    while (common < dirs.length && common < prev.length && dirs[common] === prev[common]) common++;
    for (let i = common; i < dirs.length; i++) {
      if (folded(dirs, i)) break;
      const d = dirs.slice(0, i + 1).join('/');
      items.push({ dir: d, name: dirs[i], depth: i, ...stats.get(d) });
    }
    prev = dirs;
    if (!folded(dirs, dirs.length)) items.push({ file: f, depth: dirs.length });
  }
  return items;
}

function dirRow(it) {
  const li = el('li', 'dir' + (ui.folded.has(it.dir) ? ' folded' : ''));
  li.dataset.dir = it.dir;
  li.style.paddingLeft = 10 + it.depth * 14 + 'px';
  li.tabIndex = 0;
  li.setAttribute('role', 'button');
  li.setAttribute('aria-expanded', String(!ui.folded.has(it.dir)));
  li.title = `${it.dir}/: ${it.n} changed file${it.n === 1 ? '' : 's'}`;
  li.append(el('span', 'twisty', ui.folded.has(it.dir) ? '▸' : '▾'), el('span', 'dname', it.name + '/'),
    el('span', 'dcount muted', `${it.n} file${it.n === 1 ? '' : 's'} · +${it.added} −${it.removed}`));
  const toggle = () => {
    if (ui.folded.has(it.dir)) ui.folded.delete(it.dir); else ui.folded.add(it.dir);
    renderFiles(csState());
    $('files').querySelector(`li.dir[data-dir="${CSS.escape(it.dir)}"]`)?.focus();
  };
  li.onclick = toggle;
  li.onkeydown = (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      toggle();
    }
  };
  return li;
}

function spacer(px) {
  const li = el('li', 'vspace');
  li.style.height = px + 'px';
  li.setAttribute('aria-hidden', 'true');
  return li;
}

function fileRowFor(f, i, depth) {
  const threads = threadsOn(f);
  const sig = [f.id === ui.file, !!ui.cs.review, threads.length, threads.filter((a) => !a.resolved).length, i, depth].join();
  const hit = rowCache.get(f);
  if (hit && hit.sig === sig) return hit.li;
  const li = fileRow(f, threads);
  if (depth) {
    // Under its folder's row, a file is named by its name alone.
    li.style.paddingLeft = 10 + depth * 14 + 'px';
    const p = li.querySelector('.path');
    if (operationOf(f) !== 'move') p.textContent = fileKey(f).slice(fileKey(f).lastIndexOf('/') + 1);
    p.title = pathOf(f);
  }
  li.setAttribute('aria-rowindex', String(i + 1));
  rowCache.set(f, { sig, li });
  return li;
}

// modeChange is "mode 100755 → 100644" when the change sets another
// file mode (git's; a chmod, a file made a symbolic link), else "".
function modeChange(f) {
  const m = f._meta?.changesetd;
  return m?.oldMode && m?.newMode && m.oldMode !== m.newMode ? `mode ${m.oldMode} → ${m.newMode}` : '';
}

function fileRow(f, threads) {
  const li = el('li', 'file' + (f.id === ui.file ? ' selected' : '') + (f.reviewed ? ' is-reviewed' : ''));
  li.dataset.id = f.id;
  li.dataset.path = relPath(f.edit?.after?.uri || f.edit?.before?.uri || f.id);
  if (ui.cs.review) {
    const cb = el('input', 'review');
    cb.type = 'checkbox';
    cb.checked = !!f.reviewed;
    cb.title = 'Reviewed (x)';
    cb.setAttribute('aria-label', `Reviewed: ${fileKey(f)}`);
    cb.onclick = (e) => {
      e.stopPropagation();
      setReviewed(f.id, cb.checked);
    };
    li.append(cb);
  }
  const op = operationOf(f);
  const name = el('span', 'path', pathOf(f));
  name.title = pathOf(f); // the whole path, where the row cuts it short
  const kind = el('span', 'opkind ' + op, OP_LABEL[op] || op);
  kind.dataset.short = (OP_LABEL[op] || op).charAt(0).toUpperCase(); // git status's letter, where the row is narrow
  li.append(kind, name);
  const ix = indexState(f);
  li.dataset.index = ix || '';
  const d = f.edit?.diff;
  const c = el('span', 'counts');
  if (d) {
    const nums = el('span', 'nums');
    nums.append(el('span', 'added', `+${d.added ?? 0}`), ' ', el('span', 'removed', `−${d.removed ?? 0}`));
    c.append(nums);
  } else {
    c.append(el('span', 'muted', f._meta?.changesetd?.fileType || ''));
  }
  if (threads.length) {
    const open = threads.filter((a) => !a.resolved).length;
    const b = el('span', 'cbadge' + (open ? '' : ' done'), String(threads.length));
    b.title = `${threads.length} comment thread${threads.length === 1 ? '' : 's'}, ${open} open`;
    b.setAttribute('aria-label', b.title);
    c.prepend(b);
  }
  // A file still being written (drafts.js).
  const draft = draftBadge(f);
  if (draft) c.prepend(draft);
  // What an edit tool reported about the change (changesetd edits).
  const ed = f._meta?.changesetd?.edits;
  if (ed?.checksumMismatch) {
    const m = el('span', 'ebadge mismatch', 'checksum mismatch');
    m.title = 'The file on disk is not what the edit tool wrote: something changed it after the tool';
    c.prepend(m);
  }
  if (ed?.fuzzy) {
    const m = el('span', 'ebadge fuzzy', 'fuzzy');
    m.title = 'The edit tool placed this change by a fuzzy match of the text it was to replace: check where it landed';
    c.prepend(m);
  }
  const mode = modeChange(f);
  if (mode) {
    const m = el('span', 'mbadge', 'mode');
    m.title = mode;
    m.setAttribute('aria-label', mode);
    c.prepend(m);
  }
  if (INDEX_LABEL[ix]) {
    const m = el('span', 'idx ' + ix, INDEX_LABEL[ix]);
    m.title = INDEX_TITLE[ix];
    c.prepend(m);
  }
  li.append(c);
  li.onclick = () => selectFile(f.id);
  // A row is operable from the keyboard: Tab to it, Enter or Space opens it.
  li.tabIndex = 0;
  li.setAttribute('role', 'button');
  li.setAttribute('aria-current', f.id === ui.file ? 'true' : 'false');
  li.onkeydown = (e) => {
    if (e.target !== li || (e.key !== 'Enter' && e.key !== ' ')) return;
    e.preventDefault();
    selectFile(f.id);
  };
  return li;
}

// showSelected scrolls the list just enough to show the selected row.
function showSelected() {
  const ul = $('files');
  const i = (ui.items || []).findIndex((it) => it.file?.id === ui.file);
  if (i < 0) return;
  if (!ul.classList.contains('virtual')) {
    ul.querySelector('li.selected')?.scrollIntoView({ block: 'nearest' });
    return;
  }
  const top = i * ROW_PX;
  if (top < ul.scrollTop) ul.scrollTop = top;
  else if (top + ROW_PX > ul.scrollTop + ul.clientHeight) ul.scrollTop = top + ROW_PX - ul.clientHeight;
}

function selectFile(id) {
  if (ui.file !== id && ui.composer?.key === 'new') ui.composer = null;
  ui.file = id;
  remember();
  const s = csState();
  // The rows' layout is the last render's: only the selection moved, so
  // the list scrolls first and renders once, at its new place.
  showSelected();
  renderFiles(s);
  renderDiff(s);
}

function renderDiff(s) {
  const f = s?.files?.find((x) => x.id === ui.file);
  const pane = $('diff');
  const meta = f?._meta?.changesetd || {};
  // A reviewed file's diff is folded, as a "Viewed" file on a forge, until
  // the reader opens it again.
  const folded = !!(f?.reviewed && ui.cs?.review && !ui.unfolded.has(f.id));
  const key = JSON.stringify([ui.cs?.uri, ui.file, ui.view, ui.full, folded, meta.patchUri, meta.fileType, meta.tooLarge, meta.patchOmitted]);
  $('view-toggle').textContent = ui.view === 'split' ? 'Unified' : 'Side by side';
  $('full-toggle').textContent = ui.full ? 'Changes only' : 'Full file';
  $('full-toggle').setAttribute('aria-pressed', String(!!ui.full));
  $('full-toggle').disabled = !f?.edit?.after;
  $('diff-path').textContent = f ? pathOf(f) : '';
  $('file-comment').hidden = !canComment();
  renderFileOps(s, f);
  if (key === ui.diffKey) {
    decorateHunks(s, f);
    return showDraft(pane, f);
  }
  if (f && ui.diffFile === `${ui.cs?.uri}\n${f.id}` && meta.patchUri && !patches.get(meta.patchUri) && !(bigDiff(f) && !ui.bigOk.has(key)) && !folded) {
    // A new version of the file shown: its diff stays, not a blank
    // pane, until the new patch is in.
    const uri = meta.patchUri;
    patches.load(uri).then(() => {
      if (ui.file === f.id && csState()?.files?.find((x) => x.id === f.id)?._meta?.changesetd?.patchUri === uri) {
        ui.diffKey = '';
        renderDiff(csState());
      }
    });
    return;
  }
  ui.diffFile = f ? `${ui.cs?.uri}\n${f.id}` : null;
  ui.diffKey = key;
  ui.diffHunks = [];
  ui.virtualDiff = null;
  ui.lastSelection = null;
  ui.kbSel = null;
  $('diff-status').textContent = ''; // lines chosen in the diff that was shown
  updateRangeOps();
  pane.replaceChildren();
  if (!f) return;
  ui.hunkAt = -1;
  const mode = modeChange(f);
  if (mode) pane.append(el('p', 'note modechange', mode));
  if (folded) {
    const p = el('p', 'note folded', 'Reviewed: the diff is folded. ');
    const b = el('button', 'unfold', 'Show the diff');
    b.type = 'button';
    b.onclick = () => {
      ui.unfolded.add(f.id);
      renderDiff(csState());
    };
    p.append(b);
    pane.append(p);
    return;
  }
  if (meta.fileType === 'binary' && IMAGE[extOf(fileKey(f))]) {
    renderImages(pane, f, key);
  } else if (meta.fileType === 'binary') {
    pane.append(el('p', 'note', 'Binary file: no text diff.'));
  } else if (meta.tooLarge) {
    pane.append(el('p', 'note', 'This file is too large to diff.'));
  } else if (meta.patchOmitted || !meta.patchUri) {
    pane.append(el('p', 'note', 'The diff of this file is too large to show.'));
  } else if (bigDiff(f) && !ui.bigOk.has(key)) {
    // Rendering it would hold the page for seconds: on request only,
    // and its patch is read then.
    const p = el('p', 'note big', `This diff has ${bigDiff(f).toLocaleString()} lines. `);
    const b = el('button', 'load-anyway', 'Load anyway');
    b.type = 'button';
    b.onclick = () => {
      ui.bigOk.add(key);
      ui.diffKey = '';
      renderDiff(csState());
    };
    p.append(b);
    pane.append(p);
    return;
  } else if (!patches.get(meta.patchUri)) {
    // Read when first shown; drawn when it arrives, if still shown.
    pane.append(el('p', 'note loading', 'Loading the diff…'));
    patches.load(meta.patchUri).then(() => {
      if (ui.diffKey !== key) return;
      ui.diffKey = '';
      renderDiff(csState());
    });
  } else if (patches.get(meta.patchUri).error) {
    pane.append(el('p', 'note error', `The diff could not be read: ${patches.get(meta.patchUri).error}`));
  } else {
    const patch = patches.get(meta.patchUri).text;
    const big = bigDiff(f) > 0;
    const hunks = big ? parsePatch(patch) : pairWords(parsePatch(patch));
    ui.diffHunks = hunks;
    if (!big) withContext(f, hunks);
    if (hunks.length === 0) pane.append(el('p', 'note', meta.fileType === 'text' ? mode ? 'No content change.' : 'No content change (name only).' : `No text diff (${meta.fileType}).`));
    else if (big) renderVirtualDiff(pane, hunks);
    else if (ui.full && f.edit?.after) {
      renderFullFile(pane, f, hunks, key);
    } else {
      pane.append(ui.view === 'split' ? renderSplit(hunks) : renderUnified(hunks));
      addExpanders(pane, f, hunks);
      highlight(pane, fileKey(f), key);
    }
  }
  decorateHunks(s, f);
  renderThreads();
  showDraft(pane, f);
  prefetchAround(f);
}

// bigDiff is the number of a file's changed lines when they are too many
// to render at once, else 0. Without counts (a file git would call
// binary, say), the patch's size tells: about 40 bytes a line.
function bigDiff(f) {
  const dd = f.edit?.diff;
  const n = dd?.added !== undefined ? (dd.added || 0) + (dd.removed || 0) : Math.round((f._meta?.changesetd?.patchBytes || 0) / 40);
  return n > BIG_DIFF ? n : 0;
}

// prefetchAround reads the patches of the files next to f in the list, so
// that j and k draw the next diff at once.
function prefetchAround(f) {
  const files = (ui.items || []).filter((it) => it.file).map((it) => it.file);
  const i = files.findIndex((x) => x.id === f.id);
  if (i < 0) return;
  for (const g of [files[i + 1], files[i - 1], files[i + 2]]) {
    const uri = g?._meta?.changesetd?.patchUri;
    if (uri && !bigDiff(g) && !patches.get(uri)) patches.load(uri);
  }
}

// ---- context around hunks --------------------------------------------------

// Each hunk can show more of the file around it: ↑ more lines above it,
// ↓ more below the hunk before (on the header between two hunks) or below
// the last (on a row after it). The lines come from the after side, read
// once per version of the patch.

const EXPAND_STEP = 10;

function expansionOf(f) {
  const patch = f._meta?.changesetd?.patchUri;
  const k = `${ui.cs?.uri}\n${f.id}`;
  let e = ui.expand.get(k);
  if (!e || e.patch !== patch) {
    e = { patch, above: [], below: [], lines: null };
    ui.expand.set(k, e);
  }
  return e;
}

// hunkSpan is a hunk's first line and count on each side, a side with no
// lines starting at the line after it.
function hunkSpan(h) {
  const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(h.header);
  if (!m) return null;
  const oc = m[2] === undefined ? 1 : Number(m[2]);
  const nc = m[4] === undefined ? 1 : Number(m[4]);
  return { os: oc === 0 ? Number(m[1]) + 1 : Number(m[1]), oc, ns: nc === 0 ? Number(m[3]) + 1 : Number(m[3]), nc };
}

// gaps lists the unchanged lines around the hunks, gap i before hunk i
// and the last after the last hunk (its size unknown, Infinity, until the
// file is read): {from, size, down, up}, down the lines shown below the
// hunk before, up those shown above the hunk after.
function gapsOf(f, hunks) {
  const e = expansionOf(f);
  const sp = hunks.map(hunkSpan);
  if (sp.some((x) => !x)) return null;
  const out = [];
  for (let g = 0; g <= hunks.length; g++) {
    const from = g === 0 ? 1 : sp[g - 1].ns + sp[g - 1].nc;
    // A file created whole is all in its one hunk: nothing below it.
    const end = e.lines ? e.lines.length : f.edit?.before ? Infinity : from - 1;
    const to = g < hunks.length ? sp[g].ns - 1 : end;
    const size = Math.max(0, to - from + 1);
    const down = g > 0 ? Math.min(e.below[g - 1] || 0, size) : 0;
    const up = g < hunks.length ? Math.min(e.above[g] || 0, size - down) : 0;
    out.push({ from, size, down, up, sp: sp[g] || sp[g - 1] });
  }
  return out;
}

// withContext adds the context lines the reader asked for to the hunks.
function withContext(f, hunks) {
  const e = expansionOf(f);
  if (!e.lines || !hunks.length) return;
  const gaps = gapsOf(f, hunks);
  if (!gaps) return;
  const line = (n, delta) => ({ kind: 'ctx', text: e.lines[n - 1], old: n + delta, new: n, a: n - 1, extra: true });
  hunks.forEach((h, i) => {
    const s = hunkSpan(h);
    const above = [];
    for (let n = s.ns - gaps[i].up; n < s.ns; n++) above.push(line(n, s.os - s.ns));
    const end = s.ns + s.nc;
    const below = [];
    for (let n = end; n < end + gaps[i + 1].down; n++) below.push(line(n, s.os + s.oc - end));
    h.lines = [...above, ...h.lines, ...below];
  });
}

function expandButton(text, label, fn) {
  const b = el('button', 'expand', text);
  b.type = 'button';
  b.title = label;
  b.setAttribute('aria-label', label);
  b.onclick = fn;
  return b;
}

// addExpanders puts the ↑/↓ buttons on the hunk headers and a row after
// the last hunk.
function addExpanders(pane, f, hunks) {
  if (!f.edit?.after || !hunks.length) return;
  const gaps = gapsOf(f, hunks);
  if (!gaps) return;
  const left = (g) => g.size - g.down - g.up;
  const n = (g) => Math.min(EXPAND_STEP, left(g));
  const tb = pane.querySelector('table.difftable tbody');
  for (const tr of tb.querySelectorAll('tr.hunk')) {
    const i = Number(tr.dataset.hunk);
    const g = gaps[i];
    if (left(g) <= 0) continue;
    const box = el('span', 'expanders');
    if (i > 0) box.append(expandButton(`↓ ${n(g)}`, `Show ${n(g)} more lines below hunk ${i}`, () => expandAt(i - 1, 'below', i)));
    box.append(expandButton(`↑ ${n(g)}`, `Show ${n(g)} more lines above hunk ${i + 1}`, () => expandAt(i, 'above', i)));
    tr.firstElementChild.prepend(box);
  }
  const last = gaps[hunks.length];
  if (left(last) > 0) {
    const tr = el('tr', 'hunk-tail');
    const td = el('td', 'hunkhead');
    td.colSpan = 4;
    const k = Number.isFinite(last.size) ? n(last) : EXPAND_STEP;
    td.append(expandButton(`↓ ${k}`, `Show ${k} more lines below hunk ${hunks.length}`, () => expandAt(hunks.length - 1, 'below', null)));
    tr.append(td);
    tb.append(tr);
  }
}

// expandAt shows EXPAND_STEP more lines above or below hunk i, keeping
// the header of hunk anchor (or the pane's scroll) where it was.
async function expandAt(i, dir, anchor) {
  const f = currentFile();
  if (!f?.edit?.after) return;
  const e = expansionOf(f);
  if (!e.lines) {
    try {
      const b64 = await readContent(f.edit.after);
      const text = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
      const lines = text.split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      e.lines = lines;
    } catch (err) {
      toast(`Cannot read the file for more lines: ${errText(err)}`, 'error');
      return;
    }
    if (currentFile()?.id !== f.id || expansionOf(f) !== e) return;
  }
  e[dir][i] = (e[dir][i] || 0) + EXPAND_STEP;
  const pane = $('diff');
  const rowOf = () => anchor === null ? null : pane.querySelector(`table:not(.fullfile) tr.hunk[data-hunk="${anchor}"]`);
  const before = rowOf()?.getBoundingClientRect().top;
  const top = pane.scrollTop;
  ui.diffKey = '';
  renderDiff(csState());
  pane.scrollTop = top;
  const after = rowOf()?.getBoundingClientRect().top;
  if (before !== undefined && after !== undefined) pane.scrollTop += after - before;
  // The button pressed is gone with the old rows: the focus goes to the
  // one that shows more the same way, if any.
  const arrow = dir === 'above' ? '↑' : '↓';
  const scope = rowOf() || pane.querySelector('tr.hunk-tail');
  const again = scope && [...scope.querySelectorAll('button.expand')].find((b) => b.textContent.startsWith(arrow));
  if (again && (document.activeElement === document.body || !document.activeElement)) again.focus();
}

// ---- per hunk -------------------------------------------------------------

// The daemon lists a file's hunks in _meta.changesetd.hunks, each with an
// id bound to its content and its reviewed mark. Each hunk header of the
// diff gets a labelled checkbox for the mark, Keep (stage the hunk, where
// the changeset can stage lines) and Undo (revert the hunk's lines).

// hunkEntry is the daemon's entry for parsed hunk h (number hi): the one
// starting at the same lines, else the one at the same position.
function hunkEntry(f, h, hi) {
  const list = f?._meta?.changesetd?.hunks;
  if (!Array.isArray(list) || !h) return null;
  const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(h.header);
  if (m) {
    const found = list.find((e) => e.oldStart === Number(m[1]) && e.newStart === Number(m[2]));
    if (found) return found;
  }
  return list.length === ui.diffHunks.length ? list[hi] : null;
}

// hunkRange is the range a range operation takes for hunk h: its changed
// lines only, on the after side (a deleted line stands at the line after
// it), so neighbouring hunks are not touched.
function hunkRange(h) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const l of h.lines) {
    if ((l.kind !== 'add' && l.kind !== 'del') || l.a === null || l.a === undefined) continue;
    lo = Math.min(lo, l.a);
    hi = Math.max(hi, l.a);
  }
  if (lo === Infinity) return null;
  lo = Math.max(0, lo);
  hi = Math.max(lo, hi);
  return { start: { line: lo, character: 0 }, end: { line: hi, character: 0 } };
}

function hunkLines(r) {
  return r.start.line === r.end.line ? `line ${r.start.line + 1}` : `lines ${r.start.line + 1}–${r.end.line + 1}`;
}

// decorateHunks puts the per-hunk controls on the hunk headers shown and
// brings them up to date: cheap enough to run on every render.
function decorateHunks(s, f) {
  if (!f) return;
  // The whole-file view is one table of its own, not the diff's hunks.
  const rows = $('diff').querySelectorAll('table:not(.fullfile) tr.hunk');
  if (!rows.length) return;
  const review = !!ui.cs?.review;
  const stage = rangeOp('stage');
  const rev = rangeOp('revert');
  const off = (op) => !op || op.status === 'disabled' || op.status === 'running' || !online();
  for (const tr of rows) {
    const hi = Number(tr.dataset.hunk);
    const h = ui.diffHunks[hi];
    const entry = review ? hunkEntry(f, h, hi) : null;
    const r = h && hunkRange(h);
    const td = tr.firstElementChild;
    let box = td.querySelector('.hunkops');
    if (!box) {
      box = el('span', 'hunkops');
      const label = el('label', 'hunkreview');
      const cb = el('input', 'hunk-reviewed');
      cb.type = 'checkbox';
      cb.onchange = () => setHunkReviewed(hi, cb.checked);
      label.append(cb, document.createTextNode(' Reviewed'));
      const keep = el('button', 'hunk-keep', 'Keep');
      keep.type = 'button';
      keep.onclick = () => hunkOp('stage', hi);
      const undo = el('button', 'hunk-undo danger', 'Undo');
      undo.type = 'button';
      undo.onclick = () => hunkOp('revert', hi);
      const badge = el('span', 'hstaged', 'Staged');
      const unstage = el('button', 'hunk-unstage', 'Unstage');
      unstage.type = 'button';
      unstage.onclick = () => unstageHunk(hi);
      box.append(badge, label, keep, unstage, undo);
      td.append(box);
    }
    const [badge, label, keep, unstage, undo] = box.children;
    const inIndex = stagedRange(f, h, hi);
    const unst = rangeOp('unstage');
    tr.classList.toggle('staged', !!inIndex);
    badge.hidden = !inIndex;
    unstage.hidden = !inIndex || !unst;
    unstage.disabled = off(unst);
    unstage.title = unst?.status === 'disabled' ? `Unstage: ${disabledReason()}` : 'Unstage this hunk: take its lines out of the index';
    const info = hunkEntry(f, h, hi);
    const by = info?.author ? (info.author === 'mixed' && Array.isArray(info.authors) ? info.authors : [info.author]) : null;
    const sigBy = by ? by.join(' ') : '';
    const authored = td.querySelector('.hunk-author');
    if ((authored?.dataset.authors || '') !== sigBy) {
      authored?.remove();
      if (by) td.insertBefore(authorBadge(by), box);
    }
    // With an author chosen, the others' hunks stay listed, set apart.
    const apart = !!(ui.author && by && !by.includes(ui.author));
    if (tr.classList.contains('other-author') !== apart) {
      tr.classList.toggle('other-author', apart);
      for (let r = tr.nextElementSibling; r && !r.classList.contains('hunk'); r = r.nextElementSibling) r.classList.toggle('other-author', apart);
    }
    const cb = label.firstChild;
    label.hidden = !entry;
    if (entry) {
      cb.checked = !!entry.reviewed;
      cb.disabled = !online();
      cb.setAttribute('aria-label', `Reviewed: hunk ${hi + 1} of ${pathOf(f)}`);
    }
    tr.classList.toggle('reviewed', !!entry?.reviewed);
    keep.hidden = !stage || !r;
    keep.disabled = off(stage) || !!inIndex;
    keep.title = inIndex ? 'Kept: this hunk is staged already' : stage?.status === 'disabled' ? `Keep: ${disabledReason()}` : 'Keep this hunk: stage its lines';
    undo.hidden = !rev || !r;
    undo.disabled = off(rev);
    undo.title = rev?.status === 'disabled' ? `Undo: ${disabledReason()}` : 'Undo this hunk: revert its lines';
  }
}

// setHunkReviewed marks hunk hi of the file shown, on the daemon; the file
// comes back with the mark, to every client.
async function setHunkReviewed(hi, reviewed) {
  const f = currentFile();
  const entry = f && hunkEntry(f, ui.diffHunks[hi], hi);
  if (!entry || !ui.cs) return;
  try {
    await intent(shownVersions([f.id]), { hunks: { file: f.id, ids: [entry.id], reviewed } });
  } catch (e) {
    toast(`The hunk's review mark was not saved: ${errText(e)}`, 'error');
    decorateHunks(csState(), currentFile());
  }
}

function hunkOp(id, hi) {
  const op = rangeOp(id);
  const f = currentFile();
  const h = ui.diffHunks[hi];
  const r = h && hunkRange(h);
  if (!op || !f || !r) return;
  const resource = f.edit?.after?.uri || f.id;
  const what = id === 'revert' ? `Undo hunk ${hi + 1} of ${pathOf(f)} (${hunkLines(r)}): put back its lines as they were?` : `Stage hunk ${hi + 1} of ${pathOf(f)} (${hunkLines(r)})?`;
  const target = { kind: 'range', resource, side: 'after', range: r };
  describe(target, id === 'revert' ? revertHunksText(ui.cs?.kind, pathOf(f), [hunkFacts(h, hi)], null) : null, `hunk ${hi + 1} of ${pathOf(f)}`);
  invoke(op, target, what);
}

// stagedRange is the range an unstage of parsed hunk h (number hi) names
// (lines of the index's version) when the hunk is in the index as shown,
// else null: every hunk of a file staged whole; of a partly staged file,
// those the daemon lists in _meta.changesetd.staged.hunks by id.
function stagedRange(f, h, hi) {
  const ix = indexState(f);
  if (!h || (ix !== 'staged' && ix !== 'partial')) return null;
  if (ix === 'staged') return hunkRange(h);
  const entry = hunkEntry(f, h, hi);
  const part = entry && f._meta?.changesetd?.staged?.hunks?.find((x) => x.id === entry.id);
  return part ? { start: { line: part.first, character: 0 }, end: { line: part.last, character: 0 } } : null;
}

function unstageHunk(hi) {
  const op = rangeOp('unstage');
  const f = currentFile();
  const h = ui.diffHunks[hi];
  const r = f && stagedRange(f, h, hi);
  if (!op || !r) return;
  const target = { kind: 'range', resource: f.edit?.after?.uri || f.id, side: 'after', range: r };
  describe(target, null, `hunk ${hi + 1} of ${pathOf(f)}`);
  invoke(op, target, `Unstage hunk ${hi + 1} of ${pathOf(f)}?`);
}

// hunkFacts is what a confirmation says of hunk h (index hi): its number,
// its changed lines (one-based, of the version shown) and counts.
function hunkFacts(h, hi) {
  const r = hunkRange(h);
  return {
    n: hi + 1,
    first: r.start.line + 1,
    last: r.end.line + 1,
    added: h.lines.filter((l) => l.kind === 'add').length,
    removed: h.lines.filter((l) => l.kind === 'del').length,
  };
}

// Texts for an invocation on a file or lines, said in its own terms
// rather than the daemon's one text for the whole changeset (see
// confirm.js): the target object carries them to confirmText and
// doneNote.
const described = new WeakMap();

function describe(target, confirm, done) {
  described.set(target, { confirm, done });
}

// confirmText is what the confirmation of op on target says.
function confirmText(op, target, what) {
  const d = target && described.get(target);
  if (d?.confirm) return d.confirm;
  const s = csState();
  if (op.id === 'revert' && target?.kind === 'resource') {
    const f = s?.files?.find((x) => x.edit?.after?.uri === target.resource || x.edit?.before?.uri === target.resource || x.id === target.resource);
    if (f) {
      return revertFileText(ui.cs?.kind, {
        path: pathOf(f), created: !f.edit?.before, deleted: !f.edit?.after,
        added: f.edit?.diff?.added ?? 0, removed: f.edit?.diff?.removed ?? 0,
      });
    }
  }
  if (op.id === 'revert' && !target && (ui.cs?.turn || ui.cs?.after)) {
    const files = (s?.files || []).map((f) => ({ path: pathOf(f), created: !f.edit?.before }));
    const label = ui.cs.turn ? turnName(ui.cs.turn) : `the turns after ${turnName(ui.cs.before || 'baseline')} up to ${turnName(ui.cs.after)}`;
    return rewindText(label, files, plain(op.confirmation));
  }
  return [what, plain(op.confirmation)].filter(Boolean).join('\n\n');
}

// doneNote is the note after op on target succeeded.
function doneNote(op, target, message) {
  return doneText(op, target, message, target && described.get(target)?.done);
}

// toggleHunk flips the reviewed mark of the current hunk (n/p), or of the
// first.
function toggleHunk() {
  const rows = [...$('diff').querySelectorAll('tr.hunk')];
  if (!rows.length) return;
  if (ui.hunkAt < 0) gotoHunk(1);
  const cb = rows[Math.max(0, ui.hunkAt)]?.querySelector('input.hunk-reviewed');
  if (!cb || cb.disabled || cb.closest('label').hidden) return;
  setHunkReviewed(Number(rows[Math.max(0, ui.hunkAt)].dataset.hunk), !cb.checked);
}

const IMAGE = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', bmp: 'image/bmp', ico: 'image/x-icon' };

function extOf(path) {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

// readContent reads one side's bytes as base64 through resourceRead.
async function readContent(side) {
  const res = await ui.client.request('resourceRead', { channel: ROOT, uri: side.content?.uri || side.uri, encoding: 'base64' });
  return res.encoding === 'base64' ? res.data : btoa(unescape(encodeURIComponent(res.data)));
}

// renderImages shows an image's two sides next to each other.
function renderImages(pane, f, key) {
  const box = el('div', 'images');
  pane.append(box);
  const sides = [['Before', f.edit?.before], ['After', f.edit?.after]];
  for (const [label, side] of sides) {
    const fig = el('figure', 'image ' + label.toLowerCase());
    fig.append(el('figcaption', null, side ? label : `${label}: none`));
    box.append(fig);
    if (!side) continue;
    readContent(side).then((b64) => {
      if (ui.diffKey !== key) return;
      const img = el('img');
      img.alt = `${pathOf(f)}, ${label.toLowerCase()}`;
      img.src = `data:${IMAGE[extOf(fileKey(f))]};base64,${b64}`;
      fig.append(img);
    }, (e) => fig.append(el('p', 'error-text', `Cannot read it: ${errText(e)}`)));
  }
}

// renderFullFile shows the whole file: the diff's hunks with every line
// of the file between them as context, read from the after side.
function renderFullFile(pane, f, hunks, key) {
  const note = el('p', 'note', 'Reading the whole file…');
  pane.append(note);
  readContent(f.edit.after).then((b64) => {
    if (ui.diffKey !== key) return;
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const text = new TextDecoder().decode(bytes);
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const all = [];
    let next = 1; // the next new-side line (1-based) not yet shown
    let delta = 0; // old line = new line + delta outside the hunks
    const ctx = (upto) => {
      for (; next < upto && next <= lines.length; next++) all.push({ kind: 'ctx', text: lines[next - 1], old: next + delta, new: next, a: next - 1 });
    };
    for (const h of hunks) {
      const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(h.header);
      if (!m) continue;
      const oc = m[2] === undefined ? 1 : Number(m[2]);
      const nc = m[4] === undefined ? 1 : Number(m[4]);
      // A side with no lines names the line before it.
      const os = oc === 0 ? Number(m[1]) + 1 : Number(m[1]);
      const ns = nc === 0 ? Number(m[3]) + 1 : Number(m[3]);
      ctx(ns);
      all.push(...h.lines);
      next = ns + nc;
      delta = os + oc - next;
    }
    ctx(lines.length + 1);
    note.remove();
    const whole = [{ header: `${pathOf(f)}: the whole file, ${lines.length} lines`, lines: all }];
    const t = ui.view === 'split' ? renderSplit(whole) : renderUnified(whole);
    t.classList.add('fullfile');
    pane.prepend(t);
    highlight(pane, fileKey(f), key);
    renderThreads();
  }, (e) => {
    note.className = 'error-text';
    note.textContent = `Cannot read the whole file: ${errText(e)}`;
  });
}

// highlight colours the diff's code once its language is loaded, if the
// same diff is still shown then.
function highlight(pane, path, key) {
  const lang = languageOf(path);
  if (!lang) return;
  load(lang).then((hljs) => {
    if (ui.diffKey !== key) return;
    colour(hljs, lang, [...pane.querySelectorAll('td.code')], () => ui.diffKey === key);
  }, (e) => console.warn(`highlighting ${lang}: ${e.message}`));
}

// A diff longer than BIG_DIFF lines opens on request, and then virtual:
// unified, rows DIFF_ROW_PX high, only those in view in the document.
const BIG_DIFF = 5000;
const DIFF_ROW_PX = 20;

function renderVirtualDiff(pane, hunks) {
  const rows = flatRows(hunks);
  const { t, tb } = emptyTable('unified');
  t.classList.add('virtual');
  pane.append(t);
  const draw = () => {
    const top = Math.max(0, pane.scrollTop - t.offsetTop);
    const h = pane.clientHeight || 800;
    const from = Math.max(0, Math.floor(top / DIFF_ROW_PX) - 40);
    const to = Math.min(rows.length, Math.ceil((top + h) / DIFF_ROW_PX) + 40);
    if (ui.virtualDiff && ui.virtualDiff.from === from && ui.virtualDiff.to === to) return;
    ui.virtualDiff = { from, to, draw };
    renderRows(tb, rows, from, to, DIFF_ROW_PX);
    decorateHunks(csState(), currentFile());
  };
  ui.virtualDiff = null;
  draw();
  const d = ui.virtualDiff;
  d.draw = draw;
}

function renderFileOps(s, f) {
  const box = $('file-ops');
  box.replaceChildren();
  if (!f) return;
  const resource = f.edit?.after?.uri || f.edit?.before?.uri || f.id;
  const ix = indexState(f);
  for (const op of s?.operations || []) {
    if (!op.scopes.includes('resource')) continue;
    const b = opButton(op, { kind: 'resource', resource });
    // Stage and Unstage apply where there is something to move.
    if (ix && !b.disabled && online() && ((op.id === 'stage' && ix === 'staged') || (op.id === 'unstage' && ix === 'unstaged'))) {
      b.disabled = true;
      b.title = op.id === 'stage' ? 'Nothing to stage: the whole change is in the index already' : 'Nothing to unstage: no part of this change is in the index';
    }
    box.append(b);
  }
}

function rangeOp(id) {
  const s = csState();
  return (s?.operations || []).find((op) => op.id === id && op.scopes.includes('range'));
}

function updateRangeOps() {
  const rev = rangeOp('revert');
  const stage = rangeOp('stage');
  const comment = canComment();
  const show = !!ui.lastSelection && (rev || stage || comment);
  $('range-ops').hidden = !show;
  $('range-comment').hidden = !comment;
  $('range-revert').hidden = !rev;
  $('range-stage').hidden = !stage;
  $('range-revert').disabled = !rev || rev.status === 'disabled' || rev.status === 'running' || !online();
  $('range-stage').disabled = !stage || stage.status === 'disabled' || stage.status === 'running' || !online();
  $('range-revert').title = rev?.status === 'disabled' ? `Revert: ${disabledReason()}` : 'Revert the selected lines';
  $('range-stage').title = stage?.status === 'disabled' ? `Stage: ${disabledReason()}` : 'Stage the selected lines';
}

function invokeRange(id) {
  const op = rangeOp(id);
  const s = csState();
  const f = s?.files?.find((x) => x.id === ui.file);
  if (!op || !f || !ui.lastSelection) return;
  const resource = f.edit?.after?.uri || f.id;
  const r = ui.lastSelection;
  const lines = r.start.line === r.end.line ? `line ${r.start.line + 1}` : `lines ${r.start.line + 1}–${r.end.line + 1}`;
  const target = { kind: 'range', resource, side: 'after', range: r };
  // The daemon takes every hunk the lines touch.
  const touched = ui.diffHunks.map((h, hi) => (hunkRange(h) ? hunkFacts(h, hi) : null))
    .filter((h) => h && h.last >= r.start.line + 1 && h.first <= r.end.line + 1);
  const confirm = id === 'revert' ? revertHunksText(ui.cs?.kind, pathOf(f), touched, { first: r.start.line + 1, last: r.end.line + 1 }) : null;
  describe(target, confirm, `${lines} of ${pathOf(f)}`);
  invoke(op, target, `${op.label} the hunks at ${lines} of ${pathOf(f)}?`);
}

// ---- commit -------------------------------------------------------------

// commitPlan is what a commit takes: the staged files when any are, else
// every change.
function commitPlan(s) {
  const files = s?.files || [];
  const staged = files.filter((f) => INDEX_LABEL[indexState(f)]);
  return staged.length ? { files: staged, staged: true } : { files, staged: false };
}

// commitText is the message the dialog starts with: a subject with the
// counts and one line per file, like the daemon's own. They count what
// the commit records: of a partly staged file, its staged part (the
// daemon's _meta.changesetd.staged); when that is unknown, the subject
// gives no counts rather than wrong ones.
function commitText(plan) {
  let add = 0;
  let del = 0;
  let known = true;
  const lines = plan.files.map((f) => {
    let c = { added: f.edit?.diff?.added ?? 0, removed: f.edit?.diff?.removed ?? 0 };
    if (plan.staged && indexState(f) === 'partial') c = f._meta?.changesetd?.staged || null;
    if (!c) {
      known = false;
      return `- ${operationOf(f)} ${pathOf(f)} (partly staged)`;
    }
    add += c.added;
    del += c.removed;
    return `- ${operationOf(f)} ${pathOf(f)} (+${c.added} -${c.removed})`;
  });
  return `Update ${plan.files.length} file(s)${known ? ` (+${add} -${del})` : ''}\n\n${lines.join('\n')}\n`;
}

function openCommit(op) {
  const s = csState();
  const shown = shownVersions();
  const plan = commitPlan(s);
  const d = $('commit-dialog');
  const n = plan.files.length;
  $('commit-what').textContent = plan.staged
    ? `Commit the ${n} staged file${n === 1 ? '' : 's'} (what is in the index):`
    : `Nothing is staged: commit all ${n} changed file${n === 1 ? '' : 's'}:`;
  const ul = $('commit-files');
  ul.replaceChildren();
  for (const f of plan.files) {
    const li = el('li', null, pathOf(f));
    if (indexState(f) === 'partial') li.append(el('span', 'muted', ' — only its staged part'));
    ul.append(li);
  }
  $('commit-message').value = commitText(plan);
  $('commit-error').textContent = '';
  const done = () => {
    $('commit-form').onsubmit = null;
    $('commit-cancel').onclick = null;
    if (d.open) d.close();
  };
  $('commit-cancel').onclick = done;
  $('commit-form').onsubmit = async (e) => {
    e.preventDefault();
    const message = $('commit-message').value;
    if (message.trim() === '') {
      $('commit-error').textContent = 'Write a commit message first.';
      $('commit-message').focus();
      return;
    }
    done();
    try {
      const res = await intent(shown, { op: op.id, meta: { message } });
      toast(res?.message ? plain(res.message) : `Committed ${n} file${n === 1 ? '' : 's'}`);
    } catch (err) {
      toast(`${op.label} failed: ${errText(err)}`, 'error');
    }
  };
  d.showModal();
  $('commit-message').focus();
}

// ---- intents: what the person asks for, on the versions shown ---------

// shownVersions is what the page shows now of the changeset's files ids
// (every file when ids is omitted): the changeset's view stamp and each
// file's content nonces. An intent takes it when the person acts, before
// any confirmation, so the daemon checks what was on the screen.
function shownVersions(ids) {
  const s = csState();
  const versions = {};
  for (const f of s?.files || []) {
    if (ids && !ids.includes(f.id)) continue;
    versions[f.id] = { before: f.edit?.before?.content?.nonce || '', after: f.edit?.after?.content?.nonce || '' };
  }
  const shown = { versions };
  const view = s?._meta?.changesetd?.view;
  if (typeof view === 'string') shown.view = view;
  return shown;
}

// targetFiles is the ids of the files a target resource names: the file,
// or the files of a directory.
function targetFiles(resource) {
  const files = csState()?.files || [];
  const one = files.filter((f) => f.id === resource || f.edit?.after?.uri === resource || f.edit?.before?.uri === resource);
  if (one.length) return one.map((f) => f.id);
  const dir = resource.replace(/\/$/, '') + '/';
  return files.filter((f) => f.id.startsWith(dir)).map((f) => f.id);
}

// intent sends one thing the person asked for with the versions shown when
// they asked (shownVersions): an operation ({op, target, meta}), a review
// flag ({review: {files, reviewed}}) or a hunk's mark ({hunks: {file, ids,
// reviewed}}). Every operation and review flag of the page goes through
// here, so the daemon acts on exactly what was on the screen or refuses,
// naming the files that changed.
function intent(shown, what) {
  if (what.review) {
    return ui.client.dispatch(ui.cs.uri, { type: 'changeset/filesReviewChanged', files: what.review.files, reviewed: what.review.reviewed, _meta: shown });
  }
  if (what.hunks) {
    const h = what.hunks;
    return ui.client.request('x-changesetd/hunksReviewChanged', { channel: ui.cs.uri, file: h.file, hunks: h.ids, reviewed: h.reviewed, _meta: shown });
  }
  const params = { channel: ui.cs.uri, operationId: what.op, _meta: { ...what.meta, ...shown } };
  if (what.target) params.target = what.target;
  return ui.client.request('invokeChangesetOperation', params);
}

// invoke runs an operation, asking first when it carries a confirmation.
// Its running/error status arrives in the changeset state.
async function invoke(op, target, what, meta) {
  const shown = shownVersions(target ? targetFiles(target.resource) : undefined);
  if (op.confirmation !== undefined && op.confirmation !== null) {
    const text = confirmText(op, target, what);
    if (!(await confirmDialog(text, op.label))) return;
  }
  try {
    const res = await intent(shown, { op: op.id, target, meta });
    if (res?.message) toast(doneNote(op, target, plain(res.message)));
  } catch (e) {
    toast(`${op.label} failed: ${errText(e)}`, 'error');
  }
}

function setReviewed(id, reviewed) {
  if (!ui.cs) return;
  ui.unfolded.delete(id);
  try {
    intent(shownVersions([id]), { review: { files: [id], reviewed } });
  } catch (e) {
    toast(`Not connected: the review flag was not saved (${errText(e)})`, 'error');
    renderChangeset();
  }
}

// ---- review comments --------------------------------------------------

// Threads are the session's annotations; each is anchored to a file of a
// turn's version (or "baseline"), and the daemon says in
// _meta["changesetd/current"] where its lines are in the working tree now.

function annotationList() {
  return (ui.ann && ui.client.state(ui.ann)?.annotations) || null;
}

function currentFile() {
  return csState()?.files?.find((x) => x.id === ui.file) || null;
}

function fileResources(f) {
  return [f.edit?.after?.uri, f.edit?.before?.uri].filter(Boolean);
}

function threadsOn(f) {
  const res = fileResources(f);
  return (annotationList() || []).filter((a) => res.includes(a.resource));
}

function canComment() {
  return !!annotationList() && !!currentFile();
}

// viewOf says which version of the files the shown changeset ends at: a
// turn's (a turn, or the later of two compared turns) or the working
// tree's.
function viewOf() {
  if (ui.cs?.turn) return { turn: ui.cs.turn };
  if (ui.cs?.after) return { turn: ui.cs.after };
  return { live: true };
}

function turnName(id) {
  if (id === 'baseline') return 'the baseline';
  const t = allTurns().find((x) => x.id === id);
  return t?.message?.text ? `turn “${t.message.text}”` : `turn ${id}`;
}

// settled resolves to the state of channel once it has its files.
function settled(uri) {
  return new Promise((resolve) => {
    const check = () => {
      const st = ui.client.state(uri);
      if (!st || !['ready', 'recomputing', 'error'].includes(st.status)) return false;
      ui.client.removeEventListener('state', on);
      resolve(st);
      return true;
    };
    const on = (e) => { if (e.detail.channel === uri) check(); };
    if (!check()) ui.client.addEventListener('state', on);
  });
}

// anchorFor says what a new comment on range (shown lines, or null for the
// whole file) of resource is anchored to: an annotation names a turn's
// version of the file, or the baseline's, and lines of that version. A
// turn's view shows its version, so the lines are the shown ones. A view
// of the working tree is the version of the turn running now, when one
// is. Else lines the baseline has go on the baseline, mapped there
// through the session changeset (baseline → working tree); lines added
// since (which the baseline cannot name) stay the shown ones, and the
// daemon keeps a snapshot of the working tree they are on (onWorkingTree).
// It resolves to {turnId, range, onWorkingTree, note}.
async function anchorFor(resource, range) {
  const v = viewOf();
  if (v.turn) return { turnId: v.turn, range };
  const run = runningTurns();
  if (run.length) return { turnId: run[run.length - 1].id, range };
  if (!range) return { turnId: 'baseline', range };
  const shown = { turnId: 'baseline', range, onWorkingTree: true };
  let st = ui.cs?.kind === 'session' ? csState() : null;
  if (!st) {
    const c = catalogEntry('session');
    if (!c) return shown;
    const uri = entryFor(c, {}).uri;
    if (ui.sessionCs !== uri) {
      if (ui.sessionCs) release(ui.sessionCs);
      ui.sessionCs = uri;
      await hold(uri);
    }
    st = await settled(uri);
  }
  const f = st.files?.find((x) => (x.edit?.after?.uri || x.edit?.before?.uri) === resource);
  if (!f) return { turnId: 'baseline', range }; // the same lines as at the baseline
  const uri = f._meta?.changesetd?.patchUri;
  if (!uri || f._meta?.changesetd?.patchOmitted || !f.edit?.before) return shown;
  const patch = await patches.load(uri);
  if (patch.error) return shown;
  const hunks = parsePatch(patch.text);
  if (touchesAdded(hunks, range.start.line, lastLine(range))) return shown;
  return { turnId: 'baseline', range: oldRange(hunks, range.start.line, lastLine(range)) };
}

// anchorRow is the last diff row on the range's lines, or null when the
// diff does not show them.
function anchorRow(rows, r) {
  let found = null;
  const last = lastLine(r);
  for (const tr of rows) {
    const a = Number(tr.dataset.a);
    if (a >= r.start.line && a <= last) found = tr;
  }
  return found;
}

// placeAfter puts content in a full-width row after row, below the
// threads already there.
function placeAfter(row, content, key) {
  let ref = row;
  while (ref.nextElementSibling?.classList.contains('thread-row')) ref = ref.nextElementSibling;
  const tr = el('tr', 'thread-row');
  tr.dataset.key = key;
  const td = el('td');
  td.colSpan = 4;
  td.append(content);
  tr.append(td);
  ref.after(tr);
}

function unconfirmedIds() {
  return new Set(ui.client.unconfirmed(ui.ann).map((a) => a.annotation?.id || a.annotationId));
}

function renderThreads() {
  const pane = $('diff');
  const active = document.activeElement;
  const typing = active?.tagName === 'TEXTAREA' && pane.contains(active) ? [active.selectionStart, active.selectionEnd] : null;
  for (const e of pane.querySelectorAll('.thread-row, .file-threads')) e.remove();
  const f = currentFile();
  const list = annotationList();
  if (!f || !list) return;
  const res = fileResources(f);
  const { inline, file } = placeThreads(list, res, viewOf(), turnName);
  const rows = [...pane.querySelectorAll('tr.line[data-a]')];
  const pending = unconfirmedIds();
  const top = el('div', 'file-threads');
  for (const { a, range, note } of inline) {
    const row = anchorRow(rows, range);
    if (row) placeAfter(row, threadFor(a, note, pending, range), a.id);
    else top.append(threadFor(a, [note, 'not in the lines shown'].filter(Boolean).join(', '), pending, range));
  }
  for (const { a, note } of file) top.append(threadFor(a, note, pending));
  const c = ui.composer;
  if (c?.key === 'new' && res.includes(c.resource)) {
    const box = el('div', 'thread new');
    box.append(el('div', 'where', `${linesLabel(c.range)}: new comment${c.note ? ` (${c.note})` : ''}`), composerFor(c, 'Comment'));
    const row = c.range && anchorRow(rows, c.range);
    if (row) placeAfter(row, box, 'new'); else top.append(box);
  }
  if (top.childElementCount) pane.prepend(top);
  if (typing) {
    const ta = pane.querySelector('.composer textarea');
    if (ta) {
      ta.focus();
      ta.setSelectionRange(typing[0], typing[1]);
    }
  }
}

function threadFor(a, note, pending, range) {
  const key = `${a.id}:${!!a.resolved}`;
  const composing = ui.composer?.key === a.id;
  const open = composing || (ui.threadOpen.has(key) ? ui.threadOpen.get(key) : !a.resolved);
  return renderThread(a, {
    range,
    note,
    open,
    pending: pending.has(a.id),
    composer: composing ? composerFor(ui.composer, 'Reply') : null,
    on: {
      reply: () => openComposer({ key: a.id }),
      resolve: (v) => sendAnnotation({ type: 'annotations/updated', annotationId: a.id, resolved: v }, null),
      toggle: (o) => ui.threadOpen.set(key, o),
    },
  });
}

function composerFor(c, label) {
  return renderComposer(label, c, {
    input: (text) => { c.text = text; },
    submit: (text) => submitComposer(c, text.trim()),
    cancel: () => {
      ui.composer = null;
      renderThreads();
    },
  });
}

function openComposer(c) {
  ui.composer = { text: '', error: '', ...c };
  renderThreads();
  $('diff').querySelector('.composer textarea')?.focus();
}

// commentOnSelection starts a comment on the whole lines selected.
function commentOnSelection() {
  const sel = ui.lastSelection;
  if (!sel) return;
  clearKbSel();
  const first = Math.max(sel.start.line, 0);
  startComment(wholeLines(first, Math.max(sel.end.line, first)));
}

async function startComment(range) {
  const f = currentFile();
  if (!f || !canComment()) return;
  const resource = f.edit?.after?.uri || f.edit?.before?.uri;
  document.getSelection()?.removeAllRanges();
  const csUri = ui.cs.uri;
  let anchor;
  try {
    anchor = await anchorFor(resource, range);
  } catch (e) {
    toast(`Cannot place the comment: ${errText(e)}`, 'error');
    return;
  }
  if (ui.cs?.uri !== csUri || currentFile()?.id !== f.id) return;
  openComposer({ key: 'new', resource, range, turnId: anchor.turnId, anchorRange: anchor.range, onWorkingTree: !!anchor.onWorkingTree, note: anchor.note });
}

function submitComposer(c, text) {
  if (c.key === 'new') {
    const a = { id: newId('a'), turnId: c.turnId, resource: c.resource, resolved: false, entries: [{ id: newId('e'), text }] };
    if (c.anchorRange) a.range = c.anchorRange;
    if (c.onWorkingTree) a._meta = { 'changesetd/onWorkingTree': true };
    sendAnnotation({ type: 'annotations/set', annotation: a }, { ...c, text, error: '' });
  } else {
    sendAnnotation({ type: 'annotations/entrySet', annotationId: c.key, entry: { id: newId('e'), text } }, { ...c, text, error: '' });
  }
}

// sendAnnotation dispatches an annotations action; the page shows it at
// once and takes it back if the daemon refuses it. draft is the comment
// box it came from, reopened with the reason then.
function sendAnnotation(action, draft) {
  const keep = ui.composer;
  ui.composer = null;
  let seq;
  try {
    seq = ui.client.dispatch(ui.ann, action);
  } catch (e) {
    ui.composer = keep;
    if (keep) keep.error = `Not sent: ${errText(e)}`;
    else toast(`Not sent: ${errText(e)}`, 'error');
    renderThreads();
    return;
  }
  if (draft) {
    ui.sent.set(seq, draft);
    if (ui.sent.size > 100) ui.sent.delete(ui.sent.keys().next().value);
  }
  renderThreads();
}

function commentRefused({ action, reason, clientSeq }) {
  const what = {
    'annotations/set': 'The comment',
    'annotations/entrySet': 'The reply',
    'annotations/updated': action.resolved ? 'Resolving the thread' : 'Re-opening the thread',
  }[action.type] || action.type;
  toast(`${what} was refused: ${reason}`, 'error');
  const draft = ui.sent.get(clientSeq);
  ui.sent.delete(clientSeq);
  if (draft && !ui.composer) {
    ui.composer = { ...draft, error: `Refused: ${reason}` };
    renderThreads();
  }
}

function onAnnotations() {
  const s = csState();
  renderFiles(s);
  renderThreads();
  updateRangeOps();
  $('file-comment').hidden = !canComment();
}

// ---- keyboard ----------------------------------------------------------

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.tagName === 'INPUT' && t.type !== 'checkbox' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
  if ($('confirm').open) return;
  if ($('help').open) return;
  const files = (ui.items || []).filter((it) => it.file).map((it) => it.file);
  const i = files.findIndex((f) => f.id === ui.file);
  if (ui.kbSel && onLineKey(e)) {
    e.preventDefault();
    return;
  }
  if (e.key === 'j' && files.length) {
    selectFile(files[Math.min(i + 1, files.length - 1)].id);
  } else if (e.key === 'k' && files.length) {
    selectFile(files[Math.max(i - 1, 0)].id);
  } else if (e.key === 'x' && i >= 0 && ui.cs?.review) {
    setReviewed(files[i].id, !files[i].reviewed);
  } else if (e.key === 's') {
    toggleView();
  } else if (e.key === 'h' && ui.cs?.review) {
    toggleHunk();
  } else if (e.key === 'n' || e.key === 'p') {
    gotoHunk(e.key === 'n' ? 1 : -1);
  } else if (e.key === 'u' && files.length) {
    // The next file not reviewed yet, after the selected one, wrapping.
    const next = [...files.slice(i + 1), ...files.slice(0, i + 1)].find((f) => !f.reviewed);
    if (next) selectFile(next.id);
    else toast('Every file is reviewed.');
  } else if (e.key === 'v') {
    startKbSel();
  } else if (e.key === 'f') {
    toggleFull();
  } else if (e.key === '/') {
    ui.swallowKey = e.key; // the filter takes the focus: it must not get the /
    $('filter').focus();
  } else if (e.key === '?') {
    $('help').showModal();
  } else if (e.key === 'c' && ui.lastSelection && canComment()) {
    // The comment box takes the focus before the key is done: it must
    // not type the c.
    ui.swallowKey = e.key;
    commentOnSelection();
  } else {
    return;
  }
  e.preventDefault();
}

// gotoHunk moves to the next (dir 1) or previous (-1) hunk of the diff
// shown, scrolling it to the top of the pane.
function gotoHunk(dir) {
  const hunks = [...$('diff').querySelectorAll('tr.hunk')];
  if (!hunks.length) return;
  const i = Math.max(0, Math.min(hunks.length - 1, ui.hunkAt + dir));
  ui.hunkAt = i;
  for (const h of hunks) h.classList.toggle('current', h === hunks[i]);
  const pane = $('diff');
  pane.scrollTop += hunks[i].getBoundingClientRect().top - pane.getBoundingClientRect().top;
}

// Lines can be chosen from the keyboard: v starts at the first line of the
// current hunk, the arrows move, Shift+arrows extend, Escape ends. The
// range then works as a selection does: c comments, the range buttons
// apply.
function kbRows() {
  return [...$('diff').querySelectorAll('tr.line[data-a]')];
}

function startKbSel() {
  const rows = kbRows();
  if (!rows.length) return;
  const hunk = $('diff').querySelectorAll('tr.hunk')[Math.max(ui.hunkAt, 0)];
  let i = hunk ? rows.findIndex((r) => r.dataset.hunk === hunk.dataset.hunk) : 0;
  if (i < 0) i = 0;
  ui.kbSel = { anchor: i, head: i };
  drawKbSel();
}

function onLineKey(e) {
  const rows = kbRows();
  const k = ui.kbSel;
  if (e.key === 'Escape') {
    clearKbSel();
    ui.lastSelection = null;
    updateRangeOps();
    return true;
  }
  if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return false;
  k.head = Math.max(0, Math.min(rows.length - 1, k.head + (e.key === 'ArrowDown' ? 1 : -1)));
  if (!e.shiftKey) k.anchor = k.head;
  drawKbSel();
  return true;
}

function drawKbSel() {
  const rows = kbRows();
  const k = ui.kbSel;
  const lo = Math.min(k.anchor, k.head);
  const hi = Math.max(k.anchor, k.head);
  rows.forEach((r, i) => r.classList.toggle('ksel', i >= lo && i <= hi));
  rows[k.head].scrollIntoView({ block: 'nearest' });
  const a = rows.slice(lo, hi + 1).map((r) => Number(r.dataset.a));
  ui.lastSelection = { start: { line: Math.min(...a), character: 0 }, end: { line: Math.max(...a), character: 0 } };
  $('diff-status').textContent = `${linesLabel(wholeLines(ui.lastSelection.start.line, ui.lastSelection.end.line))} chosen: c comments, Escape ends`;
  updateRangeOps();
}

function clearKbSel() {
  ui.kbSel = null;
  for (const r of $('diff').querySelectorAll('tr.ksel')) r.classList.remove('ksel');
  $('diff-status').textContent = '';
}

function toggleFull() {
  ui.full = !ui.full;
  renderDiff(csState());
}

function toggleView() {
  ui.view = ui.view === 'split' ? 'unified' : 'split';
  localStorage.setItem('changesetd.view', ui.view);
  renderDiff(csState());
}

// ---- wiring ------------------------------------------------------------

// Actions come in bursts (a save of a thousand files is a thousand
// fileSets): each marks what it touched, and the page renders once per
// animation frame.
const dirty = new Set();
let frame = 0;

function onState({ channel }) {
  dirty.add(channel);
  if (!frame) frame = requestAnimationFrame(flush);
}

function flush() {
  frame = 0;
  const channels = [...dirty];
  dirty.clear();
  let cs = false;
  let turns = false;
  const turnCs = new Set(ui.turnCs.values());
  for (const ch of channels) {
    const mine = ui.cs && ch === ui.cs.uri;
    if (mine) cs = true;
    if (ui.chats.has(ch) || turnCs.has(ch)) turns = true;
    else if (!mine) renderChannel(ch);
  }
  if (turns) onChats();
  else if (cs) renderChangeset();
}

function renderChannel(channel) {
  if (channel === ui.ann) {
    onAnnotations();
  } else if (channel === ui.session) {
    syncChats();
    renderCatalog();
    renderNotes($('cs-warnings'), workspaceNotes(ui.client?.state(ui.session)));
    if (!ui.cs) {
      const c = catalogEntry('uncommitted');
      if (c) openChangeset(entryFor(c, {}));
    }
  }
}

const CONN_TEXT = {
  connecting: 'connecting…',
  connected: 'live',
  disconnected: 'disconnected',
  reconnecting: 'reconnecting…',
  error: 'error',
  closed: 'closed',
};

// forgetChannels drops what the page held through an earlier client: a
// new one (after the token form) holds nothing yet.
function forgetChannels() {
  ui.held.clear();
  ui.chats.clear();
  ui.turnCs.clear();
  ui.session = null;
  ui.cs = null;
  ui.file = null;
  ui.ann = null;
  ui.sessionCs = null;
  ui.diffKey = '';
}

function start(token) {
  if (ui.client) forgetChannels();
  $('login').hidden = true;
  $('app').hidden = false;
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const c = new Client(`${proto}//${location.host}/ahp?token=${encodeURIComponent(token)}`, clientId());
  ui.client = c;
  c.addEventListener('status', (e) => {
    const { status, detail } = e.detail;
    if (c.refused) return; // the token form says why
    if (status === 'disconnected' && c.neverOpened) checkToken(c);
    $('conn').dataset.state = status;
    $('conn').textContent = CONN_TEXT[status] + (detail ? ` — ${detail}` : '');
    document.body.dataset.conn = status;
    // What the page shows is the last state it had: it says so, and
    // nothing can be invoked on it.
    if (ui.cs) renderChangeset();
  });
  c.addEventListener('ready', async () => {
    performance.mark('changesetd:ready');
    try {
      await loadSessions();
    } catch (e) {
      toast(`listSessions failed: ${errText(e)}`, 'error');
    }
    renderCatalog();
    renderTurns();
    renderChangeset();
  });
  c.addEventListener('state', (e) => onState(e.detail));
  c.addEventListener('notification', (e) => onRootNotification(e.detail));
  c.addEventListener('rejected', (e) => {
    if (e.detail.channel === ui.ann) commentRefused(e.detail);
    else toast(`The daemon refused ${e.detail.action.type}: ${e.detail.reason}`, 'error');
  });
  c.addEventListener('protocolError', (e) => toast(`Protocol error: ${errText(e.detail)}`, 'error'));
  c.addEventListener('gone', (e) => {
    const ch = e.detail.channel;
    ui.held.delete(ch);
    if (ch === ui.session) clearSession();
    else if (ui.cs && ch === ui.cs.uri) closeChangeset();
    else if (ch === ui.ann) onAnnotations();
  });
  // The socket boot.js opened while the page loaded, if it is for this
  // token; a later start (another token) connects afresh.
  c.start(window.changesetdBoot);
  window.changesetdBoot = null;
}

// checkToken tells a refused token from a stopped daemon: a browser sees
// neither the 401 nor its reason, but when /healthz answers and a socket
// with the token is still refused, the daemon is up and it is the token
// it refused. This holds on a reconnect too: a daemon restarted with a
// new state dir has a new token.
async function checkToken(c) {
  if (c.checking) return;
  c.checking = true;
  try {
    await tokenRefused(c);
  } finally {
    c.checking = false;
  }
}

async function tokenRefused(c) {
  let up = false;
  try {
    up = (await fetch('/healthz', { cache: 'no-store' })).ok;
  } catch {
    return;
  }
  if (!up || c.status === 'connected') return;
  // The refused socket may have been tried just before the daemon came
  // up: one more, now that it is.
  if (await socketOpens(c.url)) return;
  if (c.status === 'connected') return;
  c.refused = true;
  c.close();
  sessionStorage.removeItem('changesetd.token');
  $('app').hidden = true;
  $('conn').dataset.state = 'error';
  $('conn').textContent = 'not connected: token refused';
  showLogin('The daemon refused this token. Open the review: URL it printed, or paste the token.');
}

function socketOpens(url) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.onopen = () => {
      resolve(true);
      ws.close(1000, 'token check');
    };
    ws.onclose = () => resolve(false);
  });
}

function showLogin(message) {
  $('login').hidden = false;
  if (message) $('login-message').textContent = message;
  $('login-form').onsubmit = (e) => {
    e.preventDefault();
    const v = $('login-token').value.trim();
    const m = /token=([^&#\s]+)/.exec(v);
    const t = m ? decodeURIComponent(m[1]) : v;
    if (!t) return;
    sessionStorage.setItem('changesetd.token', t);
    $('login-token').value = '';
    start(t);
  };
}

function main() {
  $('view-toggle').onclick = toggleView;
  $('full-toggle').onclick = toggleFull;
  $('filter').addEventListener('input', () => {
    ui.filter = $('filter').value;
    $('files').scrollTop = 0;
    renderFiles(csState());
    renderDiff(csState());
  });
  $('author-filter').addEventListener('change', () => {
    ui.author = $('author-filter').value;
    $('files').scrollTop = 0;
    renderFiles(csState());
    renderDiff(csState());
  });
  $('filter').addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      $('filter').value = '';
      ui.filter = '';
      renderFiles(csState());
      $('filter').blur();
    } else if (e.key === 'Enter') {
      $('filter').blur();
    }
  });
  $('help-close').onclick = () => $('help').close();
  $('help-open').onclick = () => $('help').showModal();
  $('compare').onclick = compareTurns;
  $('range-revert').onclick = () => invokeRange('revert');
  $('range-stage').onclick = () => invokeRange('stage');
  $('range-comment').onclick = commentOnSelection;
  $('file-comment').onclick = () => startComment(null);
  document.addEventListener('keydown', onKey);
  document.addEventListener('keypress', (e) => { if (e.key === ui.swallowKey) e.preventDefault(); }, true);
  document.addEventListener('keyup', (e) => { if (e.key === ui.swallowKey) ui.swallowKey = null; }, true);
  document.addEventListener('selectionchange', () => {
    const r = selectedRange($('diff'));
    // A line range chosen with the keyboard stands until a text
    // selection replaces it.
    if (!r && ui.kbSel) return;
    if (r) clearKbSel();
    ui.lastSelection = r;
    updateRangeOps();
  });
  // Pressing a range button must not move focus or drop the selection.
  $('range-ops').addEventListener('mousedown', (e) => e.preventDefault());
  let diffScroll = 0;
  $('diff').addEventListener('scroll', () => {
    if (diffScroll || !ui.virtualDiff) return;
    diffScroll = requestAnimationFrame(() => {
      diffScroll = 0;
      ui.virtualDiff?.draw();
    });
  }, { passive: true });
  let scrolling = 0;
  $('files').addEventListener('scroll', () => {
    if (scrolling || !$('files').classList.contains('virtual')) return;
    scrolling = requestAnimationFrame(() => {
      scrolling = 0;
      renderFiles(csState());
    });
  }, { passive: true });
  const token = takeToken();
  if (!token) {
    showLogin();
    return;
  }
  start(token);
}

main();
