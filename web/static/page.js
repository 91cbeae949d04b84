// The page's shared state: what is selected and held, the client, and
// the small helpers every view uses (elements, notes, the confirmation).

import { ROOT } from './ahp.js';
import { plainText } from './comments.js';
import { createPatches } from './patches.js';

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
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
  diffKey: '',
  unfolded: new Set(), // reviewed files whose diff the reader opened again
  hunkAt: -1, // the hunk n/p went to last
  virtualDiff: null, // the virtual diff shown: {from, to, draw}
  lastSelection: null,
  ann: null, // the session's annotations channel, when the daemon has one
  sessionCs: null, // the session changeset, held to map working-tree lines to the baseline's
  composer: null, // the open comment box: {key: 'new' or an annotation id, resource, range, turnId, text, error}
  swallowKey: null, // a key that opened a comment box, not to be typed into it
};

// The files' patches, read as they are shown (patches.js).
const patches = createPatches((uri) => ui.client.request('resourceRead', { channel: ROOT, uri }));

const remembered = () => JSON.parse(sessionStorage.getItem('changesetd.selection') || '{}');
// remember keeps the selection for the tab's next load; a write that
// would change nothing is skipped (the page remembers several times as
// it opens).
let remembering = '';
function remember() {
  const v = JSON.stringify({ session: ui.session, cs: ui.cs, file: ui.file });
  if (v === remembering) return;
  remembering = v;
  sessionStorage.setItem('changesetd.selection', v);
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

// Actions come in bursts (a save of a thousand files is a thousand
// fileSets): each marks what it touched, and the page renders once per
// animation frame.
const dirty = new Set();

export { $, confirmDialog, dirty, el, errText, hold, patches, plain, release, remember, remembered, toast, ui };

// The page is shown with the first files (showApp), not empty before
// them: it stays invisible (body.loading, app.css) meanwhile, laid out
// but not painted. A page painted while the snapshot came took the
// cores the daemon and the socket needed, and the time the browser
// reads the socket in, and flashed labels with nothing under them.
// Without files within SHOW_APP_MS (a changeset that cannot be opened,
// no session at all), it is shown anyway.
const SHOW_APP_MS = 300;
let showTimer = 0;
export function showAppSoon() {
  clearTimeout(showTimer);
  showTimer = setTimeout(showApp, SHOW_APP_MS);
}
export function showApp() {
  clearTimeout(showTimer);
  document.body.classList.remove('loading');
  $('app').hidden = false;
}
export function hideApp() {
  clearTimeout(showTimer);
  document.body.classList.remove('loading');
  $('app').hidden = true;
}
