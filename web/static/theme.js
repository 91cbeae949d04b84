// The theme: light, dark, or auto (the system's, prefers-color-scheme).
// The choice is kept in localStorage and set on <html> as data-theme,
// which app.css reads; boot.js sets it before the first paint.

import { $ } from './page.js';

const KEY = 'changesetd.theme';
const NEXT = { auto: 'light', light: 'dark', dark: 'auto' };

function current() {
  const t = localStorage.getItem(KEY);
  return t === 'light' || t === 'dark' ? t : 'auto';
}

function apply(t) {
  if (t === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
  $('theme').textContent = `Theme: ${t}`;
}

// wireTheme shows the theme and cycles it on the button: auto, light,
// dark.
export function wireTheme() {
  apply(current());
  $('theme').onclick = () => {
    const t = NEXT[current()];
    localStorage.setItem(KEY, t);
    apply(t);
  };
}
