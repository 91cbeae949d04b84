package protocol

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path"
	"strings"
)

// AgentHostScheme is the scheme under which VS Code wraps a remote agent
// host's resources for its own file system:
// vscode-agent-host://<connection>/<scheme>/<authority or ->/<path>, or in
// newer builds vscode-agent-host://<connection><path>?_ah=<base64 JSON
// {scheme, authority, query}>.
const AgentHostScheme = "vscode-agent-host"

// LocalResourceURI is the URI a client's resource URI stands for on this
// server: a VS Code agent-host wrapper is unwrapped, and a file: URI is
// spelled as this server spells its file ids (file:// and the path
// escaped as net/url escapes it), so that a client holding the same file
// under another escaping still names the same file. Anything else comes
// back unchanged, as does a URI already in this server's spelling.
func LocalResourceURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	switch u.Scheme {
	case AgentHostScheme:
		if orig, ok := unwrapAgentHost(u); ok {
			return LocalResourceURI(orig)
		}
	case "file":
		if (u.Host == "" || u.Host == "localhost") && strings.HasPrefix(u.Path, "/") && u.RawQuery == "" && u.Fragment == "" {
			return (&url.URL{Scheme: "file", Path: u.Path}).String()
		}
	}
	return uri
}

// unwrapAgentHost returns the URI a vscode-agent-host: URI wraps.
func unwrapAgentHost(u *url.URL) (string, bool) {
	if ah := u.Query().Get("_ah"); ah != "" {
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(ah, "="))
		if err != nil {
			raw, err = base64.StdEncoding.DecodeString(ah)
		}
		if err != nil {
			return "", false
		}
		var orig struct {
			Scheme    string `json:"scheme"`
			Authority string `json:"authority"`
			Query     string `json:"query"`
		}
		if json.Unmarshal(raw, &orig) != nil || orig.Scheme == "" {
			return "", false
		}
		return joinURI(orig.Scheme, orig.Authority, u.Path, orig.Query), true
	}
	// /<scheme>/<authority or ->/<path>
	rest := strings.TrimPrefix(u.Path, "/")
	scheme, rest, ok := strings.Cut(rest, "/")
	if !ok || scheme == "" {
		return "", false
	}
	authority, p, _ := strings.Cut(rest, "/")
	if authority == "-" {
		authority = ""
	}
	return joinURI(scheme, authority, "/"+p, ""), true
}

func joinURI(scheme, authority, p, query string) string {
	if scheme == "file" {
		return (&url.URL{Scheme: "file", Host: authority, Path: path.Clean(p), RawQuery: query}).String()
	}
	s := scheme + ":"
	if authority != "" {
		s += "//" + authority
	}
	s += p
	if query != "" {
		s += "?" + query
	}
	return s
}
