// Package server is the transport edge: the HTTP handler that upgrades
// /ahp to a WebSocket after checking the token, Origin and Host; one
// jsonrpc2.Conn per connection over a frame stream that validates every
// frame before the JSON-RPC library sees it; the method table; and
// graceful shutdown.
//
// Handle runs on the connection's read loop and never waits on a session:
// it decodes params and hands the work to package session, whose actors
// reply later through the connection's bounded send queue. Replies,
// notifications and action envelopes share that one queue, so a reply
// carrying a snapshot always precedes the live actions after it.
//
// The same listener serves the review page of package web at / and
// /assets/, without a token (it holds no data) but behind the Host check;
// the page's own origin passes the Origin check of the upgrade.
//
// The package imports session, protocol, web, jsonrpc2, gorilla/websocket
// and the standard library; it never imports scm, go-git or fsnotify.
package server
