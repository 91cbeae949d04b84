// What the person asks for goes to the daemon through intent(), with the
// versions that were on the screen, and what the confirmation says of it.

import { doneText, revertFileText, rewindText } from './confirm.js';
import { confirmDialog, errText, plain, toast, ui } from './page.js';
import { csState, pathOf } from './selectors.js';
import { renderChangeset } from './view-changeset.js';
import { turnName } from './view-comments.js';

// Texts for an invocation on a file or lines, said in its own terms
// rather than the daemon's one text for the whole changeset (see
// confirm.js): the target object carries them to confirmText and
// doneNote.
const described = new WeakMap();

function describe(target, confirm, done) {
  described.set(target, { confirm, done });
}

// confirmText is what the confirmation of op on target says.
function confirmText(op, target, what) {
  const d = target && described.get(target);
  if (d?.confirm) return d.confirm;
  const s = csState();
  if (op.id === 'revert' && target?.kind === 'resource') {
    const f = s?.files?.find((x) => x.edit?.after?.uri === target.resource || x.edit?.before?.uri === target.resource || x.id === target.resource);
    if (f) {
      return revertFileText(ui.cs?.kind, {
        path: pathOf(f), created: !f.edit?.before, deleted: !f.edit?.after,
        added: f.edit?.diff?.added ?? 0, removed: f.edit?.diff?.removed ?? 0,
      });
    }
  }
  if (op.id === 'revert' && !target && (ui.cs?.turn || ui.cs?.after)) {
    const files = (s?.files || []).map((f) => ({ path: pathOf(f), created: !f.edit?.before }));
    const label = ui.cs.turn ? turnName(ui.cs.turn) : `the turns after ${turnName(ui.cs.before || 'baseline')} up to ${turnName(ui.cs.after)}`;
    return rewindText(label, files, plain(op.confirmation));
  }
  return [what, plain(op.confirmation)].filter(Boolean).join('\n\n');
}

// doneNote is the note after op on target succeeded.
function doneNote(op, target, message) {
  return doneText(op, target, message, target && described.get(target)?.done);
}

// ---- intents: what the person asks for, on the versions shown ---------

// shownVersions is what the page shows now of the changeset's files ids
// (every file when ids is omitted): the changeset's view stamp and each
// file's content nonces. An intent takes it when the person acts, before
// any confirmation, so the daemon checks what was on the screen.
function shownVersions(ids) {
  const s = csState();
  const versions = {};
  for (const f of s?.files || []) {
    if (ids && !ids.includes(f.id)) continue;
    versions[f.id] = { before: f.edit?.before?.content?.nonce || '', after: f.edit?.after?.content?.nonce || '' };
  }
  const shown = { versions };
  const view = s?._meta?.changesetd?.view;
  if (typeof view === 'string') shown.view = view;
  return shown;
}

// targetFiles is the ids of the files a target resource names: the file,
// or the files of a directory.
function targetFiles(resource) {
  const files = csState()?.files || [];
  const one = files.filter((f) => f.id === resource || f.edit?.after?.uri === resource || f.edit?.before?.uri === resource);
  if (one.length) return one.map((f) => f.id);
  const dir = resource.replace(/\/$/, '') + '/';
  return files.filter((f) => f.id.startsWith(dir)).map((f) => f.id);
}

// intent sends one thing the person asked for with the versions shown when
// they asked (shownVersions): an operation ({op, target, meta}), a review
// flag ({review: {files, reviewed}}), a hunk's mark ({hunks: {file, ids,
// reviewed}}) or an annotations action ({annotation}; shown is null for
// one that anchors nothing, a reply or a resolve). Every operation,
// review flag and comment of the page goes through here, so the daemon
// acts on exactly what was on the screen or refuses, naming the files
// that changed.
function intent(shown, what) {
  if (what.annotation) {
    const a = what.annotation;
    return ui.client.dispatch(ui.ann, shown ? { ...a, _meta: { ...a._meta, ...shown } } : a);
  }
  if (what.review) {
    return ui.client.dispatch(ui.cs.uri, { type: 'changeset/filesReviewChanged', files: what.review.files, reviewed: what.review.reviewed, _meta: shown });
  }
  if (what.hunks) {
    const h = what.hunks;
    return ui.client.request('x-changesetd/hunksReviewChanged', { channel: ui.cs.uri, file: h.file, hunks: h.ids, reviewed: h.reviewed, _meta: shown });
  }
  const params = { channel: ui.cs.uri, operationId: what.op, _meta: { ...what.meta, ...shown } };
  if (what.target) params.target = what.target;
  return ui.client.request('invokeChangesetOperation', params);
}

// invoke runs an operation, asking first when it carries a confirmation.
// Its running/error status arrives in the changeset state.
async function invoke(op, target, what, meta) {
  const shown = shownVersions(target ? targetFiles(target.resource) : undefined);
  if (op.confirmation !== undefined && op.confirmation !== null) {
    const text = confirmText(op, target, what);
    if (!(await confirmDialog(text, op.label))) return;
  }
  try {
    const res = await intent(shown, { op: op.id, target, meta });
    if (res?.message) toast(doneNote(op, target, plain(res.message)));
  } catch (e) {
    toast(`${op.label} failed: ${errText(e)}`, 'error');
  }
}

function setReviewed(id, reviewed) {
  if (!ui.cs) return;
  ui.unfolded.delete(id);
  try {
    intent(shownVersions([id]), { review: { files: [id], reviewed } });
  } catch (e) {
    toast(`Not connected: the review flag was not saved (${errText(e)})`, 'error');
    renderChangeset();
  }
}

export { describe, intent, invoke, setReviewed, shownVersions };
