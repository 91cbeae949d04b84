// Package web is the review page the daemon serves at GET /: a browser
// client of the daemon's own AHP endpoint, written as plain HTML, CSS and
// JavaScript modules embedded in the binary (no build step, nothing fetched
// from elsewhere).
//
// The page and its assets carry no data and need no token; everything the
// page shows comes over /ahp, which does. The token reaches the page in the
// URL fragment (#token=…), which browsers never send to the server; the
// page moves it to sessionStorage and removes it from the address bar, and
// its WebSocket carries it as a subprotocol, never in a URL.
//
// The script is one module per view (view-*.js: sessions, changeset head,
// file list, diff pane, commit, comments; keys.js, theme.js), over the
// shared state (page.js), the data derived from it (selectors.js) and the
// one function every intent goes through (intent.js); app.js connects and
// wires them. They are served as one file, app.bundle.js, which esbuild
// makes from the embedded modules the first time it is asked for
// (bundle.go): on a reload the browser fetched and linked each module
// on its own, and opened the page's socket only after it had started
// fetching them all. The highlighter's grammars stay files of their own,
// loaded when a diff needs them.
//
// Every response carries a Content-Security-Policy that allows scripts,
// styles and images from this origin only, no inline script, connections
// only back to this host's WebSocket, and requires Trusted Types (one
// policy, for the highlighter's output).
//
// The package imports the standard library and esbuild, to bundle.
package web
