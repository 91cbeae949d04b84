package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/uritemplate"
)

const rewindUsage = `Usage:
  changesetd rewind [--dir DIR | --session URI] [--yes] TURN

Puts every file turn TURN changed back to its version before the turn, in
one step that Undo Revert (in the review page, or any client) undoes. It
prints what the rewind does, as the daemon words it, and asks before
going on; --yes skips the question. Files changed again after the turn
are never overwritten: the rewind is refused, naming them, and nothing
is changed. The daemon is found as by "changesetd turn"; the session is
the one whose working directory contains DIR, or --session.
`

// rewindCmd implements "changesetd rewind".
func rewindCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("changesetd rewind", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a directory inside the session's working directory")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	yes := fs.Bool("yes", false, "rewind without asking")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, rewindUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	// Flags may come before or after TURN.
	rest, err := parseInterspersed(&dc, fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "changesetd rewind: %v\n", err)
		return 2
	}
	switch {
	case len(rest) == 0:
		fmt.Fprintln(stderr, "changesetd rewind: name the turn to rewind: changesetd rewind TURN")
		return 2
	case len(rest) > 1:
		fmt.Fprintf(stderr, "changesetd rewind: unexpected argument %q\n", rest[1])
		return 2
	}
	turn := rest[0]
	if *sessionURI != "" && *dir != "." {
		fmt.Fprintln(stderr, "changesetd rewind: use only one of --dir and --session")
		return 2
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := dialDaemon(ctx, &dc)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd rewind: %v\n", err)
		return 1
	}
	defer c.close()
	uri, err := c.existingSession(ctx, *sessionURI, *dir, ` (pass --session; "changesetd sessions" lists them)`)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd rewind: %v\n", err)
		return 1
	}
	csURI, err := uritemplate.FormatChangesetURI(strings.TrimPrefix(uri, protocol.SessionScheme+"/"), protocol.KindTurn, uritemplate.Values{uritemplate.VarTurnID: turn})
	if err != nil {
		fmt.Fprintf(stderr, "changesetd rewind: %v\n", err)
		return 2
	}
	op, err := c.rewindOperation(ctx, csURI)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd rewind: turn %s: %v\n", turn, err)
		return 1
	}
	var confirmation string
	_ = json.Unmarshal(op.Confirmation, &confirmation)
	if confirmation != "" {
		fmt.Fprintln(stdout, confirmation)
	}
	if !*yes {
		fmt.Fprint(stdout, "Rewind? [y/N] ")
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "Nothing was changed.")
			return 1
		}
	}
	var res protocol.InvokeChangesetOperationResult
	err = c.call(ctx, protocol.MethodInvokeChangesetOperation, protocol.InvokeChangesetOperationParams{
		BaseParams: protocol.BaseParams{Channel: csURI}, OperationID: op.ID,
	}, &res)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd rewind: %v\n", err)
		return 1
	}
	var msg string
	if json.Unmarshal(res.Message, &msg) == nil && msg != "" {
		fmt.Fprintln(stdout, msg)
	}
	return 0
}

// rewindOperation subscribes to a turn's changeset, follows it until it
// is computed and returns its revert operation, which must offer the
// changeset scope.
func (c *client) rewindOperation(ctx context.Context, csURI string) (protocol.ChangesetOperation, error) {
	var res struct {
		Snapshot *struct {
			State   protocol.ChangesetState `json:"state"`
			FromSeq int64                   `json:"fromSeq"`
		} `json:"snapshot"`
	}
	if err := c.callStarting(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: csURI}}, &res); err != nil {
		return protocol.ChangesetOperation{}, err
	}
	if res.Snapshot == nil {
		return protocol.ChangesetOperation{}, fmt.Errorf("the daemon sent no snapshot of %s", csURI)
	}
	st, seq := res.Snapshot.State, res.Snapshot.FromSeq
	c.onNotify = func(m protocol.RPCMessage) {
		var e protocol.ActionEnvelope
		if m.Method != protocol.NotifyAction || json.Unmarshal(m.Params, &e) != nil || e.Channel != csURI || e.ServerSeq <= seq || e.RejectionReason != "" {
			return
		}
		seq = e.ServerSeq
		st, _ = reducer.ApplyChangeset(st, e.Action.Action, reducer.Env{})
	}
	defer func() { c.onNotify = nil }()
	for {
		switch st.Status {
		case protocol.StatusReady:
			for _, op := range st.Operations {
				if op.ID != "revert" {
					continue
				}
				if !slices.Contains(op.Scopes, protocol.ScopeChangeset) {
					break
				}
				if op.Status == protocol.OpDisabled {
					return op, errors.New("it cannot be rewound now: a turn is running")
				}
				return op, nil
			}
			return protocol.ChangesetOperation{}, errors.New("it cannot be rewound: the daemon offers no revert of the whole turn (is its working directory writable?)")
		case protocol.StatusError:
			msg := "the changeset could not be computed"
			if st.Error != nil {
				msg += ": " + st.Error.Message
			}
			return protocol.ChangesetOperation{}, errors.New(msg)
		}
		// Still computing: a ping reads the notifications sent meanwhile.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return protocol.ChangesetOperation{}, fmt.Errorf("the changeset was not computed in time: %w", ctx.Err())
		}
		if err := c.call(ctx, protocol.MethodPing, struct{}{}, nil); err != nil {
			return protocol.ChangesetOperation{}, err
		}
	}
}
