package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/uritemplate"
)

const diffUsage = `Usage:
  changesetd diff [--dir DIR | --session URI] [--turn ID | --compare A B | --baseline | --branch]

Prints a changeset of the running daemon as one patch that "git apply"
takes on the changeset's before tree: the uncommitted changes (default),
one turn, the changes between two turns, the whole session since its
baseline, or the branch against its base. Binary files are written as
"GIT binary patch"; renames, mode changes and deletions are included.
The daemon is found as by "changesetd turn"; the session is the one whose
working directory contains DIR, or --session. Nothing is created: a
directory no session serves is an error.
`

// diffCmd implements "changesetd diff".
func diffCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("changesetd diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a directory inside the session's working directory")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	turn := fs.String("turn", "", "the changes of one turn")
	compare := fs.String("compare", "", "the changes between turn A and turn B: --compare A B")
	whole := fs.Bool("baseline", false, "the changes of the whole session since its baseline")
	branch := fs.Bool("branch", false, "the branch against its base branch")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, diffUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	kind, vars := protocol.KindUncommitted, uritemplate.Values(nil)
	chosen := 0
	if *turn != "" {
		kind, vars = protocol.KindTurn, uritemplate.Values{uritemplate.VarTurnID: *turn}
		chosen++
	}
	rest := fs.Args()
	if *compare != "" {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "changesetd diff: --compare needs two turn ids: --compare A B")
			return 2
		}
		kind = protocol.KindCompareTurns
		vars = uritemplate.Values{uritemplate.VarOriginalTurnID: *compare, uritemplate.VarModifiedTurnID: rest[0]}
		// Flags may follow B.
		if err := fs.Parse(rest[1:]); err != nil {
			return 2
		}
		rest = fs.Args()
		chosen++
	}
	if *whole {
		kind, chosen = protocol.KindSession, chosen+1
	}
	if *branch {
		kind, chosen = protocol.KindBranch, chosen+1
	}
	if chosen > 1 {
		fmt.Fprintln(stderr, "changesetd diff: choose one of --turn, --compare, --baseline and --branch")
		return 2
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "changesetd diff: unexpected argument %q\n", rest[0])
		return 2
	}
	if *sessionURI != "" && *dir != "." {
		fmt.Fprintln(stderr, "changesetd diff: use only one of --dir and --session")
		return 2
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := dialDaemon(ctx, &dc)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd diff: %v\n", err)
		return 1
	}
	defer c.close()
	// Reading makes nothing: a session is made by serve, a turn or an
	// edit event, never by looking.
	uri, err := c.existingSession(ctx, *sessionURI, *dir, serveHint)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd diff: %v\n", err)
		return 1
	}
	csURI, err := uritemplate.FormatChangesetURI(strings.TrimPrefix(uri, protocol.SessionScheme+"/"), kind, vars)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd diff: %v\n", err)
		return 2
	}
	var res protocol.ResourceReadResult
	err = c.callStarting(ctx, protocol.MethodResourceRead, protocol.ResourceReadParams{
		BaseParams: protocol.BaseParams{Channel: uri}, URI: session.PatchURI(csURI), Encoding: "base64",
	}, &res)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd diff: %v\n", err)
		return 1
	}
	data := []byte(res.Data)
	if res.Encoding == "base64" {
		if data, err = base64.StdEncoding.DecodeString(res.Data); err != nil {
			fmt.Fprintf(stderr, "changesetd diff: %v\n", err)
			return 1
		}
	}
	if _, err := stdout.Write(data); err != nil {
		fmt.Fprintf(stderr, "changesetd diff: %v\n", err)
		return 1
	}
	return 0
}

// agentCmd runs the commands through which agents and their tools talk to
// the running daemon besides "turn".
func agentCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args[0] == "edits" {
		return editsCmd(ctx, args[1:], stdin, stdout, stderr)
	}
	return diffCmd(ctx, args[1:], stdout, stderr)
}
