// Review comments: where a session's annotations show in a file's diff,
// and the DOM of a thread and of the box a comment is written in. Every
// text a person or the agent wrote goes into the page as textContent.

const CURRENT = 'changesetd/current';
const AUTHOR = 'changesetd/author';
const CREATED = 'changesetd/createdAt';
const SNAPSHOT = 'changesetd/snapshot';

// newId returns a random id for a new annotation or entry. It uses
// getRandomValues, which a page served over plain http from another
// machine has, where randomUUID is missing.
export function newId(prefix) {
  const b = new Uint8Array(10);
  crypto.getRandomValues(b);
  return prefix + '-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// plainText is an entry's text as plain text: a string as it is, and
// {markdown} without the markup that says how to render it. Code spans
// keep their content as written; strong emphasis is unwrapped only where
// markdown would render it, so identifiers such as __init__ or a*b*c keep
// their underscores and stars.
export function plainText(text) {
  if (typeof text === 'string') return text;
  if (!text || typeof text.markdown !== 'string') return '';
  const md = text.markdown
    .replace(/^```[^\n]*\n?/gm, '')
    .replace(/^ {0,3}#{1,6}\s+/gm, '')
    .replace(/^ {0,3}>\s?/gm, '');
  // Odd parts are code spans: their content is kept verbatim.
  return md.split(/`([^`]*)`/).map((part, i) => (i % 2 ? part : prose(part))).join('');
}

function prose(s) {
  return s
    .replace(/!?\[([^\]]*)\]\(([^)\s]*)[^)]*\)/g, (_, label, url) => (label && label !== url ? `${label} (${url})` : url))
    .replace(/\*\*(?=\S)([^]*?\S)\*\*/g, '$1')
    .replace(/(^|[^\w])__(?=\S)([^]*?\S)__(?!\w)/g, '$1$2');
}

export function isAgent(entry) {
  return entry?._meta?.[AUTHOR] === 'agent';
}

// wholeLines is the range of the zero-based lines first..last: from the
// start of the first to the start of the line after the last, the usual
// way to select whole lines.
export function wholeLines(first, last) {
  return { start: { line: first, character: 0 }, end: { line: last + 1, character: 0 } };
}

// lastLine is the last line a range touches: a range that ends at
// character 0 of a later line ends at the line before.
export function lastLine(r) {
  return r.end.character === 0 && r.end.line > r.start.line ? r.end.line - 1 : r.end.line;
}

// oldRange maps the new-side lines first..last (0-based) of a file's
// diff (hunks as parsePatch returns them) to the lines of its old side:
// lines the diff leaves alone map one to one, a selection that starts on
// an added line starts at the lines it replaced or where it was inserted,
// one that ends on an added line ends at the old line before it. Lines that are all new map to the
// empty range where they were inserted.
export function oldRange(hunks, first, last) {
  const at = (n, end) => {
    let delta = 0;
    for (const h of hunks) {
      const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(h.header);
      if (!m) continue;
      const oc = m[2] === undefined ? 1 : Number(m[2]);
      const nc = m[4] === undefined ? 1 : Number(m[4]);
      const os = oc === 0 ? Number(m[1]) + 1 : Number(m[1]);
      const ns = nc === 0 ? Number(m[3]) + 1 : Number(m[3]);
      if (n < ns) return n + delta;
      if (n < ns + nc) {
        let lastOld = os - 1;
        for (let i = 0; i < h.lines.length; i++) {
          const l = h.lines[i];
          if (l.new === n) {
            if (l.kind === 'ctx') return l.old;
            if (end) return lastOld;
            // Added lines that replace deleted ones start at those.
            let j = i;
            while (j > 0 && h.lines[j - 1].kind === 'add') j--;
            let k = j;
            while (k > 0 && h.lines[k - 1].kind === 'del') k--;
            if (k < j) return h.lines[k].old;
            const next = h.lines.slice(i + 1).find((x) => x.old !== null);
            return next ? next.old : lastOld + 1;
          }
          if (l.old !== null) lastOld = l.old;
        }
      }
      delta = os + oc - (ns + nc);
    }
    return n + delta;
  };
  const a = at(first + 1, false);
  const b = at(last + 1, true);
  if (b < a) return { start: { line: a - 1, character: 0 }, end: { line: a - 1, character: 0 } };
  return wholeLines(a - 1, b - 1);
}

// touchesAdded says whether any of the new-side lines first..last
// (0-based) of a file's diff is an added line: one the old side does not
// have, so oldRange cannot name it.
export function touchesAdded(hunks, first, last) {
  for (const h of hunks) {
    for (const l of h.lines) {
      if (l.kind === 'add' && l.new - 1 >= first && l.new - 1 <= last) return true;
    }
  }
  return false;
}

// linesLabel names a zero-based range's lines one-based, as the diff
// numbers them.
export function linesLabel(r) {
  if (!r) return 'Whole file';
  const a = r.start.line + 1;
  const b = lastLine(r) + 1;
  return a === b ? `Line ${a}` : `Lines ${a}–${b}`;
}

// placeThreads decides where each annotation on a file shows in a view
// of it. resources are the file's URIs (after and before); view is
// {live} for a view of the working tree, whose lines the daemon tracks in
// _meta["changesetd/current"], or {turn} for the version a turn produced.
// It returns the threads anchored to lines of the view ({a, range, note})
// and those on the file as a whole or on lines the view does not have
// ({a, note}).
export function placeThreads(annotations, resources, view, turnName) {
  const inline = [];
  const file = [];
  for (const a of annotations || []) {
    if (!resources.includes(a.resource)) continue;
    if (view.live) {
      const cur = a._meta?.[CURRENT];
      if (cur?.status === 'gone') {
        file.push({ a, note: a.range ? `${linesLabel(a.range)}: these lines are gone` : 'the file is gone' });
        continue;
      }
      const range = cur?.range || a.range;
      const note = cur?.status === 'edited' ? 'edited since' : cur?.status === 'moved' ? `moved from ${linesLabel(a.range).toLowerCase()}` : '';
      if (range) inline.push({ a, range, note }); else file.push({ a, note });
      continue;
    }
    if (a._meta?.[SNAPSHOT]) {
      file.push({ a, note: `${linesLabel(a.range)} of the working tree as it was when written` });
      continue;
    }
    if (a.turnId !== view.turn) {
      file.push({ a, note: `${linesLabel(a.range)} of ${turnName(a.turnId)}` });
      continue;
    }
    if (a.range) inline.push({ a, range: a.range, note: '' }); else file.push({ a, note: '' });
  }
  inline.sort((x, y) => lastLine(x.range) - lastLine(y.range));
  return { inline, file };
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function button(label, cls, onclick) {
  const b = el('button', cls, label);
  b.type = 'button';
  b.onclick = onclick;
  return b;
}

function when(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
}

// renderThread builds one annotation's thread: a <details> open while
// the thread is unresolved (unless the reader folded it), headed by the
// lines it is shown at (range; the annotation's own when undefined). on has
// reply(), resolve(bool) and toggle(open); composer is the reply box
// when one is open on this thread; pending says the daemon has not yet
// confirmed the last change.
export function renderThread(a, { range, note, open, pending, composer, on }) {
  const d = el('details', 'thread' + (a.resolved ? ' resolved' : '') + (pending ? ' pending' : ''));
  d.dataset.annotation = a.id;
  d.open = open;
  const sum = el('summary');
  sum.append(el('span', 'where', linesLabel(range === undefined ? a.range : range)));
  if (note) sum.append(el('span', 'tnote', note));
  const n = a.entries?.length || 0;
  sum.append(el('span', 'muted', `${n} comment${n === 1 ? '' : 's'}`));
  if (a.resolved) sum.append(el('span', 'tstate', 'Resolved'));
  if (pending) sum.append(el('span', 'muted', 'sending…'));
  d.append(sum);
  const ol = el('ol', 'entries');
  for (const e of a.entries || []) {
    const agent = isAgent(e);
    const li = el('li', 'entry' + (agent ? ' agent' : ''));
    li.dataset.entry = e.id;
    const head = el('div', 'ehead');
    head.append(el('span', 'author', agent ? 'agent' : 'reviewer'));
    const at = e._meta?.[CREATED];
    if (at) {
      const t = el('time', 'muted', when(at));
      t.dateTime = at;
      head.append(t);
    }
    li.append(head, el('p', 'etext', plainText(e.text)));
    ol.append(li);
  }
  d.append(ol);
  if (composer) {
    d.append(composer);
  } else {
    const acts = el('div', 'tactions');
    acts.append(button('Reply', 'reply', on.reply), button(a.resolved ? 'Re-open' : 'Resolve', a.resolved ? 'reopen' : 'resolve', () => on.resolve(!a.resolved)));
    d.append(acts);
  }
  // The toggle event comes a task later: a re-render in between would
  // build the thread from the old state. The click says it at once.
  sum.addEventListener('click', () => on.toggle(!d.open));
  d.addEventListener('toggle', () => on.toggle(d.open));
  return d;
}

// renderComposer builds the box a comment or reply is written in. draft
// is {text, error}; on has input(text), submit(text) and cancel().
// Ctrl+Enter (or Cmd+Enter) sends, Escape cancels.
export function renderComposer(label, draft, on) {
  const f = el('form', 'composer');
  const ta = el('textarea');
  ta.rows = 3;
  ta.value = draft.text || '';
  ta.setAttribute('aria-label', label);
  ta.placeholder = `${label} (Ctrl+Enter to send, Esc to cancel)`;
  ta.oninput = () => on.input(ta.value);
  ta.onkeydown = (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      f.requestSubmit();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      on.cancel();
    }
  };
  const err = el('p', 'error-text', draft.error || '');
  err.setAttribute('role', 'alert');
  const row = el('div', 'cactions');
  const send = el('button', 'send', label);
  send.type = 'submit';
  row.append(send, button('Cancel', 'cancel', on.cancel));
  f.append(ta, err, row);
  f.onsubmit = (e) => {
    e.preventDefault();
    if (ta.value.trim() === '') {
      err.textContent = 'Write something first.';
      ta.focus();
      return;
    }
    on.submit(ta.value);
  };
  return f;
}
