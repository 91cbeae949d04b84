// Reducers for the channels the page mirrors. They follow the daemon's
// (reducer/changeset.go, reducer/session.go, reducer/chat.go,
// reducer/annotations.go) for the actions the page reads, and never
// modify their input.

const clone = (v) => (v === undefined ? undefined : structuredClone(v));

// A changeset's files are taken as the action has them, not copied: the
// client parses every envelope afresh and keeps no other reference to
// its action, the page dispatches no file, and nothing modifies either
// (a burst's contentChanged of a thousand files cost two to three times
// its parse to copy).

// applyChangeset reduces one changeset/* action. It returns [state, applied].
export function applyChangeset(s, a) {
  switch (a.type) {
    case 'changeset/statusChanged': {
      const n = { ...s, status: a.status };
      delete n.error;
      if (a.status === 'error' && a.error) n.error = clone(a.error);
      const view = a._meta?.changesetd?.view;
      if (typeof view === 'string') n._meta = { ...s._meta, changesetd: { ...s._meta?.changesetd, view } };
      return [n, true];
    }
    case 'changeset/fileSet': {
      const files = s.files.slice();
      const i = files.findIndex((f) => f.id === a.file.id);
      if (i < 0) files.push(a.file); else files[i] = a.file;
      return [{ ...s, files }, true];
    }
    case 'changeset/fileRemoved': {
      const i = s.files.findIndex((f) => f.id === a.fileId);
      if (i < 0) return [s, false];
      const files = s.files.slice();
      files.splice(i, 1);
      return [{ ...s, files }, true];
    }
    case 'changeset/filesReviewChanged': {
      const ids = new Set(a.files || []);
      let changed = false;
      const files = s.files.map((f) => {
        if (!ids.has(f.id) || f.reviewed === a.reviewed) return f;
        changed = true;
        return { ...f, reviewed: a.reviewed };
      });
      return changed ? [{ ...s, files }, true] : [s, false];
    }
    case 'changeset/contentChanged': {
      const n = { ...s, files: a.files || [] };
      if (a.operations !== undefined && a.operations !== null) n.operations = clone(a.operations);
      return [n, true];
    }
    case 'changeset/operationsChanged': {
      const n = { ...s };
      if (a.operations === undefined || a.operations === null) delete n.operations;
      else n.operations = clone(a.operations);
      return [n, true];
    }
    case 'changeset/operationStatusChanged': {
      if (!s.operations) return [s, false];
      const i = s.operations.findIndex((op) => op.id === a.operationId);
      if (i < 0) return [s, false];
      const ops = s.operations.slice();
      const op = { ...ops[i], status: a.status };
      delete op.error;
      if (a.status === 'error' && a.error) op.error = clone(a.error);
      ops[i] = op;
      return [{ ...s, operations: ops }, true];
    }
    case 'changeset/cleared':
      if (s.files.length === 0) return [s, false];
      return [{ ...s, files: [] }, true];
  }
  return [s, false];
}

// applySession reduces the session actions the page reads: the changeset
// catalogue, the chats, title, readiness and _meta (what the daemon could
// not do exactly). Others leave the state as it is.
export function applySession(s, a) {
  switch (a.type) {
    case 'session/changesetsChanged': {
      const n = { ...s };
      if (a.changesets) n.changesets = clone(a.changesets); else delete n.changesets;
      return [n, true];
    }
    case 'session/titleChanged':
      return [{ ...s, title: a.title }, true];
    case 'session/ready':
      return [{ ...s, lifecycle: 'ready' }, true];
    case 'session/chatAdded': {
      const chats = (s.chats || []).filter((c) => c.resource !== a.summary.resource);
      chats.push(clone(a.summary));
      return [{ ...s, chats }, true];
    }
    case 'session/chatUpdated': {
      const chats = (s.chats || []).map((c) => {
        if (c.resource !== a.chat) return c;
        const n = { ...c };
        for (const [k, v] of Object.entries(a.changes || {})) {
          if (v === null) delete n[k]; else n[k] = clone(v);
        }
        return n;
      });
      return [{ ...s, chats }, true];
    }
    case 'session/chatRemoved':
      return [{ ...s, chats: (s.chats || []).filter((c) => c.resource !== a.chat) }, true];
    case 'session/creationFailed':
      return [{ ...s, lifecycle: 'failed', creationError: clone(a.error) }, true];
    case 'session/workingDirectoryReplaced':
      return workingDirectoryReplaced(s, a);
    case 'session/chatsReordered':
      return chatsReordered(s, a);
    case 'session/metaChanged': {
      const n = { ...s };
      if (a._meta) n._meta = clone(a._meta); else delete n._meta;
      return [n, true];
    }
  }
  return [s, false];
}

// workingDirectoryReplaced puts the replacement (a URI, or a record with
// one) in the target's slot and drops any other entry equal to it, except
// that a replacement already earlier keeps its place and the target goes:
// [A B C] with C→A is [A B], B→C is [A C]. Without the target it does
// nothing.
function workingDirectoryReplaced(s, a) {
  const dirs = s.workingDirectories || [];
  const i = dirs.indexOf(a.directory);
  const r = a.replacement;
  const repl = typeof r === 'string' ? r : (r && typeof r.uri === 'string' ? r.uri : '');
  if (i < 0 || !repl) return [s, false];
  const out = [];
  dirs.forEach((d, j) => {
    if (j === i) {
      if (!out.includes(repl)) out.push(repl);
    } else if (d !== repl || j < i) out.push(d);
  });
  return [{ ...s, workingDirectories: out }, true];
}

// chatsReordered orders the chats as the action lists their URIs; a URI
// the state lacks, or a repeated one, is skipped, and a chat left out
// keeps its relative place after those named, so none is lost.
function chatsReordered(s, a) {
  const chats = s.chats || [];
  if (chats.length === 0) return [s, false];
  const placed = new Set();
  const out = [];
  for (const uri of a.chats || []) {
    const c = chats.find((x) => x.resource === uri);
    if (c && !placed.has(c)) {
      out.push(c);
      placed.add(c);
    }
  }
  for (const c of chats) if (!placed.has(c)) out.push(c);
  return [{ ...s, chats: out }, true];
}

// applyChat reduces the turn actions of a chat channel.
export function applyChat(s, a) {
  switch (a.type) {
    case 'chat/turnStarted':
      return [{ ...s, activeTurn: { id: a.turnId, startedAt: a.startedAt, message: clone(a.message), responseParts: [] } }, true];
    case 'chat/turnComplete':
    case 'chat/turnCancelled': {
      const t = s.activeTurn;
      if (!t || t.id !== a.turnId) return [s, false];
      const turn = { id: t.id, startedAt: t.startedAt, duration: Math.max(a.duration || 0, 0), message: t.message,
        responseParts: t.responseParts || [], state: a.type === 'chat/turnComplete' ? 'complete' : 'cancelled' };
      const n = { ...s, turns: [...(s.turns || []), turn] };
      delete n.activeTurn;
      return [n, true];
    }
    case 'chat/turnsLoaded': {
      // Older turns, in front of those held; a turn held already is not
      // repeated. The cursor is the next older page's, absent at the end.
      const have = new Set((s.turns || []).map((t) => t.id));
      const older = (a.turns || []).filter((t) => !have.has(t.id)).map(clone);
      const n = { ...s, turns: [...older, ...(s.turns || [])] };
      if (a.turnsNextCursor) n.turnsNextCursor = a.turnsNextCursor; else delete n.turnsNextCursor;
      return [n, true];
    }
    case 'chat/changesetsChanged': {
      const n = { ...s };
      if (a.changesets) n.changesets = clone(a.changesets); else delete n.changesets;
      return [n, true];
    }
  }
  return [s, false];
}

// applyAnnotations reduces the five annotations/* actions. Actions naming
// an unknown annotation or entry are no-ops.
export function applyAnnotations(s, a) {
  const list = s.annotations || [];
  const at = list.findIndex((n) => n.id === (a.type === 'annotations/set' ? a.annotation?.id : a.annotationId));
  const replace = (n) => {
    const annotations = list.slice();
    annotations[at] = n;
    return [{ ...s, annotations }, true];
  };
  switch (a.type) {
    case 'annotations/set': {
      if (!a.annotation) return [s, false];
      if (at < 0) return [{ ...s, annotations: [...list, clone(a.annotation)] }, true];
      return replace(clone(a.annotation));
    }
    case 'annotations/removed': {
      if (at < 0) return [s, false];
      return [{ ...s, annotations: list.filter((_, i) => i !== at) }, true];
    }
    case 'annotations/entrySet': {
      if (at < 0 || !a.entry) return [s, false];
      const entries = (list[at].entries || []).slice();
      const j = entries.findIndex((e) => e.id === a.entry.id);
      if (j < 0) entries.push(clone(a.entry)); else entries[j] = clone(a.entry);
      return replace({ ...list[at], entries });
    }
    case 'annotations/entryRemoved': {
      if (at < 0) return [s, false];
      const entries = list[at].entries || [];
      if (!entries.some((e) => e.id === a.entryId)) return [s, false];
      return replace({ ...list[at], entries: entries.filter((e) => e.id !== a.entryId) });
    }
    case 'annotations/updated': {
      if (at < 0) return [s, false];
      const n = { ...list[at] };
      for (const k of ['turnId', 'resource', 'range', 'resolved']) {
        if (a[k] !== undefined && a[k] !== null) n[k] = clone(a[k]);
      }
      return replace(n);
    }
  }
  return [s, false];
}

// isAnnotations tells a session's annotations channel
// (ahp-session:/<id>/annotations) from the session channel itself.
export function isAnnotations(channel) {
  return channel.startsWith('ahp-session:') && channel.endsWith('/annotations');
}

// reducerFor picks the reducer by the channel's scheme, as AHP clients do.
export function reducerFor(channel) {
  if (isAnnotations(channel)) return applyAnnotations;
  if (channel.startsWith('ahp-changeset:')) return applyChangeset;
  if (channel.startsWith('ahp-session:')) return applySession;
  if (channel.startsWith('ahp-chat:')) return applyChat;
  return (s) => [s, false];
}
