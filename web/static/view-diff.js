// The diff pane: one file's diff, its hunks and their controls, the lines
// around them, images, the whole file and the range operations.

import { ROOT } from './ahp.js';
import { emptyTable, flatRows, pairWords, parsePatch, renderRows, renderSplit, renderUnified } from './diff.js';
import { colour, languageOf, load } from './highlight.js';
import { showDraft } from './drafts.js';
import { generatedNote, generatedWhy, imageSummary } from './fileinfo.js';
import { revertHunksText } from './confirm.js';
import { describe, intent, invoke, shownVersions } from './intent.js';
import { gotoHunk } from './keys.js';
import { $, el, errText, patches, toast, ui } from './page.js';
import { csState, currentFile, fileKey, indexState, modeChange, online, pathOf } from './selectors.js';
import { canUndoWithReason, undoWithReason } from './undowhy.js';
import { opButton } from './view-changeset.js';
import { canComment, renderThreads } from './view-comments.js';
import { allOn, renderAll } from './view-all.js';
import { authorBadge, chosenAuthor } from './view-files.js';
import { disabledReason } from './view-sessions.js';
import { diffModeKey, emptyNote, linesReadOnly, modeNotes, onDiffModeChange, shownPatchUri } from './diffmode.js';

// The diff pane's own state.
const diffUi = {
  file: null, // "changeset\nfile" whose diff the pane shows
  bigOk: new Set(), // diffs too long to open by themselves that the reader opened
  hunks: [], // the parsed hunks of the diff shown
  expand: new Map(), // "changeset\nfile" -> the context shown around its hunks: {patch: its patchUri, above, below, lines}
};

function renderDiff(s) {
  if (allOn()) return renderAll(s);
  const f = s?.files?.find((x) => x.id === ui.file);
  const pane = $('diff');
  const meta = f?._meta?.changesetd || {};
  // The patch shown: the changeset's, or another the reader chose
  // (diffmode.js).
  const shown = shownPatchUri(f);
  // A reviewed file's diff is folded, as a "Viewed" file on a forge, until
  // the reader opens it again.
  // A generated file's diff is folded too (fileinfo.js).
  const folded = !!(f && ((f.reviewed && ui.cs?.review) || generatedWhy(f)) && !ui.unfolded.has(f.id));
  const key = JSON.stringify([ui.cs?.uri, ui.file, ui.view, ui.full, folded, meta.patchUri, meta.fileType, meta.tooLarge, meta.patchOmitted, f && diffModeKey(f)]);
  $('view-toggle').textContent = ui.view === 'split' ? 'Unified' : 'Side by side';
  $('full-toggle').textContent = ui.full ? 'Changes only' : 'Full file';
  $('full-toggle').setAttribute('aria-pressed', String(!!ui.full));
  $('full-toggle').disabled = !f?.edit?.after || linesReadOnly(f);
  $('full-toggle').title = linesReadOnly(f) ? 'The whole file is shown around the changeset\u2019s own diff: show it first' : 'Show the whole file around the changes (f)';
  $('diff-path').textContent = f ? pathOf(f) : '';
  $('copy-path').hidden = !f;
  $('file-comment').hidden = !canComment();
  renderFileOps(s, f);
  if (key === ui.diffKey) {
    decorateHunks(s, f);
    return showDraft(pane, f);
  }
  if (f && diffUi.file === `${ui.cs?.uri}\n${f.id}` && shown && !patches.get(shown) && !(bigDiff(f) && !diffUi.bigOk.has(key)) && !folded) {
    // A new version of the file shown: its diff stays, not a blank
    // pane, until the new patch is in.
    const uri = shown;
    patches.load(uri).then(() => {
      if (ui.file === f.id && shownPatchUri(csState()?.files?.find((x) => x.id === f.id)) === uri) {
        ui.diffKey = '';
        renderDiff(csState());
      }
    });
    return;
  }
  diffUi.file = f ? `${ui.cs?.uri}\n${f.id}` : null;
  ui.diffKey = key;
  diffUi.hunks = [];
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
  const sizes = imageSummary(f);
  if (sizes) pane.append(el('p', 'note imagesize', sizes));
  if (!folded) modeNotes(pane, f);
  const readOnly = linesReadOnly(f);
  if (folded) {
    const p = el('p', 'note folded', f.reviewed && ui.cs?.review ? 'Reviewed: the diff is folded. ' : generatedNote(f));
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
  } else if (bigDiff(f) && !diffUi.bigOk.has(key)) {
    // Rendering it would hold the page for seconds: on request only,
    // and its patch is read then.
    const p = el('p', 'note big', `This diff has ${bigDiff(f).toLocaleString()} lines. `);
    const b = el('button', 'load-anyway', 'Load anyway');
    b.type = 'button';
    b.onclick = () => {
      diffUi.bigOk.add(key);
      ui.diffKey = '';
      renderDiff(csState());
    };
    p.append(b);
    pane.append(p);
    return;
  } else if (!patches.get(shown)) {
    // Read when first shown; drawn when it arrives, if still shown.
    pane.append(el('p', 'note loading', 'Loading the diff…'));
    patches.load(shown).then(() => {
      if (ui.diffKey !== key) return;
      ui.diffKey = '';
      renderDiff(csState());
    });
  } else if (patches.get(shown).error) {
    pane.append(el('p', 'note error', `The diff could not be read: ${patches.get(shown).error}`));
  } else {
    const patch = patches.get(shown).text;
    const big = bigDiff(f) > 0;
    const hunks = big ? parsePatch(patch) : pairWords(parsePatch(patch));
    diffUi.hunks = hunks;
    if (!big) withContext(f, hunks);
    if (hunks.length === 0 && emptyNote(f)) pane.append(el('p', 'note empty-mode', emptyNote(f)));
    else if (hunks.length === 0) pane.append(el('p', 'note', meta.fileType === 'text' ? mode ? 'No content change.' : 'No content change (name only).' : `No text diff (${meta.fileType}).`));
    else if (big) renderVirtualDiff(pane, hunks);
    else if (ui.full && f.edit?.after && !readOnly) {
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
    const uri = g && shownPatchUri(g);
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
  const patch = shownPatchUri(f); // its hunks are the ones the counts are of
  const k = `${ui.cs?.uri}\n${f.id}`;
  let e = diffUi.expand.get(k);
  if (!e || e.patch !== patch) {
    e = { patch, above: [], below: [], lines: null };
    diffUi.expand.set(k, e);
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
    hunkLine(tr).prepend(box);
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
  return list.length === diffUi.hunks.length ? list[hi] : null;
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
// hunkLine is the one line of a hunk's header row (diff.js hunkRow)
// that holds its text and its buttons.
function hunkLine(tr) {
  return tr.querySelector('.hunkline');
}

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
    const h = diffUi.hunks[hi];
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
      // Undo this hunk and tell the agent why (undowhy.js).
      const why = el('button', 'hunk-undo-why danger', 'Undo, tell why');
      why.type = 'button';
      why.onclick = () => undoWithReason(hi);
      box.append(badge, label, keep, unstage, undo, why);
      hunkLine(tr).append(box);
    }
    // A diff that is not the changeset's has none of its hunks: no
    // controls, no staged mark, no author of the changeset's hunks.
    const readOnly = linesReadOnly(f);
    box.hidden = readOnly;
    const [badge, label, keep, unstage, undo] = box.children;
    const inIndex = !readOnly && stagedRange(f, h, hi);
    const unst = rangeOp('unstage');
    tr.classList.toggle('staged', !!inIndex);
    badge.hidden = !inIndex;
    unstage.hidden = !inIndex || !unst;
    unstage.disabled = off(unst);
    unstage.title = unst?.status === 'disabled' ? `Unstage: ${disabledReason()}` : 'Unstage this hunk: take its lines out of the index';
    const info = readOnly ? null : hunkEntry(f, h, hi);
    const by = info?.author ? (info.author === 'mixed' && Array.isArray(info.authors) ? info.authors : [info.author]) : null;
    const sigBy = by ? by.join(' ') : '';
    const authored = td.querySelector('.hunk-author');
    if ((authored?.dataset.authors || '') !== sigBy) {
      authored?.remove();
      if (by) box.parentNode.insertBefore(authorBadge(by), box);
    }
    // With an author chosen, the others' hunks stay listed, set apart.
    const apart = !!(chosenAuthor() && by && !by.includes(chosenAuthor()));
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
    const why = box.children[5];
    why.hidden = undo.hidden || !canComment();
    why.disabled = !canUndoWithReason(hi);
    why.title = rev?.status === 'disabled' ? `Undo: ${disabledReason()}` : 'Undo this hunk and tell the agent why: the reason is left as a comment on its lines (U)';
  }
}

// hunkTarget is what an operation on hunk hi of the diff shown takes: the
// file, the range operation revert, its target (the hunk's changed lines)
// and what a confirmation says of it; null when it cannot be reverted.
function hunkTarget(hi) {
  const op = rangeOp('revert');
  const f = currentFile();
  const h = diffUi.hunks[hi];
  const r = h && hunkRange(h);
  if (!op || !f || !r) return null;
  return { f, op, path: pathOf(f), facts: hunkFacts(h, hi), target: { kind: 'range', resource: f.edit?.after?.uri || f.id, side: 'after', range: r } };
}

// setHunkReviewed marks hunk hi of the file shown, on the daemon; the file
// comes back with the mark, to every client.
async function setHunkReviewed(hi, reviewed) {
  const f = currentFile();
  const entry = f && hunkEntry(f, diffUi.hunks[hi], hi);
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
  const h = diffUi.hunks[hi];
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
  const h = diffUi.hunks[hi];
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
  const show = !!ui.lastSelection && !linesReadOnly(currentFile()) && (rev || stage || comment);
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
  const touched = diffUi.hunks.map((h, hi) => (hunkRange(h) ? hunkFacts(h, hi) : null))
    .filter((h) => h && h.last >= r.start.line + 1 && h.first <= r.end.line + 1);
  const confirm = id === 'revert' ? revertHunksText(ui.cs?.kind, pathOf(f), touched, { first: r.start.line + 1, last: r.end.line + 1 }) : null;
  describe(target, confirm, `${lines} of ${pathOf(f)}`);
  invoke(op, target, `${op.label} the hunks at ${lines} of ${pathOf(f)}?`);
}

// copyPath copies the shown file's path in its working directory (a
// renamed file's new one). Where the page is no secure context (plain
// http to another machine) the clipboard API is missing, and the older
// copy command does it.
async function copyPath() {
  const f = currentFile();
  if (!f) return;
  const path = fileKey(f);
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(path);
    } else {
      const ta = el('textarea');
      ta.value = path;
      ta.setAttribute('aria-hidden', 'true');
      ta.className = 'offscreen';
      document.body.append(ta);
      ta.select();
      const ok = document.execCommand('copy');
      ta.remove();
      if (!ok) throw new Error('the browser refused to copy');
    }
    toast(`Copied ${path}`);
  } catch (e) {
    toast(`Cannot copy the path: ${errText(e)}`, 'error');
  }
}

onDiffModeChange(() => {
  ui.diffKey = '';
  renderDiff(csState());
  updateRangeOps();
});

export { copyPath, hunkTarget, invokeRange, renderDiff, toggleHunk, updateRangeOps };
