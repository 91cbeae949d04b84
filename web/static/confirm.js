// What a confirmation and the note after an operation say. The daemon
// gives one confirmation per operation, written for its widest scope (the
// whole changeset); the page knows which file, hunk or lines this
// invocation is about, so it says what will happen to them. Pure: every
// fact comes in the arguments.

const UNDO = 'A revert can be undone with Undo Revert, also after a restart.';

// before names the version a revert goes back to on a changeset of kind.
export function before(kind) {
  switch (kind) {
    case 'uncommitted': return 'as last committed (HEAD)';
    case 'branch': return 'at the branch point';
    case 'session': return 'as it was when the session started';
    case 'turn': return 'as it was before this turn';
    case 'compare-turns': return 'as the first turn compared left it';
    default: return "at this changeset's start";
  }
}

// when names the version a revert goes back to as a time, for what did
// not exist then.
function when(kind) {
  switch (kind) {
    case 'uncommitted': return 'in the last commit (HEAD)';
    case 'branch': return 'at the branch point';
    case 'session': return 'when the session started';
    case 'turn': return 'before this turn';
    case 'compare-turns': return 'when the first turn compared ended';
    default: return "at this changeset's start";
  }
}

function n(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

function lines(first, last) {
  return first === last ? `line ${first}` : `lines ${first}–${last}`;
}

// counts is "+3 −1".
function counts(added, removed) {
  return `+${added} −${removed}`;
}

// revertFileText says what reverting one file does. f is {path, created,
// deleted, added, removed}.
export function revertFileText(kind, f) {
  let text;
  if (f.created) {
    text = `Delete ${f.path}? It did not exist ${when(kind)}, so reverting it removes the file.`;
  } else if (f.deleted) {
    text = `Restore ${f.path}? It comes back ${before(kind)}.`;
  } else {
    text = `Revert ${f.path}? The whole file goes back to its version ${before(kind)}; its changes (${counts(f.added, f.removed)}) are discarded.`;
  }
  return `${text} No other file is touched. ${UNDO}`;
}

// revertHunksText says what reverting hunks of a file does: hunks are the
// ones the daemon reverts ({n, first, last, added, removed}; lines
// one-based, of the version shown), selected the lines chosen ({first,
// last}) or null for a hunk's Undo.
export function revertHunksText(kind, path, hunks, selected) {
  if (!hunks.length) return `Revert ${selected ? lines(selected.first, selected.last) : 'these lines'} of ${path}? ${UNDO}`;
  const add = hunks.reduce((s, h) => s + h.added, 0);
  const del = hunks.reduce((s, h) => s + h.removed, 0);
  const effect = [
    add ? `${n(add, 'added line', 'added lines')} ${add === 1 ? 'is' : 'are'} removed` : '',
    del ? `${n(del, 'removed line', 'removed lines')} ${del === 1 ? 'is' : 'are'} put back` : '',
  ].filter(Boolean).join(' and ') || 'nothing changes';
  let text;
  if (!selected) {
    const h = hunks[0];
    text = `Undo hunk ${h.n} of ${path} (${lines(h.first, h.last)})? Its lines go back to their version ${before(kind)}: ${effect}.`;
  } else {
    const which = hunks.map((h) => `hunk ${h.n} (${lines(h.first, h.last)}, ${counts(h.added, h.removed)})`).join(', ');
    const whole = hunks.some((h) => h.first < selected.first || h.last > selected.last);
    text = `Revert ${lines(selected.first, selected.last)} of ${path}? ${hunks.length === 1 ? 'The hunk' : 'The hunks'} they touch go${hunks.length === 1 ? 'es' : ''} back to ${hunks.length === 1 ? 'its' : 'their'} version ${before(kind)}: ${which}; ${effect}.`;
    if (whole) text += ' Whole hunks are reverted, so changed lines of them outside the selection go back too.';
  }
  return `${text} The rest of the file is left alone. ${UNDO}`;
}

// rewindText says what rewinding a turn (every file of it) does. files
// are {path, created}; daemonText is the daemon's confirmation, whose
// list of files changed again since (which make a rewind fail) is kept.
export function rewindText(turnLabel, files, daemonText) {
  if (!files.length) return `Rewind ${turnLabel}? It changed no file: there is nothing to rewind.`;
  const names = (list) => (list.length > 10 ? `${list.slice(0, 10).join(', ')} and ${list.length - 10} more` : list.join(', '));
  let text = `Rewind ${turnLabel}? Every file changed goes back to its version before, ${n(files.length, 'file', 'files')}: ${names(files.map((f) => f.path))}.`;
  const created = files.filter((f) => f.created).map((f) => f.path);
  if (created.length) text += ` ${created.length === 1 ? 'This one' : 'These'} did not exist before and ${created.length === 1 ? 'is' : 'are'} deleted: ${names(created)}.`;
  const drifted = /Changed again since[^.]*\./.exec(daemonText || '');
  if (drifted) text += ` ${drifted[0]}`;
  return `${text} ${UNDO}`;
}

// doneText is the note after an operation on target (a file or lines)
// that succeeded; message is the daemon's, whose first sentence counts
// files ("Reverted 1 file."): for a hunk or lines it names them instead,
// and the rest (how to undo) is kept.
export function doneText(op, target, message, what) {
  const verb = { revert: 'Reverted', stage: 'Staged', unstage: 'Unstaged' }[op.id];
  if (target?.kind !== 'range' || !what || !verb) return message;
  const rest = (message || '').replace(/^[^.]*\.\s*/, '');
  return rest ? `${verb} ${what}. ${rest}` : `${verb} ${what}`;
}
