// The review page: sessions, their changeset catalogue and turns, and one
// changeset's files and diffs, all mirrored live from the daemon over AHP.

import { Client, socketFor } from './ahp.js';
import { selectedRange } from './diff.js';
import { renderNotes, workspaceNotes } from './warnings.js';
import { clearKbSel, onKey, toggleFull, toggleView, wireKeys } from './keys.js';
import { toggleWhitespace } from './diffmode.js';
import { wireTheme } from './theme.js';
import { $, dirty, errText, hideApp, remembered, showAppSoon, toast, ui } from './page.js';
import { csState } from './selectors.js';
import { closeChangeset, openChangeset, renderChangeset } from './view-changeset.js';
import { commentOnSelection, commentRefused, onAnnotations, startComment } from './view-comments.js';
import { copyPath, invokeRange, renderDiff, updateRangeOps } from './view-diff.js';
import { renderFiles, selectFile, wireFileList } from './view-files.js';
import { onFollow, wireAll } from './view-all.js';
import { catalogEntry, clearSession, compareTurns, entryFor, loadSessions, onChats, onRootNotification, renderCatalog, renderTurns, syncChats } from './view-sessions.js';

// ---- token and identity ----------------------------------------------

// takeToken moves a token given in the URL (#token=… or ?token=…) to
// sessionStorage and removes it from the address bar; boot.js has done so
// already, unless it could not run. The session the URL names is taken
// once too.
function takeToken() {
  const frag = new URLSearchParams(location.hash.slice(1));
  const query = new URLSearchParams(location.search);
  const t = frag.get('token') || query.get('token');
  // The session the printed URL names (the one serve was given) is the
  // one the page opens on, not the newest, which may be one an agent's
  // hook made since.
  const open = frag.get('session');
  if (open && remembered().session !== open) sessionStorage.setItem('changesetd.selection', JSON.stringify({ session: open }));
  if (t) sessionStorage.setItem('changesetd.token', t);
  if (t || open) history.replaceState(null, '', location.pathname);
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

// ---- wiring ------------------------------------------------------------

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
  showAppSoon();
  // The token goes in the socket's subprotocols, not its URL (socketFor).
  const { url, protocols } = socketFor(token);
  const c = new Client(url, clientId(), protocols);
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
  if (await socketOpens(c.url, c.protocols)) return;
  if (c.status === 'connected') return;
  c.refused = true;
  c.close();
  sessionStorage.removeItem('changesetd.token');
  hideApp();
  $('conn').dataset.state = 'error';
  $('conn').textContent = 'not connected: token refused';
  showLogin('The daemon refused this token. Open the review: URL it printed, or paste the token.');
}

function socketOpens(url, protocols) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols);
    ws.onopen = () => {
      resolve(true);
      ws.close(1000, 'token check');
    };
    ws.onclose = () => resolve(false);
  });
}

// showLogin shows the token form alone: the page's panes stay hidden
// until a token is given.
function showLogin(message) {
  hideApp();
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
  $('ws-toggle').onclick = toggleWhitespace;
  $('copy-path').onclick = copyPath;
  wireFileList();
  wireAll(renderDiff);
  onFollow(selectFile);
  $('help-close').onclick = () => $('help').close();
  $('help-open').onclick = () => $('help').showModal();
  $('compare').onclick = compareTurns;
  $('range-revert').onclick = () => invokeRange('revert');
  $('range-stage').onclick = () => invokeRange('stage');
  $('range-comment').onclick = commentOnSelection;
  $('file-comment').onclick = () => startComment(null);
  wireKeys();
  wireTheme();
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
