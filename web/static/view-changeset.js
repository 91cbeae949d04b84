// The changeset shown: opening and closing it, its head (label, status,
// totals) and its operations.

import { renderNotes, workspaceNotes } from './warnings.js';
import { invoke } from './intent.js';
import { $, dirty, el, errText, hold, release, remember, showApp, ui } from './page.js';
import { csState, online, totalsOf } from './selectors.js';
import { openCommit } from './view-commit.js';
import { renderDiff } from './view-diff.js';
import { AUTHOR_OPS, drawFiles, listFiles } from './view-files.js';
import { agentLabel, disabledReason, endCommand, fmtTime, renderCatalog, renderTurns, runningTurns } from './view-sessions.js';

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
  // Drawn now when it is still to come (its status says so); when its
  // snapshot is in already, drawn once, below.
  if (!ui.client.state(entry.uri)) renderChangeset();
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
  showApp();
  performance.mark('changesetd:rendered');
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
  const totals = $('totals');
  totals.replaceChildren();
  if (s) {
    totals.append(el('span', 'nfiles', `${tot.files} file${tot.files === 1 ? '' : 's'}`),
      el('span', 'added', `+${tot.added}`), el('span', 'removed', `−${tot.removed}`));
    if (tot.staged) totals.append(el('span', 'nstaged', `${tot.staged} staged`));
    if (ui.cs.review) totals.append(el('span', 'reviewed', `${tot.reviewed}/${tot.files} reviewed`));
  }
  renderOps(s);
  // The list is laid out first and the diff pane drawn before the list's
  // rows are: the patches the pane shows are asked for before the rows'
  // work, not after it.
  listFiles(s);
  renderDiff(s);
  drawFiles(s);
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

export { closeChangeset, opButton, openChangeset, renderChangeset };
