package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/changesetd/changesetd/agent"
	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
)

const annotationsUsage = `Usage:
  changesetd annotations [--dir DIR | --session URI] [--open] [--format text|markdown|json]
  changesetd annotations reply ID TEXT [--dir DIR | --session URI]
  changesetd annotations resolve ID [--dir DIR | --session URI]
  changesetd annotations reopen ID [--dir DIR | --session URI]

Prints the review annotations of the session: for each, the file, the
lines it is about as they are in the working tree now (1-based, or "lines
gone" when they were deleted), the turn it was made on, whether it is
resolved, and its entries, the agent's marked "agent". --open prints only
the unresolved ones; --format json prints the channel's state as the
daemon sends it.

"reply" adds an entry written by the agent (TEXT "-" reads it from
standard input); "resolve" and "reopen" mark an annotation resolved or
not. Each waits for the daemon to apply the change, and exits 1 with the
daemon's reason when it refuses it.

The daemon and the session are found as by "changesetd turn"; a session
is never created here.
`

// annotationsCmd implements "changesetd annotations" and its reply,
// resolve and reopen subcommands.
func annotationsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := "changesetd annotations"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a directory inside the session's working directory")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	open := fs.Bool("open", false, "only the unresolved annotations (listing only)")
	format := fs.String("format", "text", "text, markdown or json (listing only)")
	fs.Usage = func() { fmt.Fprint(stderr, annotationsUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	pos, err := parseInterspersed(&dc, fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	verb, want := "list", 0 // want: the arguments after the verb
	if len(pos) > 0 {
		verb, pos = pos[0], pos[1:]
		name += " " + verb
	}
	switch verb {
	case "list":
	case "reply":
		want = 2
	case "resolve", "reopen":
		want = 1
	default:
		fmt.Fprintf(stderr, "changesetd annotations: unknown subcommand %q\n\n%s", verb, annotationsUsage)
		return 2
	}
	listing := false
	fs.Visit(func(f *flag.Flag) { listing = listing || f.Name == "open" || f.Name == "format" })
	if listing && verb != "list" {
		fmt.Fprintf(stderr, "%s: --open and --format go with the listing\n", name)
		return 2
	}
	if verb == "reply" && len(pos) > 2 {
		// reply ID some words: the words are the text.
		pos = []string{pos[0], strings.Join(pos[1:], " ")}
	}
	if len(pos) != want {
		fmt.Fprintf(stderr, "%s: want %d argument(s), got %d\n\n%s", name, want, len(pos), annotationsUsage)
		return 2
	}
	if *format != "text" && *format != "markdown" && *format != "json" {
		fmt.Fprintf(stderr, "%s: --format %q: want text, markdown or json\n", name, *format)
		return 2
	}
	if verb == "reply" && pos[1] == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		if err != nil {
			fmt.Fprintf(stderr, "%s: read the text from standard input: %v\n", name, err)
			return 1
		}
		pos[1] = strings.TrimSpace(string(b))
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := dialDaemon(ctx, &dc)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	defer c.close()
	uri, err := c.existingSession(ctx, *sessionURI, *dir, ", so there are no annotations here (pass --dir or --session)")
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	raw, st, err := c.subscribeAnnotations(ctx, uri)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	channel := protocol.AnnotationsURI(uri)
	switch verb {
	case "list":
		err = listAnnotations(ctx, c, uri, raw, st, *open, *format, stdout)
	case "reply":
		entry := protocol.AnnotationEntry{ID: newEntryID(), Text: protocol.PlainText(pos[1]), Meta: protocol.Object{protocol.MetaAuthor: agent.Author}}
		if err = c.dispatch(ctx, channel, protocol.AnnotationsEntrySet{AnnotationID: pos[0], Entry: entry}); err == nil {
			fmt.Fprintln(stdout, entry.ID)
		}
	case "resolve", "reopen":
		err = c.dispatch(ctx, channel, protocol.AnnotationsUpdated{AnnotationID: pos[0], Resolved: protocol.Ptr(verb == "resolve")})
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// parseInterspersed parses flags before, between and after positional
// arguments ("reply ID TEXT --dir d"), and returns the positional ones.
func parseInterspersed(dc *dialConfig, fs *flag.FlagSet, args []string) ([]string, error) {
	flags, pos := splitInterspersed(fs, args)
	if err := dc.parse(fs, flags); err != nil {
		return nil, err
	}
	return append(pos, fs.Args()...), nil
}

// newEntryID returns a fresh id for an entry the agent writes.
func newEntryID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "agent-" + hex.EncodeToString(b)
}

// subscribeAnnotations subscribes to the session's annotations channel and
// returns its state as sent and decoded.
func (c *client) subscribeAnnotations(ctx context.Context, sessionURI string) (json.RawMessage, protocol.AnnotationsState, error) {
	var res struct {
		Snapshot *struct {
			State json.RawMessage `json:"state"`
		} `json:"snapshot"`
	}
	channel := protocol.AnnotationsURI(sessionURI)
	var st protocol.AnnotationsState
	if err := c.call(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: channel}}, &res); err != nil {
		return nil, st, fmt.Errorf("subscribe to %s: %w", channel, err)
	}
	if res.Snapshot == nil {
		return nil, st, fmt.Errorf("subscribe to %s: the daemon sent no snapshot", channel)
	}
	if err := json.Unmarshal(res.Snapshot.State, &st); err != nil {
		return nil, st, fmt.Errorf("%s: %w", channel, err)
	}
	return res.Snapshot.State, st, nil
}

// errRejected is the daemon's refusal of a dispatched action.
type errRejected struct{ reason string }

func (e errRejected) Error() string { return "the daemon refused: " + e.reason }

// listAnnotations prints the annotations of state raw (decoded: st) in
// format; open keeps the unresolved ones.
func listAnnotations(ctx context.Context, c *client, sessionURI string, raw json.RawMessage, st protocol.AnnotationsState, open bool, format string, w io.Writer) error {
	if format == "json" {
		if open {
			var err error
			if raw, err = unresolvedJSON(raw); err != nil {
				return err
			}
		}
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	}
	dirs, err := c.workingDirs(ctx, sessionURI)
	if err != nil {
		return err
	}
	var views []agent.View
	for _, a := range st.Annotations {
		if !open || !a.Resolved {
			views = append(views, agent.ViewOf(a, dirs))
		}
	}
	agent.SortViews(views)
	if format == "markdown" {
		return agent.WriteMarkdown(w, views)
	}
	return agent.WriteText(w, views)
}

// unresolvedJSON drops the resolved annotations from a raw
// AnnotationsState, keeping every other byte of it as sent.
func unresolvedJSON(raw json.RawMessage) (json.RawMessage, error) {
	var st map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	var all, kept []json.RawMessage
	if err := json.Unmarshal(st["annotations"], &all); err != nil {
		return nil, err
	}
	kept = []json.RawMessage{}
	for _, a := range all {
		var head struct {
			Resolved bool `json:"resolved"`
		}
		if err := json.Unmarshal(a, &head); err != nil {
			return nil, err
		}
		if !head.Resolved {
			kept = append(kept, a)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	st["annotations"] = b
	return json.Marshal(st)
}

// otherChatsTurns returns the ids of the turns of the session's chats other
// than chat (a session URI names its default chat).
func (c *client) otherChatsTurns(ctx context.Context, sessionURI, chat string) (map[string]bool, error) {
	var sess struct {
		Snapshot struct {
			State protocol.SessionState `json:"state"`
		} `json:"snapshot"`
	}
	if err := c.call(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: sessionURI}}, &sess); err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", sessionURI, err)
	}
	own := chat
	if own == sessionURI {
		own = sess.Snapshot.State.DefaultChat
	}
	out := map[string]bool{}
	for _, cs := range sess.Snapshot.State.Chats {
		if cs.Resource == own {
			continue
		}
		var res struct {
			Snapshot struct {
				State protocol.ChatState `json:"state"`
			} `json:"snapshot"`
		}
		if err := c.call(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: cs.Resource}}, &res); err != nil {
			return nil, fmt.Errorf("subscribe to %s: %w", cs.Resource, err)
		}
		for _, t := range res.Snapshot.State.Turns {
			out[t.ID] = true
		}
		if t := res.Snapshot.State.ActiveTurn; t != nil {
			out[t.ID] = true
		}
	}
	return out, nil
}

// workingDirs returns the session's working directories as paths.
func (c *client) workingDirs(ctx context.Context, sessionURI string) ([]string, error) {
	var list protocol.ListSessionsResult
	if err := c.call(ctx, protocol.MethodListSessions, protocol.ListSessionsParams{BaseParams: protocol.BaseParams{Channel: protocol.RootURI}}, &list); err != nil {
		return nil, err
	}
	for _, s := range list.Items {
		if s.Resource != sessionURI {
			continue
		}
		var dirs []string
		for _, wd := range s.WorkingDirectories {
			if p, ok := filePath(wd); ok {
				dirs = append(dirs, p)
			}
		}
		return dirs, nil
	}
	return nil, fmt.Errorf("the daemon has no session %s", sessionURI)
}

// filePath is the path of a file:// URI.
func filePath(uri string) (string, bool) {
	p, err := confine.PathFromFileURI(uri)
	return p, err == nil
}

// deliverFeedback writes the annotations of the session that are
// feedback for the agent (agent.Select), in markdown, to w, and marks them
// delivered to turnID. It writes nothing when there are none, or when it
// fails: either the agent is shown them and they are marked, or neither.
//
// chat is the chat the agent's turns go to; when several agents share the
// session, annotations on another agent's turns are left for that agent.
func deliverFeedback(ctx context.Context, c *client, sessionURI, chat, turnID string, w io.Writer) error {
	_, st, err := c.subscribeAnnotations(ctx, sessionURI)
	if err != nil {
		return err
	}
	others, err := c.otherChatsTurns(ctx, sessionURI, chat)
	if err != nil {
		return err
	}
	linesBy, err := c.linesBy(ctx, sessionURI, st.Annotations)
	if err != nil {
		return err
	}
	self := chat
	if self == sessionURI {
		self = protocol.ChatURI(sessionURI, protocol.DefaultChatID)
	}
	pending := agent.SelectFor(st.Annotations, others, linesBy, self)
	if len(pending) == 0 {
		return nil
	}
	dirs, err := c.workingDirs(ctx, sessionURI)
	if err != nil {
		return err
	}
	// The daemon publishes each annotation as it marks it; print that
	// version, so that an entry arriving meanwhile is not marked unseen.
	channel := protocol.AnnotationsURI(sessionURI)
	latest := map[string]protocol.Annotation{}
	for _, a := range st.Annotations {
		latest[a.ID] = a
	}
	c.onNotify = func(m protocol.RPCMessage) {
		var e protocol.ActionEnvelope
		if m.Method != protocol.NotifyAction || json.Unmarshal(m.Params, &e) != nil || e.Channel != channel {
			return
		}
		switch a := e.Action.Action.(type) {
		case protocol.AnnotationsSet:
			latest[a.Annotation.ID] = a.Annotation
		case protocol.AnnotationsRemoved:
			delete(latest, a.AnnotationID)
		}
	}
	defer func() { c.onNotify = nil }()
	params := protocol.AnnotationsDeliveredParams{BaseParams: protocol.BaseParams{Channel: channel}, AnnotationIDs: agent.IDs(pending), TurnID: turnID}
	if err := c.call(ctx, protocol.MethodAnnotationsDelivered, params, nil); err != nil {
		return err
	}
	if text := agent.Feedback(pending, latest, dirs); text != "" {
		_, err = io.WriteString(w, text)
	}
	return err
}
