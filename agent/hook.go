package agent

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// HookInput is what the agents' hooks send on standard input, as far as a
// turn needs it (Claude Code's UserPromptSubmit and Stop hooks, Copilot
// CLI's).
type HookInput struct {
	CWD       string `json:"cwd"`
	Prompt    string `json:"prompt"`
	SessionID string `json:"session_id"`
	// Copilot CLI spells it in camelCase.
	CopilotSessionID string `json:"sessionId"`
}

// Agent is the agent session the hook runs for, in either spelling; ""
// when the agent did not say.
func (in HookInput) Agent() string { return cmp.Or(in.SessionID, in.CopilotSessionID) }

// MaxHookInput bounds the hook's JSON; a prompt is far smaller.
const MaxHookInput = 1 << 20

// ReadHookInput reads the hook's JSON object from r. Empty input, input
// that is not one JSON object and input over MaxHookInput are errors.
func ReadHookInput(r io.Reader) (HookInput, error) {
	var in HookInput
	b, err := io.ReadAll(io.LimitReader(r, MaxHookInput+1))
	if err != nil {
		return in, fmt.Errorf("reading the hook's JSON from standard input: %w", err)
	}
	if len(b) > MaxHookInput {
		return in, fmt.Errorf("the hook's input on standard input is over %d bytes", MaxHookInput)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return in, errors.New("no hook input on standard input (the agent sends a JSON object; without an agent, leave out --hook)")
	}
	if b[0] != '{' {
		return in, fmt.Errorf("the hook's input on standard input is not a JSON object: %.40q", b)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("the hook's input on standard input is not valid JSON: %v", err)
	}
	return in, nil
}

// Key makes an agent name usable as a chat key (letters, digits and
// ._~-, at most 128): names that are not are replaced by a hash of them.
func Key(name string) string {
	if name == "" || keyPattern.MatchString(name) {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return "agent-" + hex.EncodeToString(h[:8])
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,128}$`)
