// The all-diffs mode: every listed file's diff in one scrolling pane, as a
// forge's "Files changed" page. It is virtual: only the files near the
// view are in the document and have their patches read; the others stand
// as space of an estimated height (from their counts) until scrolled to,
// then of the height measured. The file at the top of the view is the
// selected one, and selecting a file (a click in the list, j/k) scrolls to
// it.

import { pairWords, parsePatch, renderSplit, renderUnified } from './diff.js';
import { colour, languageOf, load } from './highlight.js';
import { setReviewed } from './intent.js';
import { $, el, patches, ui } from './page.js';
import { csState, fileKey, modeChange, OP_LABEL, operationOf, pathOf } from './selectors.js';

const ALL = 'changesetd.all';

const all = {
  on: localStorage.getItem(ALL) === 'on',
  cs: null, // the changeset shown
  items: null, // the list's rows the files were taken from (ui.items)
  files: [], // the files shown, in the list's order
  tops: [], // tops[i]: where file i starts; tops[files.length] the end
  measured: new WeakMap(), // file -> {sig, px}: its section's height once it was in the document
  laid: null, // what heights was computed from: {files, count, view, unfolded}
  count: 0, // bumped when every measurement is void (another width)
  measuredAt: -1, // the count the sections in the document were measured at
  heights: [], // heights[i]: file i's section, measured or estimated
  sections: new Map(), // file id -> {sig, node}: the sections in the document
  following: null, // the file the scroll selected last: no scroll to it
  frame: 0,
  width: 0, // the pane's, as last observed
  height: 0,
  top: 0, // the pane's scrollTop, kept from its scroll events: reading it would lay the page out
};

// The sizes an unread file is given: its header, a hunk's header and
// context, a line (the diff's 12.5 px type at a line height of 1.5).
const HEAD_PX = 36;
const LINE_PX = 19;
const NOTE_PX = 44;
const HUNK_ROWS = 7;
// Files this far (px) above and below the view are rendered too.
const MARGIN = 600;
// Too long to render among the others: opened alone, on request.
const BIG = 5000;

function allOn() {
  return all.on;
}

function toggleAll() {
  all.on = !all.on;
  localStorage.setItem(ALL, all.on ? 'on' : 'off');
  all.following = null;
  all.top = 0; // a pane shown again starts at its top, before the jump to the file
  ui.diffKey = '';
  const pane = $('alldiff');
  pane.replaceChildren();
  all.sections.clear();
  showMode();
  // The file read so far stays the one shown, in either mode.
  renderFromState();
}

// showMode shows the one pane of the mode and its controls.
function showMode() {
  $('diffpane').classList.toggle('all-mode', all.on);
  $('alldiff').hidden = !all.on;
  $('diff').hidden = all.on;
  const b = $('all-toggle');
  b.setAttribute('aria-pressed', String(all.on));
  b.textContent = all.on ? 'One file' : 'All files';
  if (all.on) $('range-ops').hidden = true;
}

let renderFromState = () => {};

// wireAll listens to the pane's scroll and the mode's button; render is
// what draws the diff pane from the state (renderDiff).
function wireAll(render) {
  renderFromState = () => render(csState());
  $('all-toggle').onclick = toggleAll;
  $('alldiff').addEventListener('scroll', (e) => {
    all.top = e.target.scrollTop;
    if (all.frame) return;
    all.frame = requestAnimationFrame(() => {
      all.frame = 0;
      syncFiles();
      draw(null);
      follow();
    });
  }, { passive: true });
  new ResizeObserver(([e]) => {
    const w = Math.round(e.contentRect.width);
    if (w && w === all.width) all.height = e.contentRect.height;
    if (!w || w === all.width) return;
    // Lines wrap anew: what was measured no longer holds.
    const first = !all.width;
    all.width = w;
    all.height = e.contentRect.height;
    if (first) return; // what was measured was measured at this width
    all.measured = new WeakMap();
    all.count++;
    schedule();
  }).observe($('alldiff'));
  showMode();
}

// The selection follows the scroll: the file at the top of the view.
let select = null;
function onFollow(fn) {
  select = fn;
}

function follow() {
  const i = fileAt(all.top + 1);
  const f = all.files[i];
  if (!f || f.id === ui.file) return;
  all.following = f.id;
  select?.(f.id);
}

// fileAt is the index of the file whose section holds offset y.
function fileAt(y) {
  let lo = 0;
  let hi = all.files.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (all.tops[mid] <= y) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// renderAll draws the mode from state s: called wherever the single diff
// would be (renderDiff).
function renderAll(s) {
  if (all.cs !== ui.cs?.uri) {
    // Another changeset: from its top, its own sections.
    all.cs = ui.cs?.uri;
    all.top = 0;
    all.sections.clear();
    all.following = null;
  }
  syncFiles();
  const files = all.files;
  const $path = $('diff-path');
  const total = s?.files?.length || 0;
  $path.textContent = files.length === total ? `All ${total} files` : `${files.length} of ${total} files`;
  $('view-toggle').textContent = ui.view === 'split' ? 'Unified' : 'Side by side';
  if (ui.file && ui.file !== all.following) {
    // Selected elsewhere (the list, j/k): to its top.
    const i = files.findIndex((f) => f.id === ui.file);
    all.following = ui.file;
    if (i >= 0) {
      draw({ id: ui.file, offset: 0, at: all.tops[i] });
      return;
    }
  }
  draw(null);
}

// syncFiles takes the files the list shows now (its filters and folded
// folders apply), in its order.
function syncFiles() {
  if (all.items === ui.items) return;
  all.items = ui.items;
  all.files = (ui.items || []).filter((it) => it.file).map((it) => it.file);
  layout();
}

// heightSig is what a section's height depends on besides the file
// object (which the reducer replaces when the file changes).
function heightSig(f) {
  return folded(f) ? ui.view + ' folded' : ui.view;
}

function measured(f) {
  const m = all.measured.get(f);
  return m && m.sig === heightSig(f) ? m.px : undefined;
}

function folded(f) {
  return !!(f.reviewed && ui.cs?.review && !ui.unfolded.has(f.id));
}

function lines(f) {
  const d = f.edit?.diff;
  return (d?.added || 0) + (d?.removed || 0);
}

// readsPatch reports whether f's section shows its diff, read from its
// patchUri; otherwise it shows a note (folded, binary, too large, too
// long to render among the others) and reads nothing.
function readsPatch(f) {
  const meta = f._meta?.changesetd || {};
  return !folded(f) && meta.fileType !== 'binary' && !meta.tooLarge && !meta.patchOmitted && !!meta.patchUri && lines(f) <= BIG;
}

// estimate is the height a file's section will have, before it is read.
function estimate(f) {
  const meta = f._meta?.changesetd || {};
  if (!readsPatch(f)) return HEAD_PX + NOTE_PX;
  const hunks = Array.isArray(meta.hunks) ? Math.max(1, meta.hunks.length) : 1;
  const d = f.edit?.diff;
  const rows = ui.view === 'split' ? Math.max(d?.added || 0, d?.removed || 0) : lines(f);
  return HEAD_PX + (rows + hunks * HUNK_ROWS) * LINE_PX;
}

// layout computes where each file starts, again only when the files or
// a measurement changed.
function layout() {
  const l = all.laid;
  if (l && l.files === all.files && l.count === all.count && l.view === ui.view && l.unfolded === ui.unfolded.size) return;
  all.laid = { files: all.files, count: all.count, view: ui.view, unfolded: ui.unfolded.size };
  all.heights = all.files.map((f) => measured(f) ?? estimate(f));
  sum();
}

// sum adds the heights up into tops.
function sum() {
  const n = all.heights.length;
  const tops = new Array(n + 1);
  let y = 0;
  for (let i = 0; i < n; i++) {
    tops[i] = y;
    y += all.heights[i];
  }
  tops[n] = y;
  all.tops = tops;
}

// draw puts the sections near the view in the document, and spaces for
// the others. anchor is the file to keep in place ({id, offset}: its top
// offset px below the view's), else the first one in view is kept where
// it is, whatever the sections above it turn out to measure.
function draw(anchor) {
  const pane = $('alldiff');
  if (!all.on || pane.hidden) return;
  layout();
  const n = all.files.length;
  if (!anchor) {
    const i = n ? fileAt(all.top) : -1;
    if (i >= 0) anchor = { id: all.files[i].id, offset: all.tops[i] - all.top };
  } else if (anchor.at !== undefined) {
    all.top = anchor.at;
  }
  const top = all.top;
  const h = all.height || innerHeight;
  let from = n ? fileAt(Math.max(0, top - MARGIN)) : 0;
  let to = n ? fileAt(top + h + MARGIN) + 1 : 0;
  // The anchor is in the document, wherever the scroll was set.
  const ai = anchor ? all.files.findIndex((f) => f.id === anchor.id) : -1;
  if (ai >= 0) {
    from = Math.min(from, ai);
    to = Math.max(to, ai + 1);
  }
  const nodes = [spaceNode('before', all.tops[from] || 0)];
  const keep = new Map();
  for (let i = from; i < to; i++) {
    const f = all.files[i];
    const s = sectionFor(f);
    keep.set(f.id, s);
    nodes.push(s.node);
  }
  all.sections = keep;
  // Room after the last file: any file can be scrolled to the top.
  nodes.push(spaceNode('after', all.tops[n] - all.tops[to] + Math.max(0, h - HEAD_PX * 2)));
  const cur = pane.children;
  let same = cur.length === nodes.length;
  for (let i = 0; same && i < nodes.length; i++) same = cur[i] === nodes[i];
  if (!same) pane.replaceChildren(...nodes);
  // What the sections measure now replaces what they were given. The
  // same sections at the same width measure what they measured: reading
  // them again would only lay the page out, which each render of the
  // changeset made to do anew (the list, the counts).
  if (same && all.measuredAt === all.count) {
    if (Math.abs(all.top - wantTop(ai, anchor)) >= 1) scrollTo(ai, anchor);
    return;
  }
  all.measuredAt = all.count;
  let moved = false;
  for (let i = from; i < to; i++) {
    const f = all.files[i];
    const px = keep.get(f.id).node.offsetHeight;
    if (measured(f) !== px) all.measured.set(f, { sig: heightSig(f), px });
    if (all.heights[i] !== px) {
      all.heights[i] = px;
      moved = true;
    }
  }
  if (moved) {
    sum();
    nodes[0].style.height = all.tops[from] + 'px';
    nodes[nodes.length - 1].style.height = (all.tops[n] - all.tops[to] + Math.max(0, h - HEAD_PX * 2)) + 'px';
  }
  scrollTo(ai, anchor);
}

// wantTop is where the pane is to be scrolled to: the anchor (file ai)
// where it was, else the scroll as it was.
function wantTop(ai, anchor) {
  return ai >= 0 ? Math.max(0, all.tops[ai] - anchor.offset) : all.top;
}

// scrollTo scrolls the pane to wantTop.
function scrollTo(ai, anchor) {
  const pane = $('alldiff');
  const want = wantTop(ai, anchor);
  if (Math.abs(pane.scrollTop - want) >= 1) pane.scrollTop = want;
  all.top = pane.scrollTop;
}

const spaces = {};
function spaceNode(which, px) {
  let s = spaces[which];
  if (!s) {
    s = el('div', 'allspace');
    s.setAttribute('aria-hidden', 'true');
    spaces[which] = s;
  }
  s.style.height = Math.max(0, px) + 'px';
  return s;
}

// sectionFor is file f's section, the same node while it shows the same.
function sectionFor(f) {
  const meta = f._meta?.changesetd || {};
  const read = meta.patchUri ? patches.get(meta.patchUri) : null;
  const sig = [ui.view, folded(f), !!ui.cs?.review, meta.patchUri, !!read, meta.fileType, meta.tooLarge, meta.patchOmitted].join();
  const hit = all.sections.get(f.id);
  if (hit && hit.f === f && hit.sig === sig) return hit;
  if (hit && hit.sig === sig && hit.f !== f) {
    // The same diff, another review mark or index state: the header only.
    hit.node.replaceChild(header(f), hit.node.firstChild);
    hit.f = f;
    return hit;
  }
  const node = el('section', 'allfile');
  node.dataset.id = f.id;
  node.dataset.path = fileKey(f);
  node.setAttribute('aria-label', pathOf(f));
  node.append(header(f), body(f, meta, read));
  return { f, sig, node };
}

function header(f) {
  const h = el('div', 'allhead');
  if (ui.cs?.review) {
    const cb = el('input', 'review');
    cb.type = 'checkbox';
    cb.checked = !!f.reviewed;
    cb.title = 'Reviewed (x)';
    cb.setAttribute('aria-label', `Reviewed: ${fileKey(f)}`);
    cb.onchange = () => setReviewed(f.id, cb.checked);
    h.append(cb);
  }
  const op = operationOf(f);
  h.append(el('span', 'opkind ' + op, OP_LABEL[op] || op));
  const name = el('span', 'allpath', pathOf(f));
  h.append(name);
  const d = f.edit?.diff;
  if (d) {
    const c = el('span', 'counts');
    c.append(el('span', 'added', `+${d.added ?? 0}`), ' ', el('span', 'removed', `−${d.removed ?? 0}`));
    h.append(c);
  }
  const mode = modeChange(f);
  if (mode) h.append(el('span', 'muted', mode));
  const open = el('button', 'open-one linklike', 'Open alone');
  open.type = 'button';
  open.title = 'This file alone, with its hunks\' controls and comments (a)';
  open.onclick = () => {
    all.following = null;
    select?.(f.id);
    toggleAll();
  };
  h.append(open);
  return h;
}

function note(text) {
  return el('p', 'note', text);
}

function body(f, meta, read) {
  if (folded(f)) {
    const p = note('Reviewed: the diff is folded. ');
    const b = el('button', 'unfold', 'Show the diff');
    b.type = 'button';
    b.onclick = () => {
      ui.unfolded.add(f.id);
      renderFromState();
    };
    p.append(b);
    return p;
  }
  if (meta.fileType === 'binary') return note('Binary file: no text diff.');
  if (meta.tooLarge) return note('This file is too large to diff.');
  if (meta.patchOmitted || !meta.patchUri) return note('The diff of this file is too large to show.');
  if (lines(f) > BIG) return note(`This diff has ${lines(f).toLocaleString()} lines: open it alone to read it.`);
  if (!read) {
    // Read now that it is near the view; drawn when it arrives.
    const uri = meta.patchUri;
    patches.load(uri).then(() => {
      if (!all.on || !all.sections.get(f.id)) return;
      // The last diff the view waited for is drawn at once, not in the
      // next frame: the first screen is complete a frame sooner.
      if (allRead()) drawNow();
      else schedule();
    });
    const p = note('Loading the diff…');
    p.classList.add('loading');
    p.style.height = Math.max(NOTE_PX, estimate(f) - HEAD_PX) + 'px';
    return p;
  }
  if (read.error) return note(`The diff could not be read: ${read.error}`);
  const hunks = pairWords(parsePatch(read.text));
  if (!hunks.length) return note(meta.fileType === 'text' ? (modeChange(f) ? 'No content change.' : 'No content change (name only).') : `No text diff (${meta.fileType}).`);
  const t = ui.view === 'split' ? renderSplit(hunks) : renderUnified(hunks);
  const lang = languageOf(fileKey(f));
  if (lang) {
    // After the plain diff is painted: loading the highlighter is no
    // part of the first screen.
    requestAnimationFrame(() => setTimeout(() => {
      if (!t.isConnected) return;
      load(lang).then((hljs) => colour(hljs, lang, [...t.querySelectorAll('td.code')], () => t.isConnected),
        (e) => console.warn(`highlighting ${lang}: ${e.message}`));
    }, 0));
  }
  return t;
}

// allRead reports whether every section in the view has its patch (or
// needs none); those in the margin around it may still come.
function allRead() {
  const top = all.top;
  const bottom = top + (all.height || innerHeight);
  for (let i = fileAt(top); i >= 0 && i < all.files.length && all.tops[i] < bottom; i++) {
    const f = all.files[i];
    // A file too long to show here has a patchUri that is never read:
    // counted, it kept every first screen it was on waiting a frame.
    if (readsPatch(f) && !patches.get(f._meta.changesetd.patchUri)) return false;
  }
  return true;
}

function drawNow() {
  if (all.frame) cancelAnimationFrame(all.frame);
  all.frame = 0;
  syncFiles();
  draw(null);
}

// schedule redraws in the next animation frame, once however many
// patches arrive in it.
function schedule() {
  if (all.frame) return;
  all.frame = requestAnimationFrame(() => {
    all.frame = 0;
    syncFiles();
    draw(null);
  });
}

export { allOn, onFollow, renderAll, toggleAll, wireAll };
