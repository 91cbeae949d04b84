package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/changesetd/changesetd/agent"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/source"
)

const turnUsage = `Usage:
  changesetd turn start [--dir DIR | --session URI] [--agent NAME] [--message TEXT] [--id ID] [--feedback | --feedback-json]
  changesetd turn end   [--dir DIR | --session URI] [--agent NAME] [--id ID]
  changesetd turn status [--dir DIR | --session URI]
  changesetd turn edit --hook | [--agent NAME] FILE...
  changesetd turn notify JSON

Marks an agent turn boundary on the running daemon, which snapshots the
session's working directories. The daemon is found through the state dir
(its address and token), or through --url and --token. With --dir
(default: the current directory) the session is the one whose working
directory contains DIR; if there is none, one is created for DIR. "start"
prints the new turn id, "end" the ended one. With --agent (or, with
--hook, the hook's session_id) the turn goes to that agent's own chat, so
several agents in one directory keep their turns apart. With --feedback,
"start" then prints, in markdown, the review annotations the agent has not
seen yet, and marks them delivered to the new turn. With --hook the
hook's JSON object is read from standard input; input that is not one is
refused (exit 1) and no turn starts or ends.

"status" lists the running turns (every session's, or only those of
--dir or --session): the session, the chat's agent, the turn, since when
it runs and its message.

"edit" reports files an agent wrote (with --hook, from its post-write
hook), so that each hunk is credited to the agent that wrote it; "notify"
is Codex CLI's notify program. "changesetd turn edit --help" and
"changesetd turn notify --help" tell more.
`

// turnCmd implements "changesetd turn start|end|status".
func turnCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "status" {
		return turnStatusCmd(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "edit" {
		return turnEditCmd(ctx, args[1:], stdin, stderr)
	}
	if len(args) > 0 && args[0] == "notify" {
		return turnNotifyCmd(ctx, args[1:], stderr)
	}
	if len(args) == 0 || (args[0] != "start" && args[0] != "end") {
		fmt.Fprint(stderr, turnUsage)
		return 2
	}
	edge := args[0]
	fs := flag.NewFlagSet("changesetd turn "+edge, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a directory inside the session's working directory")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	message := fs.String("message", "", "what the turn is about (start only)")
	id := fs.String("id", "", "the turn id (start: chosen by the daemon when empty; end: the running turn when empty)")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	agentName := fs.String("agent", "", "the agent session the turn belongs to: each gets its own chat and turns (with --hook: the hook's session_id)")
	hook := fs.Bool("hook", false, "run as an agent hook: read the hook's JSON from stdin (cwd, prompt, session_id), print nothing (but --feedback), never exit 2, and treat 'no turn is running' at end as done")
	withFeedback := fs.Bool("feedback", false, "start only: print the review annotations the agent has not seen yet, in markdown, and mark them delivered")
	feedbackJSON := fs.Bool("feedback-json", false, "start only: as --feedback, wrapped in the JSON Gemini CLI's BeforeAgent hook takes ({} when there are none)")
	fs.Usage = func() { fmt.Fprint(stderr, turnUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "changesetd turn %s: %v\n", edge, err)
		return 2
	}
	var wrapped *bytes.Buffer
	if *feedbackJSON {
		*withFeedback, wrapped = true, &bytes.Buffer{}
	}
	if *withFeedback && edge != "start" {
		fmt.Fprintf(stderr, "changesetd turn %s: --feedback goes with turn start\n", edge)
		if *hook {
			return 1
		}
		return 2
	}
	var feedback io.Writer
	if *withFeedback {
		feedback = stdout
	}
	if wrapped != nil {
		out := stdout
		feedback = wrapped
		defer func() {
			if wrapped.Len() == 0 {
				fmt.Fprintln(out, "{}")
				return
			}
			b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "BeforeAgent", "additionalContext": wrapped.String()}})
			fmt.Fprintf(out, "%s\n", b)
		}()
	}
	if *hook {
		// Hooks must not block the agent: exit code 2 means "block" to
		// some agents, and stdout may be fed back to the model (which is
		// what --feedback is for).
		stdout = io.Discard
		in, err := agent.ReadHookInput(stdin)
		if err != nil {
			// Not what an agent sends: a turn started from it would
			// carry no message and belong to no agent's chat.
			fmt.Fprintf(stderr, "changesetd turn %s --hook: %v; no turn was %s\n", edge, err, map[string]string{"start": "started", "end": "ended"}[edge])
			return 1
		}
		dirSet := false
		fs.Visit(func(f *flag.Flag) { dirSet = dirSet || f.Name == "dir" })
		if !dirSet && in.CWD != "" {
			*dir = in.CWD
		}
		if *message == "" && edge == "start" {
			*message = in.Prompt
		}
		if *agentName == "" {
			*agentName = in.Agent()
		}
	}
	code := runTurn(ctx, edge, *dir, *sessionURI, agent.Key(*agentName), *message, *id, &dc, *timeout, stdout, stderr, *hook, feedback)
	if *hook && code != 0 {
		return 1
	}
	return code
}

const turnStatusUsage = `Usage:
  changesetd turn status [--dir DIR | --session URI]

Lists the running turns of the daemon's sessions (or of the session of
--dir or --session): session, agent, turn, since when, message.
`

// turnStatusCmd implements "changesetd turn status".
func turnStatusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "changesetd turn status"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "only the session whose working directory contains DIR")
	sessionURI := fs.String("session", "", "only this session (its URI)")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, turnStatusUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	if *dir != "" && *sessionURI != "" {
		fmt.Fprintf(stderr, "%s: use only one of --dir and --session\n", name)
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
	var sessions []string
	switch {
	case *sessionURI != "":
		sessions = []string{*sessionURI}
	case *dir != "":
		uri, _, err := c.sessionFor(ctx, *dir, false)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		sessions = []string{uri}
	default:
		all, err := c.allSessions(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		for _, s := range all {
			sessions = append(sessions, s.Resource)
		}
	}
	var running []runningTurn
	for _, s := range sessions {
		r, err := c.runningTurns(ctx, s)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		running = append(running, r...)
	}
	if len(running) == 0 {
		fmt.Fprintln(stderr, "no turn is running")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAGENT\tTURN\tSINCE\tMESSAGE")
	for _, r := range running {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.TrimPrefix(r.session, protocol.SessionScheme+"/"), cmp.Or(r.agent, "-"), r.id, r.since, oneLine(r.message, 60))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// runTurn marks the turn boundary. After a start, a non-nil feedback
// receives the annotations the agent has not seen (see deliverFeedback).
func runTurn(ctx context.Context, edge, dir, sessionURI, agentKey, message, id string, dc *dialConfig, timeout time.Duration, stdout, stderr io.Writer, hook bool, feedback io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := dialDaemon(ctx, dc)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd turn %s: %v\n", edge, err)
		return 1
	}
	defer c.close()
	uri, created := sessionURI, false
	if uri == "" {
		// Only a start makes a session: an end without one has nothing
		// to end.
		if uri, created, err = c.sessionFor(ctx, dir, edge == "start"); err != nil {
			if hook && errors.Is(err, errNoSession) {
				return 0
			}
			fmt.Fprintf(stderr, "changesetd turn %s: %v\n", edge, err)
			return 1
		}
	}
	channel := uri
	if agentKey != "" {
		// The agent's own chat in the session.
		channel = protocol.ChatURI(uri, agentKey)
	}
	var info session.TurnInfo
	if edge == "start" {
		err = c.callStarting(ctx, protocol.MethodTurnStart, protocol.TurnStartParams{BaseParams: protocol.BaseParams{Channel: channel}, TurnID: id, Message: message}, &info)
	} else {
		err = c.callStarting(ctx, protocol.MethodTurnEnd, protocol.TurnEndParams{BaseParams: protocol.BaseParams{Channel: channel}, TurnID: id}, &info)
	}
	var re *protocol.Error
	noTurn := edge == "end" && errors.As(err, &re) && re.Code == protocol.CodeNotFound && strings.Contains(re.Message, "no turn is running")
	if hook && noTurn {
		return 0 // e.g. a Stop hook after an interrupted prompt
	}
	if noTurn {
		// Most often the turn runs in another agent's chat: say which.
		if others, lerr := c.runningTurns(ctx, uri); lerr == nil && len(others) > 0 {
			var b strings.Builder
			for _, o := range others {
				fmt.Fprintf(&b, "\n  %s since %s in %s: %q", o.id, o.since, o.who(), o.message)
			}
			err = fmt.Errorf("%w; running in the session's other chats:%s", err, b.String())
		}
	}
	if err != nil {
		if created {
			// Do not leave behind a session made for a turn that failed
			// (a directory that cannot be snapshotted, say).
			_ = c.call(ctx, protocol.MethodDisposeSession, protocol.DisposeSessionParams{BaseParams: protocol.BaseParams{Channel: uri}}, nil)
		}
		fmt.Fprintf(stderr, "changesetd turn %s: %v\n", edge, err)
		return 1
	}
	fmt.Fprintln(stdout, info.ID)
	if feedback != nil {
		if err := deliverFeedback(ctx, c, uri, channel, info.ID, feedback); err != nil {
			fmt.Fprintf(stderr, "changesetd turn %s: feedback: %v\n", edge, err)
			return 1
		}
	}
	return 0
}

// callStarting is call, repeated while the session is still taking its
// baseline (a session created a moment ago).
func (c *client) callStarting(ctx context.Context, method string, params, out any) error {
	for {
		err := c.call(ctx, method, params, out)
		if protocol.ReasonOf(err) != protocol.ReasonSessionStarting {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// errNoSession is sessionFor's error when no session serves the directory
// and it may not create one.
var errNoSession = errors.New("no session of the daemon has this directory; nothing to end")

// existingSession is the session a read-only command acts on: given, or
// else the one whose working directory contains dir. It never makes one;
// when there is none the error names dir, then hint (how to get one).
func (c *client) existingSession(ctx context.Context, given, dir, hint string) (string, error) {
	if given != "" {
		return given, nil
	}
	uri, _, err := c.sessionFor(ctx, dir, false)
	if errors.Is(err, errNoSession) {
		err = fmt.Errorf("no session of the daemon has %s%s", dir, hint)
	}
	return uri, err
}

// serveHint is how to get a session for a directory that has none.
const serveHint = ` (serve it with "changesetd serve DIR", or pass --session; "changesetd sessions" lists them)`

// sessionFor finds the session whose working directory contains dir, or,
// with create, creates one for dir (created).
func (c *client) sessionFor(ctx context.Context, dir string, create bool) (uri string, created bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	var list protocol.ListSessionsResult
	if err := c.call(ctx, protocol.MethodListSessions, protocol.ListSessionsParams{BaseParams: protocol.BaseParams{Channel: protocol.RootURI}}, &list); err != nil {
		return "", false, err
	}
	best, bestLen := "", -1
	for _, s := range list.Items {
		for _, wd := range s.WorkingDirectories {
			p, err := session.DirFromURI(wd)
			if err != nil {
				continue
			}
			if (abs == p || strings.HasPrefix(abs, p+string(filepath.Separator))) && len(p) > bestLen {
				best, bestLen = s.Resource, len(p)
			}
		}
	}
	if best != "" {
		return best, false, nil
	}
	if !create {
		return "", false, fmt.Errorf("%s: %w", abs, errNoSession)
	}
	uri = protocol.SessionScheme + "/" + source.SessionID(abs, source.RootCommit(abs))
	err = c.call(ctx, protocol.MethodCreateSession, protocol.CreateSessionParams{
		BaseParams: protocol.BaseParams{Channel: uri}, WorkingDirectories: []string{session.FileURI(abs)},
	}, nil)
	var re *protocol.Error
	if errors.As(err, &re) && re.Code == protocol.CodeSessionAlreadyExists {
		return uri, false, nil
	}
	return uri, err == nil, err
}
