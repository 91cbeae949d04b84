package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/changesetd/changesetd/agent"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

const turnEditUsage = `Usage:
  changesetd turn edit --hook                      (an agent's post-write hook)
  changesetd turn edit [--dir DIR | --session URI] [--agent NAME] FILE...

Reports files an agent wrote, so that each changed hunk is credited to the
agent that wrote it, to you (a write no running agent reported) or to
nobody known. With --hook the hook's JSON is read from standard input:
Claude Code's PostToolUse, Gemini CLI's AfterTool or Copilot CLI's
postToolUse; its session id names the agent, the tool's arguments the
file, and the whole content or the replacements the tool made. A tool
that names no file (a shell command) reports nothing. With --hook nothing
is printed and the exit status is never 2.
`

// turnEditCmd implements "changesetd turn edit".
func turnEditCmd(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) int {
	name := "changesetd turn edit"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a directory inside the session's working directory")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	agentName := fs.String("agent", "", "the agent that wrote the files (with --hook: the hook's session id)")
	hook := fs.Bool("hook", false, "run as an agent's post-tool hook: read its JSON from stdin")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, turnEditUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	var events []json.RawMessage
	add := func(path string, w agent.Write, who string) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return
		}
		ev := map[string]any{"type": "edit", "path": abs}
		if k := agent.Key(who); k != "" {
			ev["agent"] = k
		}
		if w.Content != nil {
			ev["content"] = *w.Content
		}
		if len(w.Replacements) > 0 {
			ev["replacements"] = w.Replacements
		}
		raw, _ := json.Marshal(ev)
		events = append(events, raw)
	}
	if *hook {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "%s --hook: the file comes from the hook's input, not from arguments\n", name)
			return 1
		}
		h, err := agent.ReadToolHook(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "%s --hook: %v; nothing was reported\n", name, err)
			return 1
		}
		w, ok, err := h.Write()
		if err != nil {
			fmt.Fprintf(stderr, "%s --hook: %v; nothing was reported\n", name, err)
			return 1
		}
		if !ok || h.Failed() {
			return 0 // no file written
		}
		dirSet := false
		fs.Visit(func(f *flag.Flag) { dirSet = dirSet || f.Name == "dir" })
		if !dirSet && h.CWD != "" {
			*dir = h.CWD
		}
		if !dirSet && h.CWD == "" {
			*dir = filepath.Dir(w.Path)
		}
		add(w.Path, w, cmpOr(*agentName, h.Agent()))
	} else {
		if fs.NArg() == 0 {
			fmt.Fprintf(stderr, "%s: name the files written, or use --hook\n", name)
			return 2
		}
		for _, p := range fs.Args() {
			add(p, agent.Write{}, *agentName)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := dialDaemon(ctx, &dc)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	defer c.close()
	uri := *sessionURI
	if uri == "" {
		if uri, _, err = c.sessionFor(ctx, *dir, false); err != nil {
			if *hook && errors.Is(err, errNoSession) {
				return 0 // no session serves the directory: nothing to attribute
			}
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	var res session.EditEventsResult
	err = c.callStarting(ctx, protocol.MethodEditEvents, protocol.EditEventsParams{BaseParams: protocol.BaseParams{Channel: uri}, Events: events}, &res)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	for _, e := range res.Errors {
		fmt.Fprintf(stderr, "%s: %s\n", name, e.Message)
	}
	if len(res.Errors) > 0 && !*hook {
		return 1
	}
	// A hook's file outside the session (the agent's own settings, say)
	// is no error of the agent's: there is nothing to attribute.
	return 0
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

const turnNotifyUsage = `Usage:
  changesetd turn notify [flags] JSON

For Codex CLI's notify program: Codex runs it at the end of each turn with
the event's JSON as the last argument. On "agent-turn-complete" the
thread's turn ends, and its next one starts at once: Codex tells of a
turn's end only, so its turns run from one end to the next, in the
thread's own chat ("thread-id"). Other events are ignored. It prints
nothing and never fails Codex.
`

// turnNotifyCmd implements "changesetd turn notify".
func turnNotifyCmd(ctx context.Context, args []string, stderr io.Writer) int {
	name := "changesetd turn notify"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, turnNotifyUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "%s: the event's JSON is the last argument\n", name)
		return 1
	}
	var ev struct {
		Type          string   `json:"type"`
		ThreadID      string   `json:"thread-id"`
		CWD           string   `json:"cwd"`
		InputMessages []string `json:"input-messages"`
	}
	if err := json.Unmarshal([]byte(fs.Arg(fs.NArg()-1)), &ev); err != nil {
		fmt.Fprintf(stderr, "%s: the last argument is not the event's JSON: %v\n", name, err)
		return 1
	}
	if ev.Type != "agent-turn-complete" {
		return 0
	}
	dir := ev.CWD
	if dir == "" {
		dir = "."
	}
	key := agent.Key(cmpOr(ev.ThreadID, "codex"))
	code := runTurn(ctx, "end", dir, "", key, "", "", &dc, *timeout, io.Discard, stderr, true, nil)
	if code != 0 {
		return 1
	}
	// Its prompt is not known yet: the message names the one before.
	message := ""
	if n := len(ev.InputMessages); n > 0 {
		message = "after: " + strings.TrimSpace(ev.InputMessages[n-1])
	}
	if runTurn(ctx, "start", dir, "", key, message, "", &dc, *timeout, io.Discard, stderr, true, nil) != 0 {
		return 1
	}
	return 0
}
