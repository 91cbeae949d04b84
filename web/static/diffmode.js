// Which diff of a file the pane shows: the changeset's, the same with
// whitespace changes ignored, or only what changed since the reader marked
// the file reviewed. The daemon computes each (the file's patchUri with
// &ws=ignore, as git diff -w, or the patchUri its _meta.changesetd.sinceReview
// names); the page never rewrites a diff itself.
//
// The lines of the other two are not the changeset's hunks (the one ignores
// some changed lines, the other starts at another version), so comments on
// lines, Keep, Undo and the hunk marks are off in them, and the pane says so.
// Their new side is the file as it is, so existing threads show under
// their lines as in the changeset's diff.

import { $, el, ui } from './page.js';

const WS_KEY = 'changesetd.ignoreWhitespace';

const mode = {
  ws: localStorage.getItem(WS_KEY) === 'on',
  since: new Set(), // "changeset\nfile" the reader reads since their review
};

let rerender = () => {};

// onDiffModeChange sets what redraws the diff when the mode changes.
export function onDiffModeChange(f) {
  rerender = f;
}

function sinceKey(f) {
  return `${ui.cs?.uri}\n${f.id}`;
}

// sinceOffer is the patch URI of what changed since f was reviewed, when
// the daemon offers it.
function sinceOffer(f) {
  return f?._meta?.changesetd?.sinceReview?.patchUri || '';
}

function showingSince(f) {
  return !!sinceOffer(f) && mode.since.has(sinceKey(f));
}

// shownPatchUri is the URI of the patch the pane shows for f, "" when f
// has none.
export function shownPatchUri(f) {
  const base = showingSince(f) ? sinceOffer(f) : f?._meta?.changesetd?.patchUri;
  if (!base) return '';
  return mode.ws ? `${base}&ws=ignore` : base;
}

// diffModeKey is what of the mode changes the diff drawn for f.
export function diffModeKey(f) {
  return `${mode.ws ? 'w' : ''}${showingSince(f) ? 's' : ''}`;
}

// linesReadOnly reports whether the diff shown for f is not the
// changeset's, so its lines take no comment and no operation.
export function linesReadOnly(f) {
  return !!f && (mode.ws || showingSince(f));
}

// emptyNote is what the pane says when the diff shown for f has no hunk
// because of the mode, or "" when it is the changeset's own diff.
export function emptyNote(f) {
  if (showingSince(f)) return mode.ws ? 'Nothing but whitespace changed since your review.' : 'Nothing changed since your review.';
  // A file with no changed line (a rename, a mode change) says what it
  // says without the mode.
  const d = f?.edit?.diff;
  if (mode.ws && (d?.added || d?.removed)) return 'Only whitespace changed in this file: with whitespace ignored, nothing is left to show.';
  return '';
}

export function toggleWhitespace() {
  mode.ws = !mode.ws;
  localStorage.setItem(WS_KEY, mode.ws ? 'on' : 'off');
  rerender();
}

function button(cls, text, onclick) {
  const b = el('button', cls, text);
  b.type = 'button';
  b.onclick = onclick;
  return b;
}

// modeNotes puts above f's diff what it is when it is not the changeset's,
// and the offer of the changes since the review when there is one.
export function modeNotes(pane, f) {
  const ws = $('ws-toggle');
  if (ws) {
    ws.setAttribute('aria-pressed', String(mode.ws));
    ws.textContent = mode.ws ? 'Show whitespace' : 'Ignore whitespace';
  }
  if (!f) return;
  const offer = sinceOffer(f);
  const off = 'Comments on lines, Keep, Undo and hunk marks are off here: its lines are not the changeset\u2019s hunks.';
  if (showingSince(f)) {
    const p = el('p', 'note since-review', 'Changes since your review: from the version you marked reviewed to this one. ');
    p.append(el('span', 'muted', off + ' '), button('whole-diff', 'Whole diff', () => {
      mode.since.delete(sinceKey(f));
      rerender();
    }));
    pane.append(p);
  } else if (offer) {
    const p = el('p', 'note since-offer', 'Changed since you marked it reviewed. ');
    p.append(button('since-review', 'Changes since your review', () => {
      mode.since.add(sinceKey(f));
      rerender();
    }));
    pane.append(p);
  }
  if (mode.ws && f._meta?.changesetd?.fileType !== 'binary') {
    const p = el('p', 'note ws-ignored', 'Whitespace ignored (as git diff -w). ');
    p.append(el('span', 'muted', off + ' '), button('ws-show', 'Show whitespace', toggleWhitespace));
    pane.append(p);
  }
}
