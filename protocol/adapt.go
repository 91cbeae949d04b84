package protocol

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
	case SessionState:
		if st.Lifecycle == LifecycleFailed {
			st.Lifecycle = LifecycleCreationFailed
			s.State = st
		}
	}
	return s
}
