package protocol

import "strings"

// URI schemes of AHP channels.
const (
	RootURI         = "ahp-root://"
	SessionScheme   = "ahp-session:"
	ChatScheme      = "ahp-chat:"
	ChangesetScheme = "ahp-changeset:"
)

// ChannelKind classifies a channel URI by its scheme.
type ChannelKind int

const (
	ChannelUnknown ChannelKind = iota
	ChannelRoot
	ChannelSession
	ChannelChat
	ChannelChangeset
	ChannelAnnotations
)

// annotationsSuffix turns a session URI into the URI of its annotations
// channel.
const annotationsSuffix = "/annotations"

// AnnotationsURI is the annotations channel of the session sessionURI.
func AnnotationsURI(sessionURI string) string { return sessionURI + annotationsSuffix }

// SessionOfAnnotations is the session URI of an annotations channel URI.
func SessionOfAnnotations(uri string) string { return strings.TrimSuffix(uri, annotationsSuffix) }

// ChannelOf returns the kind of channel a URI names.
func ChannelOf(uri string) ChannelKind {
	switch {
	case uri == RootURI:
		return ChannelRoot
	case strings.HasPrefix(uri, SessionScheme) && strings.HasSuffix(uri, annotationsSuffix):
		return ChannelAnnotations
	case strings.HasPrefix(uri, SessionScheme):
		return ChannelSession
	case strings.HasPrefix(uri, ChatScheme):
		return ChannelChat
	case strings.HasPrefix(uri, ChangesetScheme):
		return ChannelChangeset
	}
	return ChannelUnknown
}
