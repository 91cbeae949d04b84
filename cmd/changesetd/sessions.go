package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

const sessionsUsage = `Usage:
  changesetd sessions [--url HOST:PORT] [--state-dir DIR]
  changesetd sessions rm ID... [--url HOST:PORT] [--state-dir DIR]

Lists the sessions of the running daemon: each one's id, its working
directories, when it was created and its running turns. "rm" disposes of
sessions (by id, or by their ahp-session:/ URI): their turns, snapshots and
review state are removed, and a directory given to "serve" gets a new
session at the next start.
`

// sessionsCmd implements "changesetd sessions" and "sessions rm".
func sessionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "changesetd sessions"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, sessionsUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	pos, err := parseInterspersed(&dc, fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	verb := "list"
	if len(pos) > 0 {
		verb, pos = pos[0], pos[1:]
	}
	switch {
	case verb == "list" && len(pos) == 0:
	case verb == "rm" && len(pos) > 0:
	case verb == "rm":
		fmt.Fprintf(stderr, "%s rm: name the sessions to remove (their ids, as listed)\n", name)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: unexpected %q\n\n%s", name, strings.Join(append([]string{verb}, pos...), " "), sessionsUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := dialDaemon(ctx, &dc)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	defer c.close()
	if verb == "rm" {
		code := 0
		for _, id := range pos {
			uri := id
			if !strings.HasPrefix(uri, protocol.SessionScheme+"/") {
				uri = protocol.SessionScheme + "/" + id
			}
			if err := c.call(ctx, protocol.MethodDisposeSession, protocol.DisposeSessionParams{BaseParams: protocol.BaseParams{Channel: uri}}, nil); err != nil {
				fmt.Fprintf(stderr, "%s rm %s: %v\n", name, id, err)
				code = 1
				continue
			}
			fmt.Fprintf(stdout, "removed %s\n", id)
		}
		return code
	}
	list, err := c.allSessions(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "the daemon serves no session; \"changesetd serve DIR\" or \"changesetd turn start --dir DIR\" makes one")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDIRECTORIES\tCREATED\tRUNNING TURNS")
	for _, s := range list {
		var dirs []string
		for _, wd := range s.WorkingDirectories {
			if p, ok := filePath(wd); ok {
				dirs = append(dirs, p)
			} else {
				dirs = append(dirs, wd)
			}
		}
		running, err := c.runningTurns(ctx, s.Resource)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", strings.TrimPrefix(s.Resource, protocol.SessionScheme+"/"), strings.Join(dirs, ","), s.CreatedAt, len(running))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// allSessions lists every session of the daemon, page by page.
func (c *client) allSessions(ctx context.Context) ([]protocol.SessionSummary, error) {
	var all []protocol.SessionSummary
	cursor := ""
	for {
		var list protocol.ListSessionsResult
		params := protocol.ListSessionsParams{BaseParams: protocol.BaseParams{Channel: protocol.RootURI}, Cursor: cursor}
		if err := c.call(ctx, protocol.MethodListSessions, params, &list); err != nil {
			return nil, err
		}
		all = append(all, list.Items...)
		if list.NextCursor == "" || list.NextCursor == cursor {
			return all, nil
		}
		cursor = list.NextCursor
	}
}

// runningTurn is a turn that has started and not ended, in one chat.
type runningTurn struct {
	session string // its session's URI
	chat    string // the chat's URI
	agent   string // the chat's agent key; "" for the session's default chat
	id      string
	since   string // startedAt, RFC 3339
	message string
}

// who names the chat a running turn is in, as the --agent that reaches it.
func (r runningTurn) who() string {
	if r.agent == "" {
		return "the default chat (no --agent)"
	}
	return "--agent " + r.agent
}

// runningTurns returns the running turns of every chat of the session.
func (c *client) runningTurns(ctx context.Context, sessionURI string) ([]runningTurn, error) {
	var sess struct {
		Snapshot struct {
			State protocol.SessionState `json:"state"`
		} `json:"snapshot"`
	}
	if err := c.call(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: sessionURI}}, &sess); err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", sessionURI, err)
	}
	defer c.unsubscribe(ctx, sessionURI)
	var out []runningTurn
	for _, cs := range sess.Snapshot.State.Chats {
		var res struct {
			Snapshot struct {
				State protocol.ChatState `json:"state"`
			} `json:"snapshot"`
		}
		if err := c.call(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: cs.Resource}}, &res); err != nil {
			return nil, fmt.Errorf("subscribe to %s: %w", cs.Resource, err)
		}
		c.unsubscribe(ctx, cs.Resource)
		t := res.Snapshot.State.ActiveTurn
		if t == nil {
			continue
		}
		_, agent, _ := protocol.ParseChatURI(cs.Resource)
		if cs.Resource == sess.Snapshot.State.DefaultChat || agent == protocol.DefaultChatID {
			agent = ""
		}
		out = append(out, runningTurn{session: sessionURI, chat: cs.Resource, agent: agent, id: t.ID, since: t.StartedAt, message: t.Message.Text})
	}
	return out, nil
}

// unsubscribe ends a subscription the CLI made only to read a snapshot.
func (c *client) unsubscribe(ctx context.Context, channel string) {
	_ = c.call(ctx, protocol.MethodUnsubscribe, protocol.UnsubscribeParams{Channel: channel}, nil)
}
