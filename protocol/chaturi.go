package protocol

import (
	"encoding/base64"
	"strings"
)

// DefaultChatID names a session's default chat in its chat URI.
const DefaultChatID = "default"

// ChatURI is the URI of the chat chatID of the session sessionURI:
// ahp-chat://<chatID>/<base64url(sessionURI)>. The session rides in the
// URI, so a client can tell which session a chat belongs to without
// asking; VS Code parses chat URIs only in this shape (parseChatUri).
func ChatURI(sessionURI, chatID string) string {
	return ChatScheme + "//" + chatID + "/" + base64.RawURLEncoding.EncodeToString([]byte(sessionURI))
}

// ParseChatURI returns the session URI and chat id of a chat URI, in
// either shape this server has published: ahp-chat://<chatID>/<base64url
// (session URI)>, and the earlier ahp-chat:/<session id> (the default
// chat) or ahp-chat:/<session id>/<chat id>. ok is false for anything
// else.
func ParseChatURI(uri string) (sessionURI, chatID string, ok bool) {
	if rest, found := strings.CutPrefix(uri, ChatScheme+"//"); found {
		id, enc, found := strings.Cut(rest, "/")
		if !found || id == "" || enc == "" || strings.ContainsAny(enc, "/?#") {
			return "", "", false
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
		if err != nil {
			return "", "", false
		}
		sessionURI = string(raw)
		if !strings.HasPrefix(sessionURI, SessionScheme+"/") || strings.ContainsAny(id, "/?#") {
			return "", "", false
		}
		return sessionURI, id, true
	}
	rest, found := strings.CutPrefix(uri, ChatScheme+"/")
	if !found || rest == "" || strings.HasPrefix(rest, "/") {
		return "", "", false
	}
	sid, key, _ := strings.Cut(rest, "/")
	if key == "" {
		key = DefaultChatID
	}
	return SessionScheme + "/" + sid, key, true
}

// LegacyChatURI is the earlier shape of a chat URI, ahp-chat:/<session
// id> or ahp-chat:/<session id>/<chat id>, still accepted on input.
func LegacyChatURI(sessionURI, chatID string) string {
	id := strings.TrimPrefix(sessionURI, SessionScheme+"/")
	if chatID == DefaultChatID || chatID == "" {
		return ChatScheme + "/" + id
	}
	return ChatScheme + "/" + id + "/" + chatID
}

// ActionRootConfigChanged is a client's configuration dispatched on the
// root channel (VS Code sends one per setting after every connect). This
// server has no configuration to change and accepts it without effect.
const ActionRootConfigChanged = "root/configChanged"
