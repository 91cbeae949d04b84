// The file list: the files of the changeset as a tree of folders,
// filtered by path and author, virtual when long.

import { draftBadge } from './drafts.js';
import { generatedBadge } from './fileinfo.js';
import { invoke, setReviewed } from './intent.js';
import { $, el, remember, ui } from './page.js';
import { csState, fileKey, filesOf, INDEX_LABEL, INDEX_TITLE, indexState, modeChange, OP_LABEL, operationOf, pathOf, relPath } from './selectors.js';
import { opButton } from './view-changeset.js';
import { threadsOn } from './view-comments.js';
import { renderDiff } from './view-diff.js';

// The file list's own state.
const list = {
  filter: '', // the path filter's text
  author: '', // the author filter: an author of package attrib's, '' for everyone
  folded: new Set(), // folders of the file tree the reader folded
  files: [], // the files listed
  active: '', // the row that is the list's one tab stop (itemKey), '' for the selected file's
};

// itemKey names a row of the tree: a file by its id, a folder by its path.
function itemKey(it) {
  return it.file ? 'f:' + it.file.id : 'd:' + it.dir;
}

// chosenAuthor is the author the list is filtered by, '' for everyone.
function chosenAuthor() {
  return list.author;
}

// A list longer than this is virtual: only the rows in view (and a few
// around them) are in the document, each ROW_PX high.
const VIRTUAL_FILES = 200;
const ROW_PX = 28;
const OVERSCAN = 10;

// Where the list is scrolled and how high it is, kept from its scroll
// events and a ResizeObserver (wireFileList): reading them from the
// element would lay the page out in the middle of each render. Until
// the list is measured, the window's height stands for its own.
const box = { top: 0, height: 0 };

function boxHeight() {
  return box.height || innerHeight;
}

function scrollListTo(top) {
  $('files').scrollTop = top;
  box.top = Math.max(0, top);
}

// rowCache keeps each file's row while the file object (which the
// reducer replaces only when the file changed) and what the row shows of
// the page's state stay the same.
let rowCache = new WeakMap();

// visibleFiles is the sorted files the path filter lets through.
function visibleFiles(s) {
  const all = filesOf(s);
  const q = list.filter.trim().toLowerCase();
  const who = list.author;
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
  const seen = authorsOf(filesOf(s));
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
    sel.value = seen.includes(list.author) ? list.author : '';
  }
  sel.hidden = seen.length === 0 || (seen.length === 1 && seen[0] === 'unknown');
  $('author-note').hidden = !(seen.length === 1 && seen[0] === 'unknown');
  renderAuthorOps(s);
}

// authorsOf lists the authors of files in the order they first appear,
// recomputed only when the files change (the sorted list is a new array
// then).
let authorsCache = { files: null, seen: [] };
function authorsOf(files) {
  if (authorsCache.files !== files) {
    const seen = new Set();
    for (const f of files) for (const a of authorsOfFile(f)) seen.add(a);
    authorsCache = { files, seen: [...seen] };
  }
  return authorsCache.seen;
}

// The operations by author act on the author chosen in the filter: its
// hunks only, everyone else's left as they are.
const AUTHOR_OPS = { stageAuthor: 'Stage', revertAuthor: 'Revert' };

function renderAuthorOps(s) {
  const box = $('author-ops');
  box.replaceChildren();
  const who = list.author;
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
  const fold = [...list.folded].join('\n');
  if (treeCache.files !== files || treeCache.fold !== fold) treeCache = { files, fold, items: treeItems(files) };
  return treeCache.items;
}

// dirRowFor is the folder's row, the same node while it shows the same.
const dirCache = new Map();
function dirRowFor(it, i) {
  const sig = [it.n, it.added, it.removed, it.depth, list.folded.has(it.dir), i].join();
  const hit = dirCache.get(it.dir);
  if (hit && hit.sig === sig) return hit.li;
  const li = dirRow(it);
  dirCache.set(it.dir, { sig, li });
  return li;
}

// listFiles lays the list out from the state, with no work on the
// document: the files shown, the selection (a selected file gone,
// reverted or committed, gives way to the one that took its place, as
// after a delete in a list) and the tree's rows (ui.items).
function listFiles(s) {
  const files = visibleFiles(s);
  const at = files.findIndex((f) => f.id === ui.file);
  if (at >= 0) ui.fileAt = at;
  else if (files.length) ui.file = files[Math.min(ui.fileAt || 0, files.length - 1)].id;
  else ui.file = null;
  list.files = files;
  ui.items = treeOf(files);
  return files;
}

function renderFiles(s) {
  listFiles(s);
  drawFiles(s);
}

// drawFiles draws the list as listFiles laid it out.
function drawFiles(s) {
  const ul = $('files');
  const all = filesOf(s);
  const files = list.files;
  $('filter-count').textContent = list.filter.trim() || list.author ? `${files.length} of ${all.length}` : '';
  renderAuthorFilter(s);
  const items = ui.items;
  const virtual = items.length > VIRTUAL_FILES;
  ul.classList.toggle('virtual', virtual);
  if (s && files.length === 0 && s.status === 'ready') {
    ul.setAttribute('role', 'list');
    ul.replaceChildren(el('li', 'muted empty', list.filter.trim() ? 'No file matches the filter.' : 'No changes.'));
    return;
  }
  ul.setAttribute('role', 'tree');
  let from = 0;
  let to = items.length;
  if (virtual) {
    const h = boxHeight();
    from = Math.max(0, Math.floor(box.top / ROW_PX) - OVERSCAN);
    to = Math.min(items.length, Math.ceil((box.top + h) / ROW_PX) + OVERSCAN);
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
  if (!same) {
    // A row replaced (the file changed, or was opened) keeps the focus
    // it had.
    const had = ul.contains(document.activeElement) ? document.activeElement.dataset.key : '';
    ul.replaceChildren(...rows);
    if (had && !ul.contains(document.activeElement)) rows.find((r) => r.dataset.key === had)?.focus();
  }
  rove(ul, from, to);
}

// rove makes one row of the tree its tab stop: the active one (the
// selected file's unless the arrows moved elsewhere), or, when that is
// not in the document (gone from the tree, folded away, a virtual list
// scrolled away), the first row shown. Every other row and control in
// the list is reached by the arrows.
function rove(ul, from, to) {
  const want = list.active || (ui.file ? 'f:' + ui.file : '');
  let stop = want ? [...ul.children].find((li) => li.dataset.key === want) : null;
  if (!stop && to > from) stop = ul.querySelector('li[data-key]');
  for (const li of ul.children) {
    if (li.dataset.key) li.tabIndex = li === stop ? 0 : -1;
  }
}

// moveTo makes item i of the tree the active row, in view and focused.
function moveTo(i) {
  const items = ui.items || [];
  if (!items.length) return;
  i = Math.max(0, Math.min(items.length - 1, i));
  // The row to focus is named before rendering: a render that replaces
  // the focused row (a review tick's echo, say) gives that row the focus
  // back, and its focusin sets list.active to it.
  const key = itemKey(items[i]);
  list.active = key;
  const ul = $('files');
  if (ul.classList.contains('virtual')) {
    const top = i * ROW_PX;
    if (top < box.top) scrollListTo(top);
    else if (top + ROW_PX > box.top + boxHeight()) scrollListTo(top + ROW_PX - boxHeight());
  }
  renderFiles(csState());
  const li = [...ul.children].find((r) => r.dataset.key === key);
  li?.focus();
  if (!ul.classList.contains('virtual')) li?.scrollIntoView({ block: 'nearest' });
}

// onTreeKey moves in the tree as a tree does: Up and Down row by row,
// Home and End to the ends, Right opens a folder or enters it, Left
// closes it or goes to the folder above; Enter opens a file or folds and
// unfolds a folder, and Space ticks a file reviewed (where the changeset
// has review flags; else it opens it), so that the boxes, which are no
// tab stops, are reached without the single-key shortcuts too.
function onTreeKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const li = e.target.closest?.('li[data-key]');
  if (!li || e.target !== li) return;
  const items = ui.items || [];
  const i = items.findIndex((it) => itemKey(it) === li.dataset.key);
  if (i < 0) return;
  const it = items[i];
  const folded = it.dir !== undefined && list.folded.has(it.dir);
  switch (e.key) {
    case 'ArrowDown': moveTo(i + 1); break;
    case 'ArrowUp': moveTo(i - 1); break;
    case 'Home': moveTo(0); break;
    case 'End': moveTo(items.length - 1); break;
    case 'ArrowRight':
      if (it.file) return;
      if (folded) toggleDir(it.dir); else moveTo(i + 1);
      break;
    case 'ArrowLeft': {
      if (it.dir !== undefined && !folded) {
        toggleDir(it.dir);
        break;
      }
      const parent = items.slice(0, i).findLastIndex((x) => x.dir !== undefined && x.depth === it.depth - 1);
      if (parent < 0) return;
      moveTo(parent);
      break;
    }
    case ' ':
      if (it.file && ui.cs?.review) {
        setReviewed(it.file.id, !it.file.reviewed);
        break;
      }
    // falls through: Space opens where there is nothing to tick
    case 'Enter':
      if (it.file) selectFile(it.file.id);
      else toggleDir(it.dir);
      break;
    default:
      return;
  }
  e.preventDefault();
  e.stopPropagation();
}

// toggleDir folds or unfolds a folder of the tree, its row keeping the
// focus.
function toggleDir(dir) {
  if (list.folded.has(dir)) list.folded.delete(dir); else list.folded.add(dir);
  list.active = 'd:' + dir;
  renderFiles(csState());
  $('files').querySelector(`li.dir[data-dir="${CSS.escape(dir)}"]`)?.focus();
}

// treeItems lays the sorted files out as a tree: a row per folder, with
// the number of changed files under it and their counts, above its files
// and subfolders; the contents of a folded folder are left out.
//
// One pass: the files are sorted by path, so the files under a folder
// are one run of them. The folders of the file at hand are open, each
// with its row, whose counts grow with every file under it; a folder's
// row is in the list before its files, and complete once the run ends.
// The page builds this tree on its first view, for every changed file:
// a path is split once per folder change, not once per file and folder.
function treeItems(files) {
  const items = [];
  let dir = null; // the folder of the previous file, '' at the top
  let names = []; // its path, one name a level
  const open = []; // the rows of its folders, outermost first
  let hidden = Infinity; // the depth of the outermost folded open folder
  for (const f of files) {
    const key = fileKey(f);
    const cut = key.lastIndexOf('/');
    const d = cut < 0 ? '' : key.slice(0, cut);
    if (d !== dir) {
      const parts = d === '' ? [] : d.split('/');
      let common = 0;
      while (common < parts.length && common < names.length && parts[common] === names[common]) common++;
      open.length = common;
      hidden = Infinity;
      for (let i = 0; i < common; i++) {
        if (list.folded.has(open[i].dir)) {
          hidden = i;
          break;
        }
      }
      for (let i = common; i < parts.length; i++) {
        const it = { dir: i === 0 ? parts[0] : open[i - 1].dir + '/' + parts[i], name: parts[i], depth: i, n: 0, added: 0, removed: 0 };
        open.push(it);
        if (i <= hidden) items.push(it);
        if (i < hidden && list.folded.has(it.dir)) hidden = i;
      }
      dir = d;
      names = parts;
    }
    const diff = f.edit?.diff;
    const added = diff?.added || 0;
    const removed = diff?.removed || 0;
    for (const it of open) {
      it.n++;
      it.added += added;
      it.removed += removed;
    }
    if (hidden === Infinity) items.push({ file: f, depth: names.length });
  }
  return items;
}

function dirRow(it) {
  const li = el('li', 'dir' + (list.folded.has(it.dir) ? ' folded' : ''));
  li.dataset.dir = it.dir;
  li.dataset.key = itemKey(it);
  li.style.setProperty('--depth', String(it.depth));
  li.tabIndex = -1;
  li.setAttribute('role', 'treeitem');
  li.setAttribute('aria-level', String(it.depth + 1));
  li.setAttribute('aria-expanded', String(!list.folded.has(it.dir)));
  li.title = `${it.dir}/: ${it.n} changed file${it.n === 1 ? '' : 's'}`;
  li.append(el('span', 'twisty', list.folded.has(it.dir) ? '▸' : '▾'), el('span', 'dname', it.name + '/'),
    dirCount(it));
  li.onclick = () => toggleDir(it.dir);
  return li;
}

// dirCount is a folder's count: its files (left out where the list is
// narrow) and their lines added and removed.
function dirCount(it) {
  const c = el('span', 'dcount muted');
  c.append(el('span', 'dfiles', `${it.n} file${it.n === 1 ? '' : 's'} · `), `+${it.added} −${it.removed}`);
  return c;
}

// nameInto writes a file's name into span so that a row too narrow for
// it cuts the middle, not the end, which tells files of one prefix apart
// (handler_wi…_042.go): the last characters stay whole.
const NAME_TAIL = 8;

function nameInto(span, name) {
  if (name.length <= NAME_TAIL * 2) {
    span.textContent = name;
    return;
  }
  span.replaceChildren(el('span', 'ph', name.slice(0, -NAME_TAIL)), el('span', 'pt', name.slice(-NAME_TAIL)));
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
    li.style.setProperty('--depth', String(depth));
    const p = li.querySelector('.path');
    if (operationOf(f) !== 'move') nameInto(p, fileKey(f).slice(fileKey(f).lastIndexOf('/') + 1));
    p.title = pathOf(f);
  }
  li.setAttribute('aria-level', String(depth + 1));
  rowCache.set(f, { sig, li });
  return li;
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
    cb.tabIndex = -1; // the row is the tab stop; x or a click ticks it
    cb.onclick = (e) => {
      e.stopPropagation();
      setReviewed(f.id, cb.checked);
    };
    li.append(cb);
  }
  const op = operationOf(f);
  const name = el('span', 'path');
  nameInto(name, pathOf(f));
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
  const gen = generatedBadge(f);
  if (gen) c.prepend(gen);
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
  // A row of the tree (onTreeKey): the arrows reach it, Enter opens it.
  li.dataset.key = 'f:' + f.id;
  li.tabIndex = -1;
  li.setAttribute('role', 'treeitem');
  li.setAttribute('aria-selected', f.id === ui.file ? 'true' : 'false');
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
  if (top < box.top) scrollListTo(top);
  else if (top + ROW_PX > box.top + boxHeight()) scrollListTo(top + ROW_PX - boxHeight());
}

function selectFile(id) {
  if (ui.file !== id && ui.composer?.key === 'new') ui.composer = null;
  ui.file = id;
  list.active = '';
  remember();
  const s = csState();
  // The rows' layout is the last render's: only the selection moved, so
  // the list scrolls first and renders once, at its new place.
  showSelected();
  renderFiles(s);
  renderDiff(s);
}

// wireFileList listens to the list's own inputs: the path and author
// filters.
function wireFileList() {
  const ul = $('files');
  ul.addEventListener('scroll', () => { box.top = ul.scrollTop; }, { passive: true });
  new ResizeObserver(([e]) => {
    const grew = e.contentRect.height > boxHeight();
    box.height = e.contentRect.height;
    // Rows rendered for a shorter list leave the new room empty.
    if (grew && ul.classList.contains('virtual')) renderFiles(csState());
  }).observe(ul);
  $('files').addEventListener('keydown', onTreeKey);
  $('files').addEventListener('focusin', (e) => {
    const key = e.target.dataset?.key;
    if (!key || e.target.parentElement !== $('files')) return;
    list.active = key;
    for (const li of $('files').children) if (li.dataset.key) li.tabIndex = li === e.target ? 0 : -1;
  });
  $('filter').addEventListener('input', () => {
    list.filter = $('filter').value;
    scrollListTo(0);
    renderFiles(csState());
    renderDiff(csState());
  });
  $('author-filter').addEventListener('change', () => {
    list.author = $('author-filter').value;
    scrollListTo(0);
    renderFiles(csState());
    renderDiff(csState());
  });
  $('filter').addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      $('filter').value = '';
      list.filter = '';
      renderFiles(csState());
      $('filter').blur();
    } else if (e.key === 'Enter') {
      $('filter').blur();
    }
  });
}

export { AUTHOR_OPS, authorBadge, chosenAuthor, drawFiles, listFiles, renderFiles, selectFile, wireFileList };
