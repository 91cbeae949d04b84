package main

import (
	"encoding/json"
	"fmt"
)

// vscodeLines are serve's lines for VS Code's Agents window, which
// connects to a remote agent host by address: the address with its token
// as "Add Remote Agent Host…" takes it (the token as ?tkn=, the only
// spelling VS Code sends), and the same as an entry of the setting
// chat.remoteAgentHosts. Both need chat.remoteAgentHostsEnabled.
func vscodeLines(hostport, token string) string {
	entry, _ := json.Marshal(struct {
		Address         string `json:"address"`
		Name            string `json:"name"`
		ConnectionToken string `json:"connectionToken"`
	}{hostport + "/ahp", "changesetd", token})
	return fmt.Sprintf("vscode: ws://%s/ahp?tkn=%s\nvscode setting: \"chat.remoteAgentHosts\": [%s]\n", hostport, token, entry)
}
