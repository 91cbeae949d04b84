package protocol

import "testing"

// TestChatURIShapes: chat URIs are published as VS Code parses them,
// ahp-chat://<chat id>/<base64url(session URI)> without padding, and both
// that shape and the earlier ahp-chat:/<session id>[/<chat id>] parse back
// to the session and chat; anything else does not parse.
func TestChatURIShapes(t *testing.T) {
	const session = "ahp-session:/s1"
	if got, want := ChatURI(session, DefaultChatID), "ahp-chat://default/YWhwLXNlc3Npb246L3Mx"; got != want {
		t.Errorf("ChatURI = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		uri, session, chat string
	}{
		{ChatURI(session, DefaultChatID), session, DefaultChatID},
		{ChatURI(session, "agent-7"), session, "agent-7"},
		{"ahp-chat://default/YWhwLXNlc3Npb246L3Mx==", session, DefaultChatID},
		{"ahp-chat:/s1", session, DefaultChatID},
		{"ahp-chat:/s1/agent-7", session, "agent-7"},
		{LegacyChatURI(session, "agent-7"), session, "agent-7"},
	} {
		s, c, ok := ParseChatURI(tc.uri)
		if !ok || s != tc.session || c != tc.chat {
			t.Errorf("ParseChatURI(%s) = %q, %q, %v; want %q, %q", tc.uri, s, c, ok, tc.session, tc.chat)
		}
	}
	for _, bad := range []string{
		"ahp-chat:", "ahp-chat:/", "ahp-chat://default", "ahp-chat://default/", "ahp-chat:///YWhwLXNlc3Npb246L3Mx",
		"ahp-chat://default/not base64", "ahp-chat://default/" + "Zm9vOi9iYXI", // foo:/bar, not a session
		"ahp-chat://default/YWhwLXNlc3Npb246L3Mx/extra", "ahp-session:/s1",
	} {
		if s, c, ok := ParseChatURI(bad); ok {
			t.Errorf("ParseChatURI(%q) = %q, %q, ok; want not ok", bad, s, c)
		}
	}
}
