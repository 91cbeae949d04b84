package session

import "github.com/changesetd/changesetd/protocol"

// localizeAction names the files a client's review or annotation action
// is about as this server names them (protocol.LocalResourceURI): VS Code
// holds them wrapped in its own agent-host URIs, and may escape a file:
// URI differently.
func localizeAction(a protocol.Action) protocol.Action {
	switch a := a.(type) {
	case protocol.ChangesetFilesReviewChanged:
		if a.Files != nil {
			files := make([]string, len(a.Files))
			for i, f := range a.Files {
				files[i] = protocol.LocalResourceURI(f)
			}
			a.Files = files
		}
		return a
	case protocol.AnnotationsSet:
		a.Annotation.Resource = protocol.LocalResourceURI(a.Annotation.Resource)
		return a
	case protocol.AnnotationsUpdated:
		if a.Resource != nil {
			r := protocol.LocalResourceURI(*a.Resource)
			a.Resource = &r
		}
		return a
	}
	return a
}

// LocalTarget is an operation's target with its resource named as this
// server names it (see localizeAction).
func LocalTarget(t *protocol.ChangesetOperationTarget) *protocol.ChangesetOperationTarget {
	if t == nil || t.Resource == "" {
		return t
	}
	out := *t
	out.Resource = protocol.LocalResourceURI(t.Resource)
	return &out
}
