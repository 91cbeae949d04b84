package protocol

import "bytes"

// Version adaptation at the edge. The server keeps every state and every
// stored envelope in the newest shape; each frame bound for a connection
// passes through Adapt for the version that connection negotiated. The
// deltas a 0.6/0.7 client would notice (protocol.md §8.3):
//
//   - changeset status "recomputing" is "computing";
//   - changeset/contentChanged carries "error", which its reducer applies;
//   - session lifecycle "failed" is "creationFailed".
//
// A stored changeset/contentChanged keeps the changeset's error at commit
// time in Error so a replay can still give it to a 0.6/0.7 client; newer
// clients never see the member.

// Adapt returns v, a result, notification payload, envelope or snapshot,
// in the shape a client of version expects. Values of other types are
// returned unchanged. v itself is never modified.
func Adapt(version string, v any) any {
	legacy := IsLegacy(version)
	switch v := v.(type) {
	case ActionEnvelope:
		return AdaptEnvelope(legacy, v)
	case Snapshot:
		return adaptSnapshot(legacy, v)
	case SubscribeResult:
		if v.Snapshot != nil {
			s := adaptSnapshot(legacy, *v.Snapshot)
			v.Snapshot = &s
		}
		return v
	case InitializeResult:
		v.Snapshots = adaptSnapshots(legacy, v.Snapshots)
		return v
	case ReconnectResult:
		if v.Actions != nil {
			actions := make([]ActionEnvelope, len(v.Actions))
			for i, e := range v.Actions {
				actions[i] = AdaptEnvelope(legacy, e)
			}
			v.Actions = actions
		}
		v.Snapshots = adaptSnapshots(legacy, v.Snapshots)
		return v
	}
	return v
}

// AdaptEnvelope returns env in the shape of a legacy (0.6/0.7) or current
// client.
func AdaptEnvelope(legacy bool, env ActionEnvelope) ActionEnvelope {
	switch a := env.Action.Action.(type) {
	case ChangesetStatusChanged:
		if legacy && a.Status == StatusRecomputing {
			a.Status = StatusComputing
			env.Action = StateAction{Action: a}
		}
	case ChangesetContentChanged:
		if !legacy && a.Error != nil {
			a.Error = nil
			env.Action = StateAction{Action: a}
		}
	}
	return env
}

func adaptSnapshots(legacy bool, snaps []Snapshot) []Snapshot {
	if !legacy || snaps == nil {
		return snaps
	}
	out := make([]Snapshot, len(snaps))
	for i, s := range snaps {
		out[i] = adaptSnapshot(legacy, s)
	}
	return out
}

// The start of an encoded changeset state in recomputing, and of the same
// state as a 0.6/0.7 client is shown it.
const (
	encodedRecomputing = `{"status":"` + StatusRecomputing + `"`
	encodedComputing   = `{"status":"` + StatusComputing + `"`
)

func adaptSnapshot(legacy bool, s Snapshot) Snapshot {
	if !legacy {
		return s
	}
	switch st := s.State.(type) {
	case ChangesetState:
		if st.Status == StatusRecomputing {
			st.Status = StatusComputing
			s.State = st
		}
	case Encoded:
		// A changeset state's encoding starts with its status
		// (ChangesetState's first field): the rewrite is of that prefix.
		if rest, ok := bytes.CutPrefix(st, []byte(encodedRecomputing)); ok {
			b := make(Encoded, 0, len(encodedComputing)+len(rest))
			s.State = append(append(b, encodedComputing...), rest...)
		}
	case SessionState:
		if st.Lifecycle == LifecycleFailed {
			st.Lifecycle = LifecycleCreationFailed
			s.State = st
		}
	}
	return s
}
