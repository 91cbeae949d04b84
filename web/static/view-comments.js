// Review comments: the threads on the diff and the comment box.

import { parsePatch } from './diff.js';
import { lastLine, linesLabel, newId, oldRange, placeThreads, renderComposer, renderThread, touchesAdded, wholeLines } from './comments.js';
import { intent, shownVersions } from './intent.js';
import { clearKbSel } from './keys.js';
import { $, el, errText, hold, patches, release, toast, ui } from './page.js';
import { csState, currentFile } from './selectors.js';
import { updateRangeOps } from './view-diff.js';
import { renderFiles } from './view-files.js';
import { allTurns, catalogEntry, entryFor, runningTurns } from './view-sessions.js';

// The comments' own state.
const talk = {
  threadOpen: new Map(), // "id:resolved" -> open, where the reader folded or unfolded a thread
  sent: new Map(), // clientSeq -> the comment box a dispatch came from, to reopen it if refused
};

// ---- review comments --------------------------------------------------

// Threads are the session's annotations; each is anchored to a file of a
// turn's version (or "baseline"), and the daemon says in
// _meta["changesetd/current"] where its lines are in the working tree now.

function annotationList() {
  return (ui.ann && ui.client.state(ui.ann)?.annotations) || null;
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
  const open = composing || (talk.threadOpen.has(key) ? talk.threadOpen.get(key) : !a.resolved);
  return renderThread(a, {
    range,
    note,
    open,
    pending: pending.has(a.id),
    composer: composing ? composerFor(ui.composer, 'Reply') : null,
    on: {
      reply: () => openComposer({ key: a.id }),
      resolve: (v) => sendAnnotation({ type: 'annotations/updated', annotationId: a.id, resolved: v }, null),
      toggle: (o) => talk.threadOpen.set(key, o),
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
  // The lines are those of the version on the screen now: the comment
  // names it, and the daemon binds the comment to it or refuses.
  const shown = shownVersions([f.id]);
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
  openComposer({ key: 'new', resource, range, shown, turnId: anchor.turnId, anchorRange: anchor.range, onWorkingTree: !!anchor.onWorkingTree, note: anchor.note });
}

function submitComposer(c, text) {
  if (c.key === 'new') {
    const a = { id: newId('a'), turnId: c.turnId, resource: c.resource, resolved: false, entries: [{ id: newId('e'), text }] };
    if (c.anchorRange) a.range = c.anchorRange;
    if (c.onWorkingTree) a._meta = { 'changesetd/onWorkingTree': true };
    sendAnnotation({ type: 'annotations/set', annotation: a }, { ...c, text, error: '' }, c.shown);
  } else {
    sendAnnotation({ type: 'annotations/entrySet', annotationId: c.key, entry: { id: newId('e'), text } }, { ...c, text, error: '' });
  }
}

// sendAnnotation dispatches an annotations action through intent(), with
// the versions shown (a new comment's) or none; the page shows it at
// once and takes it back if the daemon refuses it. draft is the comment
// box it came from, reopened with the reason then.
function sendAnnotation(action, draft, shown = null) {
  const keep = ui.composer;
  ui.composer = null;
  let seq;
  try {
    seq = intent(shown, { annotation: action });
  } catch (e) {
    ui.composer = keep;
    if (keep) keep.error = `Not sent: ${errText(e)}`;
    else toast(`Not sent: ${errText(e)}`, 'error');
    renderThreads();
    return;
  }
  if (draft) {
    talk.sent.set(seq, draft);
    if (talk.sent.size > 100) talk.sent.delete(talk.sent.keys().next().value);
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
  const draft = talk.sent.get(clientSeq);
  talk.sent.delete(clientSeq);
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

export { anchorFor, canComment, commentOnSelection, commentRefused, onAnnotations, renderThreads, startComment, threadsOn, turnName };
