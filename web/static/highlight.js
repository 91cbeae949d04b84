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

let core = null;
const grammars = new Map(); // language -> Promise of the registered name

// load resolves to highlight.js with the language registered.
export async function load(lang) {
  if (!core) core = import('./hljs-core.js').then((m) => m.default);
  const hljs = await core;
  if (!grammars.has(lang)) {
    grammars.set(lang, import(`./hljs-${lang}.js`).then((m) => hljs.registerLanguage(lang, m.default)));
  }
  await grammars.get(lang);
  return hljs;
}

// colour highlights the code cells of rows, from the frame after the
// next one on, a slice per animation frame, while alive() holds. A cell whose changed words are marked keeps its
// marks instead.
export function colour(hljs, lang, cells, alive) {
  let i = 0;
  const step = () => {
    if (!alive()) return;
    const end = Math.min(cells.length, i + 300);
    for (; i < end; i++) {
      const td = cells[i];
      if (td.firstElementChild || !td.textContent) continue;
      td.innerHTML = hljs.highlight(td.textContent, { language: lang, ignoreIllegals: true }).value;
    }
    if (i < cells.length) requestAnimationFrame(step);
  };
  // After the next frame is painted: the plain lines show first.
  requestAnimationFrame(() => setTimeout(step, 0));
}
