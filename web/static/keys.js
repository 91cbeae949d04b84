// The keyboard: the page's keys and lines chosen with them.

import { linesLabel, wholeLines } from './comments.js';
import { linesReadOnly, toggleWhitespace } from './diffmode.js';
import { setReviewed } from './intent.js';
import { $, toast, ui } from './page.js';
import { csState, currentFile } from './selectors.js';
import { canUndoWithReason, undoWithReason } from './undowhy.js';
import { canComment, commentOnSelection } from './view-comments.js';
import { renderDiff, toggleHunk, updateRangeOps } from './view-diff.js';
import { selectFile } from './view-files.js';
import { allOn, toggleAll } from './view-all.js';

// ---- keyboard ----------------------------------------------------------

// The single-key shortcuts can be turned off (in the help), for the
// people whose speech input or screen reader types letters: the page then
// takes no key that is a character alone. The choice is kept in
// localStorage.
const SINGLE_KEYS = 'changesetd.singleKeys';

function singleKeys() {
  return localStorage.getItem(SINGLE_KEYS) !== 'off';
}

// wireKeys shows the shortcuts' setting and keeps it when changed.
function wireKeys() {
  const box = $('single-keys');
  const show = () => {
    box.checked = singleKeys();
    $('keys-off').hidden = box.checked;
  };
  box.addEventListener('change', () => {
    localStorage.setItem(SINGLE_KEYS, box.checked ? 'on' : 'off');
    show();
  });
  show();
}

const ONE_FILE_KEYS = new Set(['n', 'p', 'h', 'v', 'f', 'c']);

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key.length === 1 && !singleKeys()) return;
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
  // All the diffs shown at once: the keys for one file's hunks and
  // lines have none to act on.
  if (allOn() && ONE_FILE_KEYS.has(e.key)) return;
  if (e.key === 'j' && files.length) {
    selectFile(files[Math.min(i + 1, files.length - 1)].id);
  } else if (e.key === 'k' && files.length) {
    selectFile(files[Math.max(i - 1, 0)].id);
  } else if (e.key === 'x' && i >= 0 && ui.cs?.review) {
    setReviewed(files[i].id, !files[i].reviewed);
  } else if (e.key === 's') {
    toggleView();
  } else if (e.key === 'a') {
    toggleAll();
  } else if (e.key === 'h' && ui.cs?.review) {
    toggleHunk();
  } else if (e.key === 'n' || e.key === 'p') {
    gotoHunk(e.key === 'n' ? 1 : -1);
  } else if (e.key === 'u' && files.length) {
    // The next file not reviewed yet, after the selected one, wrapping.
    const next = [...files.slice(i + 1), ...files.slice(0, i + 1)].find((f) => !f.reviewed);
    if (next) selectFile(next.id);
    else toast('Every file is reviewed.');
  } else if (e.key === 'w') {
    toggleWhitespace();
  } else if (e.key === 'v' && !linesReadOnly(currentFile())) {
    startKbSel();
  } else if (e.key === 'f') {
    toggleFull();
  } else if (e.key === '/') {
    ui.swallowKey = e.key; // the filter takes the focus: it must not get the /
    $('filter').focus();
  } else if (e.key === '?') {
    $('help').showModal();
  } else if (e.key === 'U' && ui.cs) {
    // Undo the current hunk (n/p), or the first, and tell the agent why.
    if (ui.hunkAt < 0) gotoHunk(1);
    const row = $('diff').querySelectorAll('tr.hunk')[Math.max(0, ui.hunkAt)];
    if (row && linesReadOnly(currentFile())) {
      toast('This diff is not the changeset\'s own: show the whole diff to undo its hunks.');
    } else if (row && canUndoWithReason(Number(row.dataset.hunk))) {
      ui.swallowKey = e.key; // the box takes the focus: it must not get the U
      undoWithReason(Number(row.dataset.hunk));
    } else if (row) {
      toast('This hunk cannot be undone with a reason here: it needs Undo and comments, on a connected page.');
    }
  } else if (e.key === 'c' && ui.lastSelection && canComment() && !linesReadOnly(currentFile())) {
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

export { clearKbSel, gotoHunk, onKey, toggleFull, toggleView, wireKeys };
