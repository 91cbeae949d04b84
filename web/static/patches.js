// A file's patch is not in the changeset state: the state names where it
// is read (_meta.changesetd.patchUri), and the page reads it when the file
// is shown. A patch's URI changes whenever its bytes do, so what was read
// is kept by URI, the most recently used few hundred of them.

const KEEP = 256;

// createPatches returns the page's patch reader. read(uri) resolves to
// resourceRead's result for uri.
export function createPatches(read) {
  const done = new Map(); // uri -> {text} or {error}, oldest first
  const pending = new Map(); // uri -> Promise of the entry
  const failed = new Map(); // uri -> {error}, until it is read again

  function keep(uri, entry) {
    done.delete(uri);
    done.set(uri, entry);
    while (done.size > KEEP) done.delete(done.keys().next().value);
    return entry;
  }

  return {
    // get returns what was read for uri, {text} or {error}, or undefined
    // when it has not been read (or is being read).
    get(uri) {
      const e = done.get(uri);
      if (e) keep(uri, e);
      return e || failed.get(uri);
    },
    // load reads uri once, however many ask for it at a time, and
    // resolves to its entry.
    load(uri) {
      const e = done.get(uri);
      if (e) return Promise.resolve(e);
      let p = pending.get(uri);
      if (!p) {
        failed.delete(uri);
        p = read(uri)
          .then((res) => ({ text: decode(res) }), (err) => ({ error: err?.message || String(err) }))
          .then((entry) => {
            pending.delete(uri);
            // A conflict means the file changed since the state named
            // this URI: the new state brings another one. A failure is
            // kept apart, until the next load of the URI tries again.
            if (!entry.error) return keep(uri, entry);
            failed.set(uri, entry);
            while (failed.size > KEEP) failed.delete(failed.keys().next().value);
            return entry;
          });
        pending.set(uri, p);
      }
      return p;
    },
  };
}

// decode turns a resourceRead result into text. A patch that is not valid
// UTF-8 comes as base64; its bytes are read as UTF-8 with replacement
// characters, as a JSON string of them would have been.
function decode(res) {
  if (res.encoding !== 'base64') return res.data;
  const bin = atob(res.data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder('utf-8').decode(bytes);
}
