package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/changesetd/changesetd/agent"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/uritemplate"
)

// linesBy returns, for each annotation of anns that is open for an agent
// and on lines of a file, who wrote those lines: the authors of the hunks
// of its turn's changeset (the session's, for the baseline) that the
// lines touch. Annotations on no changed line are left out.
func (c *client) linesBy(ctx context.Context, sessionURI string, anns []protocol.Annotation) (map[string][]string, error) {
	id := strings.TrimPrefix(sessionURI, protocol.SessionScheme+"/")
	states := map[string]*protocol.ChangesetState{}
	out := map[string][]string{}
	for _, a := range anns {
		if !agent.OpenForAgent(a) || a.TurnID == "" {
			continue
		}
		st, ok := states[a.TurnID]
		if !ok {
			kind, vars := protocol.KindTurn, uritemplate.Values{uritemplate.VarTurnID: a.TurnID}
			if a.TurnID == session.BaselineTurnID {
				kind, vars = protocol.KindSession, nil
			}
			uri, err := uritemplate.FormatChangesetURI(id, kind, vars)
			if err != nil {
				return nil, err
			}
			s, err := c.computedChangeset(ctx, uri)
			var re *protocol.Error
			if errors.As(err, &re) {
				states[a.TurnID] = nil // a turn that is gone: nobody's lines
				continue
			}
			if err != nil {
				return nil, err
			}
			c.unsubscribe(ctx, uri)
			st = &s
			states[a.TurnID] = st
		}
		if st == nil {
			continue
		}
		if by := authorsAt(*st, a); len(by) > 0 {
			out[a.ID] = by
		}
	}
	return out, nil
}

// authorsAt returns the authors of the hunks of a's file that its lines
// touch (the whole file's, for an annotation on the whole file).
func authorsAt(st protocol.ChangesetState, a protocol.Annotation) []string {
	for _, f := range st.Files {
		if f.Edit.After == nil || f.Edit.After.URI != a.Resource {
			continue
		}
		own, _ := f.Meta["changesetd"].(map[string]any)
		if a.Range == nil {
			var out []string
			if list, ok := own["authors"].([]any); ok {
				for _, x := range list {
					if s, ok := x.(string); ok {
						out = append(out, s)
					}
				}
			}
			return out
		}
		first, last := a.Range.Start.Line+1, a.Range.End.Line+1
		if a.Range.End.Character == 0 && a.Range.End.Line > a.Range.Start.Line {
			last--
		}
		raw, _ := json.Marshal(own["hunks"])
		var hunks []session.Hunk
		json.Unmarshal(raw, &hunks)
		var out []string
		for _, h := range hunks {
			if h.NewStart+max(h.NewLines, 1)-1 < first || h.NewStart > last {
				continue
			}
			by := h.Authors
			if len(by) == 0 && h.Author != "" {
				by = []string{h.Author}
			}
			for _, x := range by {
				if !slices.Contains(out, x) {
					out = append(out, x)
				}
			}
		}
		return out
	}
	return nil
}

// computedChangeset subscribes to a changeset and follows it until it is
// computed.
func (c *client) computedChangeset(ctx context.Context, csURI string) (protocol.ChangesetState, error) {
	var res struct {
		Snapshot *struct {
			State   protocol.ChangesetState `json:"state"`
			FromSeq int64                   `json:"fromSeq"`
		} `json:"snapshot"`
	}
	if err := c.callStarting(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: csURI}}, &res); err != nil {
		return protocol.ChangesetState{}, err
	}
	if res.Snapshot == nil {
		return protocol.ChangesetState{}, fmt.Errorf("the daemon sent no snapshot of %s", csURI)
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
	for st.Status != protocol.StatusReady {
		if st.Status == protocol.StatusError {
			return st, fmt.Errorf("%s could not be computed", csURI)
		}
		// Still computing: a ping reads the notifications sent meanwhile.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return st, fmt.Errorf("%s was not computed in time: %w", csURI, ctx.Err())
		}
		if err := c.call(ctx, protocol.MethodPing, struct{}{}, nil); err != nil {
			return st, err
		}
	}
	return st, nil
}
