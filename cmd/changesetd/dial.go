package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
)

// dialConfig says how the client commands (turn, health) reach the daemon:
// --url and --token, or else the address and token the daemon keeps in its
// state dir.
type dialConfig struct {
	url       string
	token     string
	tokenFile string
	stateDir  string
	fs        *flag.FlagSet
}

// flags registers --url and --state-dir, and with withToken (every command
// but health, which needs none) --token and --token-file.
func (dc *dialConfig) flags(fs *flag.FlagSet, withToken bool) {
	dc.fs = fs
	fs.StringVar(&dc.url, "url", "", "the daemon's address: host:port, or the connect URL it prints (default: read from the state dir)")
	if withToken {
		fs.StringVar(&dc.token, "token", "", "the daemon's token (default: from --url's token=, else the state dir)")
		fs.StringVar(&dc.tokenFile, "token-file", "", "read the daemon's token from this file")
	}
	fs.StringVar(&dc.stateDir, "state-dir", defaultStateDir(), "the daemon's state dir")
}

// dialEnv reports the flags of the client commands that also read their
// CHANGESETD_* variable: those that say how to reach the daemon. The
// others describe one invocation, and a variable left set in a shell must
// not change what the next command does.
func dialEnv(name string) bool {
	switch name {
	case "url", "token", "token-file", "state-dir":
		return true
	}
	return false
}

// parse parses args and reads the CHANGESETD_* variables of the flags the
// command line left unset. Only the flags that say how to reach the daemon
// are read from the environment: the others describe one invocation.
func (dc *dialConfig) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	skip := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { skip[f.Name] = given[f.Name] || !dialEnv(f.Name) })
	if given["token"] || given["token-file"] {
		skip["token"], skip["token-file"] = true, true
	}
	if err := flagsFromEnv(fs, skip); err != nil {
		return err
	}
	if dc.token != "" && dc.tokenFile != "" {
		return fmt.Errorf("use only one of %s and %s", flagSource(fs, "token"), flagSource(fs, "token-file"))
	}
	return nil
}

// resolve returns the daemon's host:port and, when needToken, its token.
func (dc *dialConfig) resolve(needToken bool) (addr, token string, err error) {
	if dc.url != "" {
		addr, token, err = parseDaemonURL(dc.url)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", flagSource(dc.fs, "url"), err)
		}
	} else {
		raw, err := os.ReadFile(filepath.Join(dc.stateDir, "daemon.json"))
		if err != nil {
			return "", "", fmt.Errorf("no running daemon found in %s (is \"changesetd serve\" running with this --state-dir? or pass --url): %w", dc.stateDir, err)
		}
		var info struct {
			Listen string `json:"listen"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return "", "", fmt.Errorf("%s/daemon.json: %w", dc.stateDir, err)
		}
		addr = info.Listen
	}
	if !needToken {
		return addr, "", nil
	}
	switch {
	case dc.token != "":
		token = dc.token
	case dc.tokenFile != "":
		b, err := os.ReadFile(dc.tokenFile)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", flagSource(dc.fs, "token-file"), err)
		}
		token = strings.TrimSpace(string(b))
	case token != "": // from the URL
	default:
		b, err := os.ReadFile(filepath.Join(dc.stateDir, "token"))
		if err != nil {
			return "", "", fmt.Errorf("no token: pass --token, --token-file or CHANGESETD_TOKEN, or the --state-dir of the daemon (%w)", err)
		}
		token = strings.TrimSpace(string(b))
	}
	return addr, token, nil
}

// parseDaemonURL accepts host:port, http(s)://host:port or the printed
// connect URL ws://host:port/ahp?token=..., whose token it returns.
func parseDaemonURL(s string) (addr, token string, err error) {
	if !strings.Contains(s, "://") {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return "", "", fmt.Errorf("%q is neither host:port nor a ws:// URL", s)
		}
		return s, "", nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", "", err
	}
	switch u.Scheme {
	case "ws", "http":
	default:
		return "", "", fmt.Errorf("%q: the daemon speaks plain ws:// (put a TLS proxy in front for wss)", s)
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return addr, u.Query().Get("token"), nil
}

const healthUsage = `Usage:
  changesetd health [--url HOST:PORT] [--state-dir DIR] [--timeout 5s]

Exits 0 when the daemon answers its /healthz endpoint, 1 when it does not,
printing why. The daemon is found as by "changesetd turn": --url, else its
state dir. Meant for container health checks (no shell or curl needed).
`

// healthCmd implements "changesetd health".
func healthCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("changesetd health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var dc dialConfig
	dc.flags(fs, false)
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, healthUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "changesetd health: %v\n", err)
		return 2
	}
	if err := health(ctx, &dc, *timeout); err != nil {
		fmt.Fprintf(stderr, "changesetd health: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

func health(ctx context.Context, dc *dialConfig, timeout time.Duration) error {
	addr, _, err := dc.resolve(false)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	// Straight to the daemon: a proxy from the environment (common in
	// containers) must not stand in between.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the daemon at %s does not answer: %w", addr, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) != nil || body.Status != "ok" {
		return fmt.Errorf("the daemon at %s answers /healthz with HTTP %s, status %q", addr, resp.Status, body.Status)
	}
	return nil
}

// client is the CLI's connection to the daemon. Its calls are made one at
// a time; the notifications that come before a call's response go to
// onNotify when it is set, else nowhere.
type client struct {
	c   *ahpclient.Client
	id  string // the clientId it initialized with
	seq int64  // the last clientSeq dispatched
	// onNotify, when set, sees the notifications call skips.
	onNotify func(protocol.RPCMessage)
}

// dialDaemon connects to the daemon and initializes.
func dialDaemon(ctx context.Context, dc *dialConfig) (*client, error) {
	addr, token, err := dc.resolve(true)
	if err != nil {
		return nil, err
	}
	ac, resp, err := ahpclient.Dial(ctx, "ws://"+addr+"/ahp", ahpclient.Options{Token: token, HandshakeTimeout: 45 * time.Second, Proxy: http.ProxyFromEnvironment})
	if err != nil {
		return nil, handshakeError(addr, resp, err)
	}
	host, _ := os.Hostname()
	c := &client{c: ac, id: fmt.Sprintf("changesetd-cli-%s-%d", host, os.Getpid())}
	err = c.call(ctx, protocol.MethodInitialize, protocol.InitializeParams{
		BaseParams:       protocol.BaseParams{Channel: protocol.RootURI},
		ProtocolVersions: []string{"1.0.0"},
		ClientID:         c.id,
		ClientInfo:       &protocol.ClientInfo{Name: "changesetd", Version: version},
	}, nil)
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// handshakeError explains a refused upgrade by its status instead of
// the WebSocket library's "bad handshake".
func handshakeError(addr string, resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("connect to the daemon at %s: %w", addr, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("the daemon at %s refused the token (wrong token): pass the daemon's token with --token, --token-file or CHANGESETD_TOKEN, or --state-dir of the daemon", addr)
	case http.StatusForbidden:
		return fmt.Errorf("the daemon at %s refused the connection: %s", addr, strings.TrimSpace(string(body)))
	}
	return fmt.Errorf("connect to the daemon at %s: HTTP %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
}

func (c *client) close() { c.c.Close() }

// call sends a request and waits for its response, passing notifications
// to onNotify or skipping them.
func (c *client) call(ctx context.Context, method string, params, out any) error {
	var hook func(*ahpclient.Message)
	if on := c.onNotify; on != nil {
		hook = func(m *ahpclient.Message) { on(*m) }
	}
	return c.c.CallNotes(ctx, method, params, out, hook)
}

// dispatch sends a on channel, to which c is subscribed, and waits for the
// daemon's echo of it, or its rejection, returned as an errRejected.
func (c *client) dispatch(ctx context.Context, channel string, a protocol.Action) error {
	c.seq++
	seq := c.seq
	echo := make(chan error, 1)
	match := func(m *ahpclient.Message) {
		var e protocol.ActionEnvelope
		if m.Method != protocol.NotifyAction || json.Unmarshal(m.Params, &e) != nil || e.Channel != channel || e.Origin == nil || e.Origin.ClientID != c.id || e.Origin.ClientSeq != seq {
			return
		}
		var err error
		if e.RejectionReason != "" {
			err = errRejected{e.RejectionReason}
		}
		select {
		case echo <- err:
		default:
		}
	}
	// The echo may come before the response or after it.
	c.c.Listen(match)
	defer c.c.Listen(nil)
	params := protocol.DispatchActionParams{Channel: channel, ClientSeq: seq, Action: protocol.StateAction{Action: a}}
	if err := c.c.CallNotes(ctx, protocol.MethodDispatchAction, params, nil, match); err != nil {
		if _, rpc := errors.AsType[*protocol.Error](err); rpc {
			return err
		}
		return fmt.Errorf("wait for the daemon to apply %s: %w", a.ActionType(), err)
	}
	select {
	case err := <-echo:
		return err
	case <-c.c.Done():
		return fmt.Errorf("wait for the daemon to apply %s: %w", a.ActionType(), c.c.Err())
	case <-ctx.Done():
		return fmt.Errorf("wait for the daemon to apply %s: %w", a.ActionType(), ctx.Err())
	}
}
