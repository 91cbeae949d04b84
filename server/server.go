package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/web"
)

// Config configures a Server. Zero fields take the defaults below.
type Config struct {
	Token          string   // required on every upgrade
	AllowOrigins   []string // extra allowed browser origins, e.g. "https://ide.example"
	AllowHosts     []string // extra allowed Host header names, e.g. a container's service name
	MaxFrameBytes  int64    // largest accepted message
	SendQueue      int      // frames queued per connection before its changeset actions are replaced by snapshots
	SendQueueBytes int64    // bytes queued per connection, likewise
	MaxConns       int      // concurrent connections
	MaxSubs        int      // subscriptions per connection
	ReadTimeout    time.Duration
	WriteTimeout   time.Duration
	PingInterval   time.Duration
	Version        string
	// Metrics records what the server counts; nil records nothing.
	Metrics Metrics
	// MetricsHandler serves /metrics (behind the Host check); nil: 404.
	MetricsHandler http.Handler

	// Requests in flight per connection (admitted, not yet answered),
	// and the bytes of their params; past either, requests are refused
	// as overloaded (order.go).
	MaxInFlight      int
	MaxInFlightBytes int64
}

// Metrics is what the server counts. The daemon passes metrics.Server.
type Metrics interface {
	Connections(delta int)
	Subscriptions(delta int)
	SlowClientDropped()  // a connection closed for not reading
	SlowClientCaughtUp() // a channel's backlog replaced by a snapshot
}

type noMetrics struct{}

func (noMetrics) Connections(int)     {}
func (noMetrics) Subscriptions(int)   {}
func (noMetrics) SlowClientDropped()  {}
func (noMetrics) SlowClientCaughtUp() {}

// Defaults. A changeset snapshot of a large working tree is the biggest
// thing a client sends back to us only in pathological cases; requests are
// small, so 4 MiB leaves room for bulk review toggles of tens of
// thousands of ids while bounding memory per connection.
const (
	DefaultMaxFrameBytes = 4 << 20
	DefaultSendQueue     = 4096
	// DefaultSendQueueBytes bounds the bytes of a backlog the same way:
	// a burst of large fileSet frames passes it before 4096 messages.
	DefaultSendQueueBytes = 64 << 20
	DefaultMaxConns       = 256
	DefaultMaxSubs        = 1024
	DefaultReadTimeout    = 90 * time.Second // > 2 ping intervals: a live peer always answers pings
	DefaultWriteTimeout   = 10 * time.Second
	DefaultPingInterval   = 30 * time.Second
)

func (c *Config) setDefaults() {
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.SendQueue <= 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.SendQueueBytes <= 0 {
		c.SendQueueBytes = DefaultSendQueueBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxSubs <= 0 {
		c.MaxSubs = DefaultMaxSubs
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightBytes <= 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.PingInterval <= 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
}

// Server serves AHP over WebSocket at /ahp.
type Server struct {
	cfg  Config
	m    *session.Manager
	log  *slog.Logger
	up   websocket.Upgrader
	page http.Handler

	// reads holds a place per resourceRead in flight on any connection.
	reads chan struct{}
	// routes is the method table this server serves (a copy of the
	// package's, which tests add to).
	routes map[string]route
	// readResource is m.ReadResource; tests put a gate in its place.
	readResource func(ctx context.Context, uri string, limit int64) ([]byte, error)

	httpConns httpConns

	mu       sync.Mutex
	conns    map[*conn]struct{}
	versions map[string]*clientEntry // by clientId, for reconnect; see forget
	pruned   time.Time               // when versions was last pruned
	closed   bool
	drained  chan struct{} // closed when shutting down and the last connection ends
}

// New returns a Server over m.
func New(cfg Config, m *session.Manager, log *slog.Logger) *Server {
	cfg.setDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, m: m, log: log.With("component", "server"), conns: map[*conn]struct{}{}, versions: map[string]*clientEntry{}, page: web.Handler()}
	s.reads = make(chan struct{}, DefaultReadsTotal)
	s.readResource = m.ReadResource
	s.routes = maps.Clone(routes)
	s.up = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      s.checkOrigin,
		// Only the protocol is echoed: a client that carries its token
		// as a subprotocol never gets it back in a response header.
		Subprotocols: []string{PageSubprotocol},
	}
	return s
}

// ServeHTTP routes /ahp, /healthz, /metrics and the review page (/,
// /assets/ and its /favicon.ico). Every route is behind the Host check (DNS rebinding): a
// loopback name or an address always passes, so the container's health
// check on loopback does too.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	known := r.URL.Path == "/healthz" || r.URL.Path == "/metrics" || r.URL.Path == "/ahp" || r.URL.Path == "/" || r.URL.Path == "/favicon.ico" || strings.HasPrefix(r.URL.Path, "/assets/")
	if !known {
		http.NotFound(w, r)
		return
	}
	if !s.checkHost(r) {
		s.refuseHost(w, r)
		return
	}
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "application/json")
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"status": "ok", "connections": n, "serverSeq": s.m.Seq()})
	case "/metrics":
		if s.cfg.MetricsHandler == nil {
			http.NotFound(w, r)
			return
		}
		s.cfg.MetricsHandler.ServeHTTP(w, r)
	case "/ahp":
		s.serveAHP(w, r)
	case "/":
		// An address typed without a path (VS Code's "Add Remote Agent
		// Host…" with host:port) dials the root: an upgrade there is
		// the same endpoint as /ahp.
		if websocket.IsWebSocketUpgrade(r) {
			s.serveAHP(w, r)
			return
		}
		s.page.ServeHTTP(w, r)
	default:
		// The page holds no data, but a rebound name must not get a
		// page that then talks to us as its own origin.
		s.page.ServeHTTP(w, r)
	}
}

// refuseHost answers a request whose Host is not this server's, naming
// the flag that accepts it.
func (s *Server) refuseHost(w http.ResponseWriter, r *http.Request) {
	name := hostName(r.Host)
	s.log.Warn("refused request: Host is not this server; --allow-host "+name+" (or CHANGESETD_ALLOW_HOST) accepts it", "host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr)
	http.Error(w, fmt.Sprintf("forbidden: Host %q does not name this server; start changesetd with --allow-host %s (or CHANGESETD_ALLOW_HOST=%s) to accept it", r.Host, name, name), http.StatusForbidden)
}

func (s *Server) serveAHP(w http.ResponseWriter, r *http.Request) {
	if !s.checkOrigin(r) {
		origin := r.Header.Get("Origin")
		http.Error(w, fmt.Sprintf("forbidden: Origin %q may not open a connection; start changesetd with --allow-origin %s (or CHANGESETD_ALLOW_ORIGIN=%s) to accept it", origin, origin, origin), http.StatusForbidden)
		return
	}
	if !s.checkToken(r) {
		s.log.Warn("refused upgrade: missing or wrong token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="changesetd"`)
		http.Error(w, "unauthorized: pass the token as Authorization: Bearer <token>, the subprotocol "+TokenSubprotocolPrefix+"<token>, ?token=<token> or ?tkn=<token>", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.mu.Unlock()
		s.log.Warn("refused connection: at the connection limit (see --max-conns)", "limit", s.cfg.MaxConns, "remote", r.RemoteAddr)
		http.Error(w, fmt.Sprintf("too many connections (limit %d)", s.cfg.MaxConns), http.StatusServiceUnavailable)
		return
	}
	s.mu.Unlock()
	ws, err := s.up.Upgrade(corking(w), r, nil)
	if err != nil {
		s.log.Warn("upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	c := newConn(s, ws, r.RemoteAddr)
	s.mu.Lock()
	closed := s.closed
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	if closed {
		// Upgraded while shutting down: close it, still tracked, so
		// Shutdown waits for the closing handshake like any other.
		c.stream.closeWith(websocket.CloseGoingAway, "server is shutting down")
	}
	s.cfg.Metrics.Connections(+1)
	go func() {
		defer s.cfg.Metrics.Connections(-1)
		c.run()
		s.mu.Lock()
		delete(s.conns, c)
		if s.closed && len(s.conns) == 0 && s.drained != nil {
			close(s.drained)
			s.drained = nil
		}
		s.mu.Unlock()
	}()
}

// HTTP connections that are not (yet) WebSockets need no token, so their
// number is bounded: headers must arrive within httpHeaderTimeout, an idle
// keep-alive connection is closed after httpIdleTimeout, at most
// MaxIdleHTTP stay idle at once (more are closed as soon as they answer),
// and at most MaxUnupgradedHTTP are open at once (more are closed on
// arrival). A WebSocket leaves the count when it is upgraded; MaxConns
// bounds those.
const (
	httpHeaderTimeout = 10 * time.Second
	httpIdleTimeout   = 30 * time.Second
	MaxIdleHTTP       = 64
	MaxUnupgradedHTTP = 512
)

// HTTPServer returns the http.Server to serve s with, its timeouts and
// connection bounds set; errorLog may be nil.
func (s *Server) HTTPServer(errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: httpHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		ErrorLog:          errorLog,
		ConnState:         s.httpConns.track,
	}
}

// httpConns counts the HTTP connections that are not WebSockets.
type httpConns struct {
	mu    sync.Mutex
	state map[net.Conn]http.ConnState
	idle  int
}

func (h *httpConns) track(c net.Conn, st http.ConnState) {
	h.mu.Lock()
	if h.state == nil {
		h.state = map[net.Conn]http.ConnState{}
	}
	prev, known := h.state[c]
	if known && prev == http.StateIdle {
		h.idle--
	}
	var drop bool
	switch st {
	case http.StateNew:
		drop = len(h.state) >= MaxUnupgradedHTTP
		h.state[c] = st
	case http.StateActive:
		h.state[c] = st
	case http.StateIdle:
		h.idle++
		h.state[c] = st
		drop = h.idle > MaxIdleHTTP
	case http.StateHijacked, http.StateClosed:
		delete(h.state, c)
	}
	h.mu.Unlock()
	if drop {
		c.Close() // net/http then reports StateClosed
	}
}

// TokenQueryNames are the query parameters that carry the token: token,
// and tkn, the only one VS Code's remote agent host connection sends (its
// renderer WebSocket cannot set headers).
var TokenQueryNames = []string{"token", "tkn"}

// VSCodeOrigin is the Origin of VS Code desktop's windows. It is allowed
// with a valid token: no web page can send it, and the token is what
// admits a connection anyway (docs/safety.md).
const VSCodeOrigin = "vscode-file://vscode-app"

// PageSubprotocol is the WebSocket subprotocol the review page asks for,
// and the only one the server names in its answer.
const PageSubprotocol = "changesetd.v1"

// TokenSubprotocolPrefix starts the subprotocol that carries the token:
// a browser page cannot set a header on its WebSocket, and a token in
// Sec-WebSocket-Protocol stays out of URLs, which end up in the
// browser's history, in proxies' logs and in screenshots.
const TokenSubprotocolPrefix = "changesetd.token."

// checkToken accepts the token as a bearer header, a subprotocol
// (TokenSubprotocolPrefix) or a query parameter, compared in constant
// time. None is ever logged.
func (s *Server) checkToken(r *http.Request) bool {
	if s.cfg.Token == "" {
		return false
	}
	var got string
	q := r.URL.Query()
	for _, name := range TokenQueryNames {
		if v := q.Get(name); v != "" {
			got = v
			break
		}
	}
	for _, p := range websocket.Subprotocols(r) {
		if t, ok := strings.CutPrefix(p, TokenSubprotocolPrefix); ok {
			got = t
			break
		}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			got = t
		}
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// checkOrigin admits non-browser clients (no Origin), loopback pages, the
// review page this server serves itself (same origin), VS Code's windows
// when they bring the token, and configured origins; other browser pages
// are refused (cross-site WebSocket hijacking).
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if origin == VSCodeOrigin && s.checkToken(r) {
		return true
	}
	if slices.Contains(s.cfg.AllowOrigins, origin) || slices.Contains(s.cfg.AllowOrigins, "*") {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	// Same origin: the page came from this listener under the Host the
	// upgrade names, and checkHost has already refused rebound names.
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host && u.Path == "" {
		return true
	}
	ok := isLoopbackHost(u.Hostname())
	if !ok {
		s.log.Warn("refused upgrade: Origin not allowed", "origin", origin, "remote", r.RemoteAddr)
	}
	return ok
}

// checkHost refuses requests whose Host names something other than a
// loopback name or an address of this machine (DNS rebinding).
func (s *Server) checkHost(r *http.Request) bool {
	host := hostName(r.Host)
	if isLoopbackHost(host) {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return true // a literal address cannot be rebound
	}
	for _, o := range s.cfg.AllowOrigins {
		if u, err := url.Parse(o); err == nil && u.Hostname() == host {
			return true
		}
	}
	for _, h := range s.cfg.AllowHosts {
		if matchHost(hostName(h), host) {
			return true
		}
	}
	return false
}

// matchHost reports whether host matches an --allow-host pattern: a name,
// or "*.suffix", which matches a name of one or more labels before
// ".suffix" (*.app.github.dev matches x.app.github.dev and
// a.b.app.github.dev, not app.github.dev). Case does not matter.
func matchHost(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		rest, found := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(suffix))
		return found && rest != "" && !strings.HasSuffix(rest, ".")
	}
	return strings.EqualFold(pattern, host)
}

// checkHostPattern reports what is wrong with an --allow-host value: a
// host name or address, optionally with a port, or "*." and a name.
func checkHostPattern(p string) error {
	name := hostName(p)
	if _, port, err := net.SplitHostPort(p); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("--allow-host %q: give a host name, optionally with :port, not a URL", p)
		}
	}
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return nil
	}
	labels := strings.TrimPrefix(name, "*.")
	if labels == "" || strings.Contains(labels, "*") {
		return fmt.Errorf("--allow-host %q: a pattern is a host name, or *. and a host name (*.app.github.dev); '*' goes only at the start, before a dot", p)
	}
	for _, l := range strings.Split(labels, ".") {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") || strings.ContainsFunc(l, func(r rune) bool {
			return !(r == '-' || r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
		}) {
			return fmt.Errorf("--allow-host %q: %q is not a host name label (letters, digits and inner hyphens)", p, l)
		}
	}
	return nil
}

// Validate reports the first malformed value of c.
func (c Config) Validate() error {
	for _, h := range c.AllowHosts {
		if err := checkHostPattern(h); err != nil {
			return err
		}
	}
	return nil
}

// hostName is the name of a Host header (or an --allow-host value)
// without its port.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

func isLoopbackHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Shutdown closes every connection with a close frame and waits for them,
// or until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	done := make(chan struct{})
	if len(s.conns) == 0 {
		close(done)
	} else {
		s.drained = done
	}
	s.mu.Unlock()
	// Requests still being answered (the operations the session manager
	// drained just finished, say) answer before the close frame.
	for _, c := range conns {
		select {
		case <-c.answered():
		case <-ctx.Done():
		}
	}
	for _, c := range conns {
		c.stream.closeWith(websocket.CloseGoingAway, "server is shutting down")
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MaxClientIDBytes bounds a clientId: it is kept for reconnects and
// named on every log line of its connection.
const MaxClientIDBytes = 256

// clientGrace is how long the version of a client without connections is
// kept for its reconnect.
const clientGrace = 10 * time.Minute

// clientEntry is what is kept of a client for its reconnect.
type clientEntry struct {
	version string
	conns   int       // connections that named it
	goneAt  time.Time // when conns dropped to 0
}

// checkClientID refuses an empty or oversized clientId.
func checkClientID(method, id string) error {
	switch {
	case id == "":
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: clientId is required", method)
	case len(id) > MaxClientIDBytes:
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: clientId is %d bytes; at most %d are accepted", method, len(id), MaxClientIDBytes)
	}
	return nil
}

// rememberVersion records a connection of clientID, which negotiated
// version (empty: keep the one recorded).
func (s *Server) rememberVersion(clientID, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	e := s.versions[clientID]
	if e == nil {
		e = &clientEntry{version: version}
		s.versions[clientID] = e
	}
	if version != "" {
		e.version = version
	}
	e.conns++
}

// forget records that a connection of clientID ended; once none is left
// its entry is kept for clientGrace, then pruned.
func (s *Server) forget(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.versions[clientID]; e != nil {
		e.conns--
		if e.conns <= 0 {
			e.conns, e.goneAt = 0, time.Now()
		}
	}
	s.pruneLocked()
}

// pruneLocked drops the clients gone for longer than clientGrace, at most
// once a minute. s.mu must be held.
func (s *Server) pruneLocked() {
	now := time.Now()
	if now.Sub(s.pruned) < time.Minute {
		return
	}
	s.pruned = now
	for id, e := range s.versions {
		if e.conns == 0 && now.Sub(e.goneAt) > clientGrace {
			delete(s.versions, id)
		}
	}
}

func (s *Server) versionOf(clientID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.versions[clientID]
	if !ok {
		return "", false
	}
	return e.version, true
}
