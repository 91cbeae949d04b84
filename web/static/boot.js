// boot.js runs while the page is still loading, before its modules: it
// opens the socket, initializes, lists the sessions and subscribes to the
// session and the
// changeset the tab showed last, so that their snapshots are on their
// way while the modules load. The page's client (ahp.js) takes the
// socket over with what it has received. Without a token or a client
// id in this tab yet, it does nothing and the client connects itself.
(() => {
  try {
    // The theme chosen on the page (theme.js), before the first paint.
    const theme = localStorage.getItem('changesetd.theme');
    if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  } catch {
    // The system's, then.
  }
  try {
    // A token the URL brings (#token=… from the printed review: URL, or
    // ?token=…) is taken once, kept for this tab in sessionStorage and
    // taken out of the address bar at once, before anything else loads.
    const frag = new URLSearchParams(location.hash.slice(1));
    const query = new URLSearchParams(location.search);
    const given = frag.get('token') || query.get('token');
    if (given) {
      sessionStorage.setItem('changesetd.token', given);
      frag.delete('token');
      query.delete('token');
      const q = query.toString();
      const f = frag.toString();
      history.replaceState(null, '', location.pathname + (q ? '?' + q : '') + (f ? '#' + f : ''));
    }
    const token = sessionStorage.getItem('changesetd.token');
    const clientId = sessionStorage.getItem('changesetd.clientId');
    if (!token || !clientId) return;
    const sel = JSON.parse(sessionStorage.getItem('changesetd.selection') || '{}');
    // The token goes as a subprotocol, as ahp.js's socketFor says.
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    let url = `${proto}//${location.host}/ahp`;
    let protocols = ['changesetd.v1', `changesetd.token.${token}`];
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(token)) {
      url += `?token=${encodeURIComponent(token)}`;
      protocols = [];
    }
    const ws = new WebSocket(url, protocols);
    const boot = { url, protocols, ws, frames: [], opened: false, closed: null, init: 'boot-initialize', list: 'boot-listSessions', subscribed: [] };
    const channels = [sel.session, sel.cs?.uri].filter((c) => typeof c === 'string' && c !== '');
    channels.forEach((channel, i) => boot.subscribed.push([`boot-subscribe-${i}`, channel]));
    ws.onmessage = (e) => {
      boot.frames.push(e.data);
    };
    ws.onclose = (e) => { boot.closed = e; };
    ws.onopen = () => {
      const send = (id, method, params) => ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      send(boot.init, 'initialize', {
        channel: 'ahp-root://',
        protocolVersions: ['1.0.0'],
        clientId,
        clientInfo: { name: 'changesetd-review-page' },
        initialSubscriptions: ['ahp-root://'],
      });
      // The list first: its reply comes before the snapshots, which may
      // be large, and the page needs it to show the session.
      send(boot.list, 'listSessions', { channel: 'ahp-root://' });
      // The session and the changeset are asked for at once, not the
      // changeset once the first reply is read: that waited for this
      // thread, busy loading the page, and the changeset's snapshot came
      // some 7 ms later. Their replies come in the order asked, the
      // small ones first.
      for (const [id, channel] of boot.subscribed) send(id, 'subscribe', { channel });
      boot.opened = true;
      if (boot.then) boot.then(); // the client took the socket over meanwhile
    };
    window.changesetdBoot = boot;
  } catch {
    // Nothing is lost: the client connects by itself.
  }
})();
