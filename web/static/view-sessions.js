// The side of the page: the sessions, their changeset catalogue, their
// chats and the turns on them.

import { expand, variables } from './uritemplate.js';
import { createTurnPager } from './turnpages.js';
import { $, confirmDialog, el, errText, hold, release, remember, remembered, toast, ui } from './page.js';
import { counts, dirName, online, totalsOf } from './selectors.js';
import { closeChangeset, openChangeset, renderChangeset } from './view-changeset.js';
import { onAnnotations } from './view-comments.js';

// The side's own state: the turns ticked for comparison.
const side = { picks: [] };

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
  side.picks = [];
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
    pick.setAttribute('aria-label', `Compare: ${t.message?.text || '(no message)'}`);
    pick.checked = side.picks.includes(t.id);
    pick.onclick = (e) => {
      e.stopPropagation();
      side.picks = pick.checked ? [...side.picks, t.id].slice(-2) : side.picks.filter((x) => x !== t.id);
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
  side.picks = side.picks.filter((id) => turns.some((t) => t.id === id));
  $('compare').disabled = side.picks.length !== 2 || !catalogEntry('compare-turns');
  turnPager.render(turns.length);
}

function compareTurns() {
  const turns = allTurns();
  const order = turns.map((t) => t.id);
  const [a, b] = side.picks.slice().sort((x, y) => order.indexOf(x) - order.indexOf(y));
  const c = catalogEntry('compare-turns');
  if (!c) return;
  const msg = (id) => turns.find((t) => t.id === id)?.message?.text || id;
  openChangeset({ ...entryFor(c, { originalTurnId: a, modifiedTurnId: b }), label: `Compare turns: “${msg(a)}” → “${msg(b)}”`, after: b, before: a });
}

export { agentLabel, allTurns, catalogEntry, clearSession, compareTurns, disabledReason, endCommand, entryFor, fmtTime, loadSessions, onChats, onRootNotification, renderCatalog, renderTurns, runningTurns, syncChats };
