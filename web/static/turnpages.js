// Paging of the turn list. The list shows the latest `page` turns (each
// shown turn holds a subscription for its counts); "Load older turns"
// shows a page more, and once every turn the page holds is shown, asks
// the daemon for older ones with fetchTurns on each chat whose state has a
// turnsNextCursor. The turns arrive as chat/turnsLoaded, put in front of
// the chat's turns by the reducer.

export function createTurnPager({ page, chats, state, request, rerender }) {
  const p = { limit: page, loading: false };
  let box = null;

  // cursors are the chats with older turns on the daemon, and their cursor.
  const cursors = () => [...chats()].map((uri) => [uri, state(uri)?.turnsNextCursor]).filter(([, c]) => c);

  p.reset = () => {
    p.limit = page;
  };

  p.more = async () => {
    if (p.loading) return;
    p.limit += page;
    const want = cursors();
    if (p.held < p.limit && want.length) {
      p.loading = true;
      p.render(p.held);
      try {
        for (const [uri, cursor] of want) await request('fetchTurns', { channel: uri, cursor });
      } catch (e) {
        box?.querySelector('.pager-text')?.replaceChildren(`Could not load older turns: ${e.message || e}`);
        p.loading = false;
        return;
      }
      p.loading = false;
    }
    rerender();
  };

  // render shows, after the turn list, how many of the held turns are in
  // it and the button, while there is more to see.
  p.render = (held) => {
    p.held = held;
    if (!box) {
      box = document.createElement('div');
      box.className = 'turn-pager';
      const text = document.createElement('span');
      text.className = 'pager-text muted';
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'load-older';
      b.textContent = 'Load older turns';
      b.onclick = () => p.more();
      box.append(text, b);
      document.getElementById('turns').after(box);
    }
    const older = cursors().length > 0;
    const shown = Math.min(held, p.limit);
    box.hidden = held <= p.limit && !older;
    box.querySelector('.pager-text').textContent = p.loading ? 'Loading older turns…' :
      `Latest ${shown} of ${held}${older ? '+' : ''} turns.`;
    box.querySelector('button').disabled = p.loading;
  };

  return p;
}
