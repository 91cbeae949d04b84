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
)

// ChannelOf returns the kind of channel a URI names.
func ChannelOf(uri string) ChannelKind {
	switch {
	case uri == RootURI:
		return ChannelRoot
	case strings.HasPrefix(uri, SessionScheme):
		return ChannelSession
	case strings.HasPrefix(uri, ChatScheme):
		return ChannelChat
	case strings.HasPrefix(uri, ChangesetScheme):
		return ChannelChangeset
	}
	return ChannelUnknown
}
