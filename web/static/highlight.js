// Syntax highlighting of a diff's lines with highlight.js, copied into
// the page by web/vendor/vendor.sh. Nothing loads before a diff in a known
// language is on screen: the core and that language's grammar are
// imported then, and the lines are coloured in place a slice per frame,
// so the first paint never waits for them.

const BY_EXT = {
  go: 'go', js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascript', ts: 'typescript', tsx: 'typescript',
  py: 'python', rs: 'rust', java: 'java', c: 'c', h: 'c', cc: 'cpp', cpp: 'cpp', cxx: 'cpp', hpp: 'cpp', cs: 'csharp',
  json: 'json', yaml: 'yaml', yml: 'yaml', xml: 'xml', html: 'xml', htm: 'xml', svg: 'xml', css: 'css', scss: 'scss',
  md: 'markdown', sh: 'bash', bash: 'bash', zsh: 'bash', sql: 'sql', rb: 'ruby', php: 'php', kt: 'kotlin', swift: 'swift',
  lua: 'lua', pl: 'perl', scala: 'scala', proto: 'protobuf', ini: 'ini', toml: 'ini', mk: 'makefile', diff: 'diff', patch: 'diff',
};
const BY_NAME = { Makefile: 'makefile', GNUmakefile: 'makefile', Dockerfile: 'dockerfile' };

// languageOf names the grammar for a path, or null.
export function languageOf(path) {
  const base = path.slice(path.lastIndexOf('/') + 1);
  if (BY_NAME[base]) return BY_NAME[base];
  const dot = base.lastIndexOf('.');
  return dot > 0 ? BY_EXT[base.slice(dot + 1).toLowerCase()] || null : null;
}

// The page's one way to write HTML (the page's CSP requires Trusted
// Types): highlight.js's output, which escapes the code and adds only
// spans with its classes. Anything else is refused, not written.
const HLJS_HTML = /^(?:[^<]|<span class="(?:hljs|language)-[\w .-]*">|<\/span>)*$/;

function onlySpans(html) {
  if (!HLJS_HTML.test(html)) throw new TypeError('the highlighter gave markup other than its spans');
  return html;
}

const policy = globalThis.trustedTypes?.createPolicy('changesetd-highlight', { createHTML: onlySpans }) ?? { createHTML: onlySpans };

let core = null;
const grammars = new Map(); // language -> Promise of the registered name

// load resolves to highlight.js with the language registered.
export async function load(lang) {
  if (!core) core = import('./hljs-core.js').then((m) => m.default);
  const hljs = await core;
  if (!grammars.has(lang)) {
    // A URL beside this module's file: the page serves its modules as
    // one bundle (web/bundle.go), and the grammars beside it.
    const url = new URL(`hljs-${lang}.js`, import.meta.url).href;
    grammars.set(lang, import(url).then((m) => hljs.registerLanguage(lang, m.default)));
  }
  await grammars.get(lang);
  return hljs;
}

// colour highlights the code cells of rows, from the frame after the
// next one on, a slice per animation frame, while alive() holds. A cell
// whose changed words are marked is coloured too, its marks laid over the
// colours again.
export function colour(hljs, lang, cells, alive) {
  let i = 0;
  const step = () => {
    if (!alive()) return;
    const end = Math.min(cells.length, i + 300);
    for (; i < end; i++) {
      const td = cells[i];
      if (!td.textContent) continue;
      const marks = markedSpans(td);
      if (!marks) continue; // coloured already
      try {
        td.innerHTML = policy.createHTML(hljs.highlight(td.textContent, { language: lang, ignoreIllegals: true }).value);
      } catch (e) {
        console.warn(`highlighting ${lang}: ${e.message}`); // the line stays plain
        continue;
      }
      for (const [a, b] of marks) markSpan(td, a, b);
    }
    if (i < cells.length) requestAnimationFrame(step);
  };
  // After the next frame is painted: the plain lines show first.
  requestAnimationFrame(() => setTimeout(step, 0));
}

// markedSpans lists where a cell's text is marked as changed, [from, to)
// offsets into its text: [] for plain text, null for a cell holding
// anything else (coloured already).
function markedSpans(td) {
  const out = [];
  let at = 0;
  for (const n of td.childNodes) {
    if (n.nodeType === Node.ELEMENT_NODE) {
      if (!n.matches('mark.wd')) return null;
      out.push([at, at + n.textContent.length]);
    }
    at += n.textContent.length;
  }
  return out;
}

// markSpan wraps the text at [from, to) of a coloured cell in marks, one
// per text node it crosses, inside the colours' spans.
function markSpan(td, from, to) {
  const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walk.nextNode(); n; n = walk.nextNode()) nodes.push(n);
  let at = 0;
  for (let n of nodes) {
    const start = at;
    at += n.length;
    if (at <= from || start >= to) continue;
    if (from > start) n = n.splitText(from - start);
    if (to < at) n.splitText(n.length - (at - to));
    const m = document.createElement('mark');
    m.className = 'wd';
    n.replaceWith(m);
    m.append(n);
  }
}
