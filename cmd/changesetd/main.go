package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/server"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/source"
	"github.com/changesetd/changesetd/store"
)

// What the daemon injects into the session layer.
var (
	_ session.Store   = (*store.DB)(nil)
	_ session.Metrics = metrics.Session{}
	_ server.Metrics  = metrics.Server{}
)

func main() {
	// SIGHUP arrives when the terminal closes or a supervisor says so; like
	// SIGTERM it stops the daemon gracefully rather than killing it. Started
	// with SIGHUP ignored (nohup), it stays ignored: asking for it would
	// undo nohup.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `changesetd serves live git changesets to AHP clients over WebSocket.

Usage:
  changesetd serve [flags] [DIR...]             run the daemon; each DIR becomes a session
  changesetd turn start|end|status|edit|notify  mark an agent turn boundary; list running turns; report an agent's writes
  changesetd annotations [flags]                print the session's review annotations; reply, resolve, reopen
  changesetd diff [flags]                       print a changeset as one patch for git apply
  changesetd edits [flags]                      report an edit tool's EditOutput events (NDJSON on stdin)
  changesetd sessions [rm ID...] [flags]        list the daemon's sessions; remove some
  changesetd rewind [flags] TURN                put every file a turn changed back as it was before it
  changesetd draft [flags] PATH < TEXT          show a file being written before it is (its text so far on stdin)
  changesetd health [flags]                     exit 0 if the daemon answers, 1 if not
  changesetd service install|uninstall|status   start the daemon at login (systemd or launchd)
  changesetd version                            print the version and the commit it was built from

Run "changesetd COMMAND --help" for its flags. Every flag can also be set with
an environment variable: CHANGESETD_ and the flag name in capitals, dashes
as underscores (CHANGESETD_ALLOW_HOST=a,b for --allow-host); a flag given
on the command line wins.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stderr = flagOutput(stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "turn":
		return turnCmd(ctx, args[1:], stdin, stdout, stderr)
	case "health":
		return healthCmd(ctx, args[1:], stdout, stderr)
	case "annotations":
		return annotationsCmd(ctx, args[1:], stdin, stdout, stderr)
	case "diff", "edits":
		return agentCmd(ctx, args, stdin, stdout, stderr)
	case "sessions":
		return sessionsCmd(ctx, args[1:], stdout, stderr)
	case "service":
		return serviceCmd(ctx, args[1:], stdout, stderr)
	case "rewind":
		return rewindCmd(ctx, args[1:], stdin, stdout, stderr)
	case "draft":
		return draftCmd(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "changesetd: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// serveArgs are the flags of "changesetd serve".
type serveArgs struct {
	listen       string
	token        string
	tokenFile    string
	stateDir     string
	allowOrigins stringList
	allowHosts   stringList
	allowRoots   stringList
	logFormat    string
	logLevel     string
	replayBuffer int
	maxFrame     int64
	sendQueue    int
	idleLinger   time.Duration
	draftTimeout time.Duration
	maxConns     int
	cpuProfile   string
	heapProfile  string
	base         string
	dirs         []string
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func parseServe(args []string, stderr io.Writer) (*serveArgs, error) {
	var a serveArgs
	fs := flag.NewFlagSet("changesetd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&a.listen, "listen", "127.0.0.1:7878", "address to listen on; anything but loopback requires care (see docs/safety.md)")
	fs.StringVar(&a.token, "token", "", "token clients must present (default: generated and stored in the state dir)")
	fs.StringVar(&a.tokenFile, "token-file", "", "read the token from this file")
	fs.StringVar(&a.stateDir, "state-dir", defaultStateDir(), "directory for the token and daemon state")
	fs.Var(&a.allowOrigins, "allow-origin", "browser origin allowed to connect, e.g. https://ide.example (repeatable)")
	fs.Var(&a.allowHosts, "allow-host", "host name clients may use in the Host header besides loopback names and IP addresses, e.g. a container's service name (repeatable)")
	fs.Var(&a.allowRoots, "allow-root", "directory under which clients may create sessions (repeatable; default: your home directory, the temp directory and every DIR)")
	fs.StringVar(&a.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.IntVar(&a.replayBuffer, "replay-buffer", session.DefaultReplayBuffer, "actions kept per channel for reconnect replay")
	fs.Int64Var(&a.maxFrame, "max-frame", server.DefaultMaxFrameBytes, "largest accepted WebSocket message in bytes")
	fs.IntVar(&a.sendQueue, "send-queue", server.DefaultSendQueue, "messages queued per connection before a slow reader's changeset backlog is replaced by a snapshot (frames no snapshot replaces close it at four times this)")
	fs.DurationVar(&a.idleLinger, "idle-linger", 30*time.Second, "how long a changeset stays watched and current after its last subscriber left, so a reload or reconnect finds it ready (0: it stops at once)")
	fs.DurationVar(&a.draftTimeout, "draft-timeout", session.DefaultDraftTimeout, "how long an agent's draft of a file stands in for the file when no further draft comes and the file is not written")
	fs.IntVar(&a.maxConns, "max-conns", server.DefaultMaxConns, "concurrent WebSocket connections; more get HTTP 503")
	fs.StringVar(&a.base, "base", "", "base of every session's branch changeset, e.g. origin/main (default: the current branch's upstream, else the remote's default branch, else main or master)")
	fs.StringVar(&a.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	fs.StringVar(&a.heapProfile, "heap-profile", "", "write a heap profile to this file when the daemon stops: what it held, after a collection (for go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: changesetd serve [flags] [DIR...]\n\nEach DIR becomes a session whose id is stable for its absolute path and repository.\n\nFlags (each also read from the environment variable named after it):\n")
		printDefaults(fs, nil)
	}
	// Flags may follow the directories ("serve . --log-level debug").
	flags, dirs := splitInterspersed(fs, args)
	if err := parseFlags(fs, flags, []string{"token", "token-file"}); err != nil {
		return nil, err
	}
	a.dirs = append(dirs, fs.Args()...)
	return &a, nil
}

func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "changesetd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "changesetd")
	}
	return tempStateDir()
}

// tempStateDir is the state dir when there is neither $XDG_STATE_HOME nor
// a home directory (a service account, a bare container).
func tempStateDir() string { return filepath.Join(os.TempDir(), "changesetd") }

// warnStateDir logs what makes the state dir a poor place for the token:
// the temp-dir fallback, which other users can see and a reboot may clear,
// and a directory owned by another user.
func warnStateDir(log *slog.Logger, dir string) {
	if dir == tempStateDir() {
		log.Warn("no home directory and no $XDG_STATE_HOME: keeping state in the temp directory, where a reboot may clear it; set --state-dir", "stateDir", dir)
	}
	if owner, ok := ownerOf(dir); ok && owner != os.Getuid() {
		log.Warn("the state dir belongs to another user, who can read the token and the sessions; use a directory of your own with --state-dir", "stateDir", dir, "owner", owner, "uid", os.Getuid())
	}
}

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// exitDamagedState is serve's exit code when state.db is damaged and no
// backup could replace it; 1 is every other startup failure, 2 usage.
const exitDamagedState = 3

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, err := parseServe(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return 2
	}
	log, err := newLogger(a.logFormat, a.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return 2
	}
	if a.cpuProfile != "" {
		stop, err := startCPUProfile(a.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "changesetd: --cpu-profile: %v\n", err)
			return 2
		}
		defer stop()
	}
	if err := os.MkdirAll(a.stateDir, 0o700); err != nil {
		fmt.Fprintf(stderr, "changesetd: state dir: %v%s\n", err, stateDirHint(err, a.stateDir))
		return 1
	}
	_ = os.Chmod(a.stateDir, 0o700)
	warnStateDir(log, a.stateDir)
	token, err := loadToken(a)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: %v%s\n", err, stateDirHint(err, a.stateDir))
		return 1
	}

	ln, err := net.Listen("tcp", a.listen)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: listen: %v%s\n", err, addrInUseHint(err, a.listen, a.stateDir))
		return 1
	}
	if host, _, _ := net.SplitHostPort(a.listen); !isLoopback(host) {
		log.Warn("listening beyond loopback: anyone who can reach this address and has the token can read these working trees", "listen", a.listen)
	}
	local, everywhere := connectAddr(ln.Addr())

	db, err := store.Open(filepath.Join(a.stateDir, "state.db"))
	if errors.Is(err, store.ErrDamaged) {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return exitDamagedState
	}
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return 1
	}
	if msg := db.Recovered(); msg != "" {
		log.Warn("state database recovered from its backup", "report", msg)
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Warn("closing the state database", "err", err)
		}
	}()

	snaps, err := snapstore.Open(filepath.Join(a.stateDir, "snapshots.git"))
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return 1
	}
	defer snaps.Close()
	g := &goroutines{log: log}
	defer g.Wait() // before the stores close under them
	// Ended when serve returns, whatever the reason, before the wait.
	ctx, endGoroutines := context.WithCancel(ctx)
	defer endGoroutines()

	m := session.NewManager(session.Options{
		Store:         db,
		Metrics:       metrics.Session{},
		AllowRoots:    allowRoots(a),
		AfterDispose:  func() { collectSnapshots(context.Background(), db, snaps, log) },
		Logger:        log,
		ReplayBuffer:  a.replayBuffer,
		OpenWorkspace: source.Opener(log, snaps),
		ReadFile:      source.ReadFile,
		ResolveFile:   source.ResolveFile,
		ListDir:       source.ListDir,
		Version:       version,
		SeqBase:       time.Now().UnixMicro(), // never reuse a serverSeq of an earlier run
		DefaultBase:   a.base,
		IdleLinger:    a.idleLinger,
		DraftTimeout:  a.draftTimeout,
	})
	scfg := server.Config{
		Token:          token,
		AllowOrigins:   a.allowOrigins,
		AllowHosts:     a.allowHosts,
		MaxFrameBytes:  a.maxFrame,
		SendQueue:      a.sendQueue,
		MaxConns:       a.maxConns,
		Version:        version,
		Metrics:        metrics.Server{},
		MetricsHandler: metrics.Handler(),
	}
	if err := scfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return 2
	}
	srv := server.New(scfg, m, log)

	restored, err := restoreSessions(db, m, snaps, log)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: %v\n", err)
		return 1
	}
	g.Go("snapshot garbage collection", func() error { collectSnapshots(ctx, db, snaps, log); return nil })
	g.Go("memory trim", func() error { newTrimmer().run(ctx); return nil })
	first := "" // the session of the first directory, which the page opens on
	for _, d := range a.dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			fmt.Fprintf(stderr, "changesetd: %s: %v\n", d, err)
			return 1
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if uri, ok := restored[abs]; ok {
			first = cmp.Or(first, uri)
			continue // the session made for it, with its baseline and turns
		}
		uri := protocol.SessionScheme + "/" + source.SessionID(abs, source.RootCommit(abs))
		first = cmp.Or(first, uri)
		_, err = m.Create(session.CreateParams{URI: uri, WorkingDirectories: []string{session.FileURI(abs)}})
		if err != nil {
			fmt.Fprintf(stderr, "changesetd: %s: %v\n", d, err)
			return 1
		}
	}

	hs := srv.HTTPServer(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	errc := g.Go("http server", func() error { return hs.Serve(ln) })

	url := fmt.Sprintf("ws://%s/ahp?token=%s", local, token)
	if err := writeDaemonInfo(a.stateDir, local); err != nil {
		log.Warn("cannot record the daemon address in the state dir", "err", err)
	}
	log.Info("serving", "listen", ln.Addr().String(), "sessions", len(a.dirs), "stateDir", a.stateDir)
	// The review page takes the token in the fragment, which the browser
	// never sends to the server, so it stays out of logs and Referers.
	review := fmt.Sprintf("http://%s/#token=%s", local, token)
	if first != "" {
		// The page opens on it, not on a session an agent's hook made
		// later in another directory.
		review += "&session=" + neturl.QueryEscape(first)
	}
	if everywhere {
		// A wildcard address cannot be dialled from elsewhere: print the
		// loopback URL and say that other names reach it too.
		// Say it as asked: Go reports 0.0.0.0 as [::] (it listens dual-stack).
		host, _, _ := net.SplitHostPort(a.listen)
		_, port, _ := net.SplitHostPort(local)
		// In a container the port the host publishes may be another
		// one: say so rather than let the URL claim this one.
		fmt.Fprintf(stdout, "changesetd %s ready, listening on all interfaces (%s); from another machine or container use its address or name (names need --allow-host); behind a port mapping (docker run -p HOSTPORT:%s) use the host's port in these URLs\nconnect: %s\nreview: %s\n", version, net.JoinHostPort(host, port), port, url, review)
	} else {
		fmt.Fprintf(stdout, "changesetd %s ready\nconnect: %s\nreview: %s\n", version, url, review)
	}
	fmt.Fprint(stdout, vscodeLines(local, token))

	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Error("server stopped", "err", err)
	}
	if a.heapProfile != "" {
		// Before anything is released: what it held while serving.
		writeHeapProfile(a.heapProfile, stderr)
	}
	log.Info("shutting down")
	stopGracefully(log, shutdownStepBudget, hs.Shutdown, m.Drain, srv.Shutdown)
	// Then the sessions stop, and only then (deferred) the stores close
	// under them.
	m.Close()
	_ = os.Remove(filepath.Join(a.stateDir, "daemon.json"))
	log.Info("stopped")
	return 0
}

// shutdownStepBudget is how long each step of a graceful stop may take.
const shutdownStepBudget = 10 * time.Second

// stopGracefully stops accepting connections (stopAccepting: hs.Shutdown
// closes the listener and does not wait for WebSockets); then operations
// and turn boundaries in progress finish and answer while new ones are
// refused (drain); then every connection gets a close frame once its
// replies in flight are queued (closeConns). Each step has a budget of
// its own: a drain that takes all of its time must not leave none for
// the replies it let finish to reach their clients.
func stopGracefully(log *slog.Logger, budget time.Duration, stopAccepting, drain, closeConns func(context.Context) error) {
	step := func(f func(context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		return f(ctx)
	}
	_ = step(stopAccepting)
	if err := step(drain); err != nil {
		log.Warn("operations still running at shutdown", "err", err)
	}
	if err := step(closeConns); err != nil {
		log.Warn("connections did not close in time", "err", err)
	}
}

// connectAddr is the address a local client dials to reach a listener on
// addr: addr itself, or the loopback address of its port when addr is the
// unspecified address (0.0.0.0 or ::), which nobody can dial elsewhere.
// everywhere reports the latter. Go listens dual-stack on "::", so
// 127.0.0.1 reaches both.
func connectAddr(addr net.Addr) (local string, everywhere bool) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return addr.String(), false
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port)), true
}

// stateDirHint says what to do when the state dir is not writable, the
// usual first-start failure in a container: a volume owned by root, or a
// bind mount owned by another user than the one the container runs as.
func stateDirHint(err error, dir string) string {
	if !errors.Is(err, fs.ErrPermission) {
		return ""
	}
	return fmt.Sprintf(" (this process runs as uid %d and cannot write %s: make the directory that user's, or run as its owner, e.g. docker run --user \"$(id -u):$(id -g)\" for a bind mount)", os.Getuid(), dir)
}

// addrInUseHint explains a listen address already taken: by a changesetd
// of this state dir (its daemon.json names the address and a live pid), or
// by something else; either way --listen picks another.
func addrInUseHint(err error, listen, stateDir string) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	const other = "choose another address with --listen (e.g. --listen 127.0.0.1:7879, or 127.0.0.1:0 for any free port)"
	raw, rerr := os.ReadFile(filepath.Join(stateDir, "daemon.json"))
	var info struct {
		Listen string `json:"listen"`
		PID    int    `json:"pid"`
	}
	if rerr == nil && json.Unmarshal(raw, &info) == nil && info.PID > 0 && processAlive(info.PID) {
		return fmt.Sprintf(" (a changesetd is already running: pid %d, on %s with state dir %s; use it (\"changesetd sessions\" lists what it serves), stop it, or %s)", info.PID, info.Listen, stateDir, other)
	}
	return fmt.Sprintf(" (another program, or a changesetd with another state dir, holds %s: %s)", listen, other)
}

// processAlive reports whether a process with pid exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loadToken returns the token from the flags, or the one stored in the
// state dir, generating and storing it (0600) on first use.
func loadToken(a *serveArgs) (string, error) {
	switch {
	case a.token != "":
		return a.token, nil
	case a.tokenFile != "":
		b, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty", a.tokenFile)
		}
		return t, nil
	}
	path := filepath.Join(a.stateDir, "token")
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			_ = os.Chmod(path, 0o600)
			return t, nil
		}
	}
	var buf [24]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(buf[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("store token: %w", err)
	}
	return t, nil
}

// writeDaemonInfo records where the daemon listens, for local tools.
func writeDaemonInfo(stateDir, addr string) error {
	path := filepath.Join(stateDir, "daemon.json")
	tmp := path + ".tmp"
	body := fmt.Sprintf("{\"listen\":%q,\"pid\":%d}\n", addr, os.Getpid())
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// restoreSessions brings back every stored session with its baseline and
// turns (serve then drops, in the background, the snapshot objects no
// stored session refers to: collectSnapshots). A
// session whose directory now holds another repository (a different
// project mounted at the same path) is not restored: its records stay, in
// case that project comes back, and the directory gets a new session.
// restored maps the directories whose command-line session was restored
// to that session.
func restoreSessions(db *store.DB, m *session.Manager, snaps *snapstore.Store, log *slog.Logger) (restored map[string]string, err error) {
	recs, err := db.Sessions()
	if err != nil {
		return nil, err
	}
	restored = map[string]string{}
	n := 0
	m.PurgeDisposed()
recs:
	for _, rec := range recs {
		if !rec.DisposedAt.IsZero() {
			continue // kept for a while, until created again (session.DisposedRetention)
		}
		for _, w := range rec.Workspaces {
			if ok, why := source.SameRepository(w); !ok {
				log.Warn("not restoring a session: its directory holds another repository now", "session", rec.URI, "dir", w.Dir, "reason", why)
				continue recs
			}
		}
		if source.NameRepositories(&rec) {
			// Recorded before repositories were named: name them now, so
			// that from this start on another project at the same path is
			// told apart.
			if err := db.PutSession(rec); err != nil {
				log.Warn("cannot record the session's repository", "session", rec.URI, "err", err)
			}
		}
		turns, err := db.Turns(rec.ID)
		if err != nil {
			return nil, err
		}
		if len(turns) == 0 && !slices.ContainsFunc(rec.Workspaces, func(w store.WorkspaceRecord) bool { return w.Baseline != "" }) {
			// Recorded with nothing to show (earlier versions recorded
			// sessions for directories they could not serve, such as a hook
			// run outside a repository): drop it.
			log.Info("dropping a stored session that recorded nothing", "session", rec.URI)
			if err := db.DeleteSession(rec.ID, protocol.ChangesetScheme+"/"+rec.ID+"/"); err != nil {
				log.Warn("cannot drop a stored session", "session", rec.URI, "err", err)
			}
			continue
		}
		if _, err := m.Restore(rec, turns); err != nil {
			log.Error("cannot restore session", "session", rec.URI, "err", err)
			continue
		}
		n++
		if len(rec.Workspaces) == 1 {
			// One the command line made for a DIR: before or since
			// sessions were named by repository.
			w := rec.Workspaces[0]
			if rec.URI == protocol.SessionScheme+"/"+source.SessionID(w.Dir, w.Repo) || rec.URI == protocol.SessionScheme+"/"+source.StableID(w.Dir) {
				restored[w.Dir] = rec.URI
			}
		}
	}
	log.Info("restored sessions", "count", n)
	return restored, nil
}

// collectSnapshots removes snapshot objects that no stored session (its
// baseline or turns) refers to. Objects written in the last hour are
// spared by the store, so a boundary being recorded meanwhile is safe. It
// stops early when ctx is done.
func collectSnapshots(ctx context.Context, db *store.DB, snaps *snapstore.Store, log *slog.Logger) {
	recs, err := db.Sessions()
	if err != nil {
		log.Warn("snapshot garbage collection skipped", "err", err)
		return
	}
	var keep []string
	for _, rec := range recs {
		for _, w := range rec.Workspaces {
			keep = append(keep, w.Baseline)
		}
		turns, err := db.Turns(rec.ID)
		if err != nil {
			log.Warn("snapshot garbage collection skipped", "err", err)
			return
		}
		for _, t := range turns {
			keep = append(keep, t.Start...)
			keep = append(keep, t.End...)
		}
		slots, err := db.AnnotationSlots(rec.ID)
		if err != nil {
			log.Warn("snapshot garbage collection skipped", "err", err)
			return
		}
		for _, sl := range slots {
			// Comments on the working tree keep the snapshot their lines
			// are on.
			var a struct {
				Meta map[string]any `json:"_meta"`
			}
			if json.Unmarshal(sl.Value, &a) == nil {
				if t, ok := a.Meta[protocol.MetaSnapshot].(string); ok {
					keep = append(keep, t)
				}
			}
		}
	}
	// A file's version marked reviewed stays, to show what changed since.
	reviewed, err := db.ReviewedTrees()
	if err != nil {
		log.Warn("snapshot garbage collection skipped", "err", err)
		return
	}
	keep = append(keep, reviewed...)
	n, err := snaps.GC(ctx, slices.DeleteFunc(keep, func(t string) bool { return t == "" }))
	if err != nil && ctx.Err() == nil {
		log.Warn("snapshot garbage collection failed", "err", err)
	} else if err == nil && n > 0 {
		log.Info("removed unreferenced snapshot objects", "count", n)
	}
}

// allowRoots is where createSession may point: the flags, or by default
// the home and temp directories and the directories served from the
// command line.
func allowRoots(a *serveArgs) []string {
	roots := slices.Clone([]string(a.allowRoots))
	if len(roots) == 0 {
		if home, err := os.UserHomeDir(); err == nil {
			roots = append(roots, home)
		}
		roots = append(roots, os.TempDir())
	}
	for _, d := range a.dirs {
		if abs, err := filepath.Abs(d); err == nil {
			roots = append(roots, abs)
		}
	}
	return roots
}

// writeHeapProfile writes the live heap, after a collection, to path, and
// says on stderr how many objects and bytes it holds: the profile's own
// counts are sampled.
func writeHeapProfile(path string, stderr io.Writer) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stderr, "changesetd: live heap at stop: %d objects, %d bytes\n", ms.HeapObjects, ms.HeapAlloc)
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "changesetd: --heap-profile: %v\n", err)
	}
}

// startCPUProfile profiles the process from now until the returned stop,
// which writes the profile out.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
