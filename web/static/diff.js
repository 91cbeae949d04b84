// Parsing a file's git patch (read at its _meta.changesetd.patchUri) into hunks and
// rendering it as a unified or side-by-side table. Every rendered line
// carries its 0-based position on the after side (data-a), so a text
// selection maps to a range for a range operation.

// parsePatch returns the hunks of a single-file git patch.
export function parsePatch(patch) {
  const hunks = [];
  let h = null;
  let oldNo = 0;
  let newNo = 0;
  for (const line of patch.split('\n')) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/.exec(line);
    if (m) {
      oldNo = Number(m[1]);
      newNo = Number(m[3]);
      // A side with no lines names the line before it.
      if (m[2] === '0') oldNo++;
      if (m[4] === '0') newNo++;
      h = { header: line, section: m[5].trim(), lines: [] };
      hunks.push(h);
      continue;
    }
    if (!h) continue;
    const c = line[0];
    const text = line.slice(1);
    if (c === ' ') {
      h.lines.push({ kind: 'ctx', text, old: oldNo++, new: newNo, a: newNo - 1 });
      newNo++;
    } else if (c === '-') {
      h.lines.push({ kind: 'del', text, old: oldNo++, new: null, a: newNo - 1 });
    } else if (c === '+') {
      h.lines.push({ kind: 'add', text, old: null, new: newNo, a: newNo - 1 });
      newNo++;
    } else if (c === '\\') {
      h.lines.push({ kind: 'note', text: line, old: null, new: null, a: null });
    }
  }
  return hunks;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// pairWords marks, in each hunk, the part of a changed line that changed:
// the i-th deleted line of a run is paired with the i-th added line that
// follows it, and what lies between their common start and end, widened
// to whole tokens, is the change (l.mark = [from, to) in l.text).
export function pairWords(hunks) {
  for (const h of hunks) {
    const ls = h.lines;
    for (let i = 0; i < ls.length;) {
      if (ls[i].kind !== 'del') {
        i++;
        continue;
      }
      let j = i;
      while (j < ls.length && ls[j].kind === 'del') j++;
      let k = j;
      while (k < ls.length && ls[k].kind === 'add') k++;
      for (let n = 0; n < Math.min(j - i, k - j); n++) mark(ls[i + n], ls[j + n]);
      i = k;
    }
  }
  return hunks;
}

function mark(a, b) {
  const x = a.text;
  const y = b.text;
  if (x.length > 1000 || y.length > 1000) return;
  let p = 0;
  while (p < x.length && p < y.length && x[p] === y[p]) p++;
  let q = 0;
  while (q < x.length - p && q < y.length - p && x[x.length - 1 - q] === y[y.length - 1 - q]) q++;
  // Whole tokens: CheckClose against CloseAndCheck is one changed word,
  // not C[heckClose]; "bad" against "invalid" not "[ba]d".
  const word = (c) => c !== undefined && /[\p{L}\p{N}_$]/u.test(c);
  while (p > 0 && word(x[p - 1]) && (word(x[p]) || word(y[p]))) p--;
  while (q > 0 && word(x[x.length - q]) && (word(x[x.length - q - 1]) || word(y[y.length - q - 1]))) q--;
  // A line changed all over is not marked word by word.
  if (p + q === 0) return;
  a.mark = [p, x.length - q];
  b.mark = [p, y.length - q];
}

// code is a line's text cell, its changed part (l.mark) in a <mark>.
function code(cls, l) {
  const td = el('td', cls);
  if (!l) return td;
  if (!l.mark || l.mark[0] >= l.mark[1]) {
    td.textContent = l.text;
    return td;
  }
  const [a, b] = l.mark;
  const m = el('mark', 'wd', l.text.slice(a, b));
  td.append(...[l.text.slice(0, a), m, l.text.slice(b)].filter((x) => x !== ''));
  return td;
}

function num(n) {
  return el('td', 'ln', n === null || n === undefined ? '' : String(n));
}

function setPos(tr, l) {
  if (l && l.a !== null && l.a !== undefined) tr.dataset.a = String(l.a);
}

// diffTable makes the table of a diff view and its body.
function diffTable(view) {
  const t = el('table', 'difftable ' + view);
  const tb = el('tbody');
  t.append(tb);
  return { t, tb };
}

// hunkRow is the header row of hunk number hi.
function hunkRow(h, hi) {
  const hr = el('tr', 'hunk');
  hr.dataset.hunk = String(hi);
  const td = el('td', 'hunkhead');
  td.colSpan = 4;
  // The header and the hunk's buttons side by side: a long header wraps
  // beside them rather than pushing them to a line of their own.
  const line = el('div', 'hunkline');
  line.append(el('span', 'htext', h.header));
  td.append(line);
  hr.append(td);
  return hr;
}

function unifiedRow(l, hi) {
  const tr = el('tr', 'line ' + l.kind);
  tr.dataset.hunk = String(hi);
  setPos(tr, l);
  const sign = l.kind === 'add' ? '+' : l.kind === 'del' ? '-' : l.kind === 'ctx' ? ' ' : '';
  const mark = el('td', 'sign', sign);
  // Said, not only shown by colour and sign.
  if (l.kind === 'add' || l.kind === 'del') mark.setAttribute('aria-label', l.kind === 'add' ? 'added' : 'removed');
  tr.append(num(l.old), num(l.new), mark, code('code', l));
  return tr;
}

// renderUnified renders hunks as one column of old/new numbers and text.
export function renderUnified(hunks) {
  const { t, tb } = diffTable('unified');
  hunks.forEach((h, hi) => {
    tb.append(hunkRow(h, hi));
    for (const l of h.lines) tb.append(unifiedRow(l, hi));
  });
  return t;
}

// flatRows lists a diff's rows in order, for a virtual rendering: each a
// hunk header ({h, hi}) or a line ({l, hi}).
export function flatRows(hunks) {
  const rows = [];
  hunks.forEach((h, hi) => {
    rows.push({ h, hi });
    for (const l of h.lines) rows.push({ l, hi });
  });
  return rows;
}

// renderRows renders rows[from:to] of flatRows into tb as a unified diff,
// with spacer rows of rowPx each standing for the rows left out.
export function renderRows(tb, rows, from, to, rowPx) {
  const out = [];
  const gap = (n) => {
    const tr = el('tr', 'gap');
    const td = el('td');
    td.colSpan = 4;
    td.style.height = n * rowPx + 'px';
    tr.append(td);
    return tr;
  };
  if (from > 0) out.push(gap(from));
  for (let i = from; i < to; i++) {
    const r = rows[i];
    out.push(r.h ? hunkRow(r.h, r.hi) : unifiedRow(r.l, r.hi));
  }
  if (to < rows.length) out.push(gap(rows.length - to));
  tb.replaceChildren(...out);
}

// emptyTable is the table a virtual diff renders into.
export function emptyTable(view) {
  return diffTable(view);
}

// renderSplit renders hunks side by side: deletions on the left paired
// with the additions that replace them on the right.
export function renderSplit(hunks) {
  const { t, tb } = diffTable('split');
  hunks.forEach((h, hi) => {
    tb.append(hunkRow(h, hi));
    const rows = [];
    let dels = [];
    let adds = [];
    const flush = () => {
      for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push([dels[i] || null, adds[i] || null]);
      dels = [];
      adds = [];
    };
    for (const l of h.lines) {
      if (l.kind === 'del') {
        if (adds.length) flush();
        dels.push(l);
      } else if (l.kind === 'add') {
        adds.push(l);
      } else {
        flush();
        rows.push([l, l]);
      }
    }
    flush();
    for (const [o, n] of rows) {
      const kind = o && n && o === n ? o.kind : 'chg';
      const tr = el('tr', 'line ' + kind);
      tr.dataset.hunk = String(hi);
      setPos(tr, n || o);
      if (o && n && o === n) {
        tr.append(num(o.old), code('code ' + o.kind, o), num(n.new), code('code ' + n.kind, n));
      } else {
        tr.append(num(o ? o.old : null), code('code ' + (o ? o.kind : 'empty'), o),
          num(n ? n.new : null), code('code ' + (n ? n.kind : 'empty'), n));
      }
      tb.append(tr);
    }
  });
  return t;
}

// selectedRange maps the document selection inside container to a range
// of 0-based after-side lines, or null.
export function selectedRange(container) {
  const sel = document.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
  const r = sel.getRangeAt(0);
  if (!container.contains(r.commonAncestorContainer)) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (const tr of container.querySelectorAll('tr.line[data-a]')) {
    if (!r.intersectsNode(tr)) continue;
    // A selection that ends at the very start of a row (a triple click,
    // a drag to the next line) does not take that row.
    if (r.endOffset === 0 && rowOf(r.endContainer) === tr && rowOf(r.startContainer) !== tr) continue;
    const a = Number(tr.dataset.a);
    lo = Math.min(lo, a);
    hi = Math.max(hi, a);
  }
  if (lo === Infinity) return null;
  return { start: { line: lo, character: 0 }, end: { line: hi, character: 0 } };
}

function rowOf(n) {
  while (n && !(n.nodeType === 1 && n.tagName === 'TR')) n = n.parentNode;
  return n;
}
