// Data the views derive from the changeset state: paths, counts, the
// sorted files, each memoised on the objects the reducer replaces only
// when they change.

import { ui } from './page.js';

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

// totalsOf is the changeset's counts: files, lines added and removed,
// files reviewed and files with a staged change, in one pass, kept for
// the same list of files.
const totalsCache = new WeakMap();
function totalsOf(state) {
  const files = state?.files;
  if (!files) return { added: 0, removed: 0, files: 0, reviewed: 0, staged: 0 };
  let t = totalsCache.get(files);
  if (t) return t;
  let added = 0;
  let removed = 0;
  let reviewed = 0;
  let staged = 0;
  for (const f of files) {
    const d = f.edit?.diff;
    if (d) {
      added += d.added || 0;
      removed += d.removed || 0;
    }
    if (f.reviewed) reviewed++;
    if (INDEX_LABEL[indexState(f)]) staged++;
  }
  t = { added, removed, files: files.length, reviewed, staged };
  totalsCache.set(files, t);
  return t;
}

function workingDirs() {
  return ui.sessions.get(ui.session)?.workingDirectories || ui.client.state(ui.session)?.workingDirectories || NO_DIRS;
}
const NO_DIRS = [];

// basesOf is each working directory as a prefix ending in '/', kept
// per list of directories: relPath runs for every file of a changeset.
let bases = { dirs: null, list: [] };
function basesOf(dirs) {
  if (bases.dirs !== dirs) bases = { dirs, list: dirs.map((d) => (d.endsWith('/') ? d : d + '/')) };
  return bases.list;
}

function relPath(uri) {
  for (const base of basesOf(workingDirs())) {
    if (uri.startsWith(base)) {
      const rel = uri.slice(base.length);
      return rel.includes('%') ? decodeURIComponent(rel) : rel;
    }
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

function online() {
  return ui.client?.status === 'connected';
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

// modeChange is "mode 100755 → 100644" when the change sets another
// file mode (git's; a chmod, a file made a symbolic link), else "".
function modeChange(f) {
  const m = f._meta?.changesetd;
  return m?.oldMode && m?.newMode && m.oldMode !== m.newMode ? `mode ${m.oldMode} → ${m.newMode}` : '';
}

function currentFile() {
  return csState()?.files?.find((x) => x.id === ui.file) || null;
}

export { counts, csState, currentFile, dirName, fileKey, filesOf, INDEX_LABEL, INDEX_TITLE, indexState, modeChange, online, OP_LABEL, operationOf, pathOf, relPath, totalsOf };
