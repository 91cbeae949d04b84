// Drafts: a file an agent is still writing, which the daemon shows in the
// uncommitted changes with _meta.changesetd.draft {draft, linesWritten,
// linesTotal?, percent?} until the real file replaces it. Its row is
// marked "draft" in words, and its diff ends with how far the writing has
// come in place of the lines not written yet.

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// draftOf is a file's draft progress, or null when it is the real file.
export function draftOf(f) {
  const d = f?._meta?.changesetd?.draft;
  return d && d.draft ? d : null;
}

// progressText words a draft's progress.
export function progressText(d) {
  const n = d.linesWritten ?? 0;
  const lines = `${n.toLocaleString()} line${n === 1 ? '' : 's'}`;
  if (d.linesTotal === undefined || d.linesTotal === null) return `Draft: ${lines} written so far; the agent is still writing this new file.`;
  const pct = d.percent ?? (d.linesTotal ? Math.round((100 * n) / d.linesTotal) : 100);
  return `Draft: ${lines} of ${d.linesTotal.toLocaleString()} written (${pct}%); the rest of the file is shown as it was until the agent writes it.`;
}

// draftBadge is the row's "draft" marker, or null.
export function draftBadge(f) {
  const d = draftOf(f);
  if (!d) return null;
  const b = el('span', 'dbadge', 'draft');
  b.title = progressText(d);
  b.setAttribute('aria-label', b.title);
  return b;
}

// showDraft puts the progress of f's draft at the end of the diff pane,
// or takes it away once f is the real file. It is safe to call after
// every render: it keeps one bar, kept last.
export function showDraft(pane, f) {
  let bar = pane.querySelector(':scope > .draft-progress');
  const d = draftOf(f);
  if (!d) {
    bar?.remove();
    return;
  }
  if (!bar) {
    bar = el('div', 'draft-progress');
    bar.setAttribute('role', 'status');
    const meter = el('progress');
    const text = el('span', 'draft-text');
    bar.append(meter, text);
  }
  const meter = bar.querySelector('progress');
  if (d.linesTotal) {
    meter.max = d.linesTotal;
    meter.value = Math.min(d.linesWritten ?? 0, d.linesTotal);
  } else {
    meter.removeAttribute('value'); // a new file: how much is to come is unknown
  }
  const text = progressText(d);
  meter.setAttribute('aria-label', text);
  bar.querySelector('.draft-text').textContent = text;
  if (pane.lastElementChild !== bar) pane.append(bar);
}
