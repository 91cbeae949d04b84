// What a session's _meta says the daemon could not do exactly, for each
// working directory: a directory it could not open, and the warnings of
// its last computation (an attribute or filter it could not apply, a file
// it could not read). The page shows them above the files, so a change
// left out or shown without its content is never silent.

// workspaceNotes returns one line per problem of the session state st.
export function workspaceNotes(st) {
  const list = st?._meta?.changesetd?.workspaces;
  if (!Array.isArray(list)) return [];
  const out = [];
  for (const w of list) {
    const dir = typeof w?.dir === 'string' ? w.dir.replace(/^file:\/\//, '') : '';
    if (typeof w?.error === 'string' && w.error) out.push({ dir, kind: 'error', text: w.error });
    for (const text of Array.isArray(w?.warnings) ? w.warnings : []) {
      if (typeof text === 'string' && text) out.push({ dir, kind: 'warning', text });
    }
  }
  return out;
}

// renderNotes fills box with the notes, and hides it when there are none.
export function renderNotes(box, notes) {
  box.replaceChildren();
  for (const n of notes) {
    const p = document.createElement('p');
    p.className = n.kind;
    const label = document.createElement('strong');
    label.textContent = n.kind === 'error' ? 'Error: ' : 'Warning: ';
    p.append(label, n.text);
    if (n.dir) p.title = n.dir;
    box.append(p);
  }
  box.hidden = notes.length === 0;
}
