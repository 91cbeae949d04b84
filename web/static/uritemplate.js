// RFC 6570 URI Template expansion, levels 1–4, for the changeset catalogue.

const OPS = {
  '':  { first: '',  sep: ',', named: false, ifemp: '',  reserved: false },
  '+': { first: '',  sep: ',', named: false, ifemp: '',  reserved: true },
  '#': { first: '#', sep: ',', named: false, ifemp: '',  reserved: true },
  '.': { first: '.', sep: '.', named: false, ifemp: '',  reserved: false },
  '/': { first: '/', sep: '/', named: false, ifemp: '',  reserved: false },
  ';': { first: ';', sep: ';', named: true,  ifemp: '',  reserved: false },
  '?': { first: '?', sep: '&', named: true,  ifemp: '=', reserved: false },
  '&': { first: '&', sep: '&', named: true,  ifemp: '=', reserved: false },
};

function enc(s, reserved) {
  const bytes = new TextEncoder().encode(String(s));
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const c = String.fromCharCode(bytes[i]);
    if (/[A-Za-z0-9\-._~]/.test(c) || (reserved && /[:/?#[\]@!$&'()*+,;=]/.test(c))) {
      out += c;
    } else if (reserved && c === '%' && i + 2 < bytes.length + 0 && /^[0-9A-Fa-f]{2}$/.test(String.fromCharCode(bytes[i + 1] ?? 0, bytes[i + 2] ?? 0))) {
      out += c; // an existing pct-encoded triplet passes through
    } else {
      out += '%' + bytes[i].toString(16).toUpperCase().padStart(2, '0');
    }
  }
  return out;
}

function defined(v) {
  if (v === undefined || v === null) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

// expand fills template with values; undefined variables expand to nothing.
export function expand(template, values) {
  return template.replace(/\{([^}]*)\}/g, (_, body) => {
    let op = '';
    if (body && '+#./;?&'.includes(body[0])) { op = body[0]; body = body.slice(1); }
    const o = OPS[op];
    const parts = [];
    for (const spec of body.split(',')) {
      const m = /^([A-Za-z0-9_.%]+)(?::(\d+)|(\*))?$/.exec(spec);
      if (!m) throw new Error(`uri template: bad variable "${spec}" in ${template}`);
      const [, name, prefix, explode] = m;
      const v = values[name];
      if (!defined(v)) continue;
      if (typeof v !== 'object') {
        let s = String(v);
        if (prefix) s = Array.from(s).slice(0, Number(prefix)).join('');
        const e = enc(s, o.reserved);
        parts.push(o.named ? name + (e === '' ? o.ifemp : '=' + e) : e);
        continue;
      }
      const pairs = Array.isArray(v) ? v.map((x) => [null, x]) : Object.entries(v);
      if (explode) {
        for (const [k, x] of pairs) {
          if (k === null) parts.push(o.named ? name + (String(x) === '' ? o.ifemp : '=' + enc(x, o.reserved)) : enc(x, o.reserved));
          else parts.push(enc(k, o.reserved) + '=' + enc(x, o.reserved));
        }
      } else {
        const joined = pairs.map(([k, x]) => (k === null ? enc(x, o.reserved) : enc(k, o.reserved) + ',' + enc(x, o.reserved))).join(',');
        parts.push(o.named ? name + (joined === '' ? o.ifemp : '=' + joined) : joined);
      }
    }
    return parts.length ? o.first + parts.join(o.sep) : '';
  });
}

// variables lists the variable names of template, in order.
export function variables(template) {
  const out = [];
  for (const [, body] of template.matchAll(/\{([^}]*)\}/g)) {
    const b = body && '+#./;?&'.includes(body[0]) ? body.slice(1) : body;
    for (const spec of b.split(',')) {
      const name = spec.replace(/(:\d+|\*)$/, '');
      if (name && !out.includes(name)) out.push(name);
    }
  }
  return out;
}
