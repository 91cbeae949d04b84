package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// ToolHook is what an agent's post-tool hook sends on standard input:
// Claude Code's PostToolUse and Gemini CLI's AfterTool (tool_name,
// tool_input as an object, snake case), Copilot CLI's postToolUse
// (toolName, toolArgs as a JSON string, camel case).
type ToolHook struct {
	HookInput
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	// Gemini CLI: the result, with "error" when the tool failed.
	ToolResponse json.RawMessage `json:"tool_response"`
	// Copilot CLI.
	CopilotToolName string          `json:"toolName"`
	CopilotToolArgs json.RawMessage `json:"toolArgs"`
	CopilotResult   *struct {
		ResultType string `json:"resultType"`
	} `json:"toolResult"`
}

// Write is a file an agent's tool wrote, as its hook tells it: the
// path, and the whole new content or the replacements it made, when the
// tool's arguments carry them.
type Write struct {
	Path         string
	Content      *string
	Replacements []Replacement
}

// Replacement is one old-to-new string replacement of an edit tool.
type Replacement struct {
	Old string `json:"old"`
	New string `json:"new"`
	All bool   `json:"all,omitempty"`
}

// ReadToolHook reads a post-tool hook's JSON object from r, with the
// checks of ReadHookInput.
func ReadToolHook(r io.Reader) (ToolHook, error) {
	var h ToolHook
	b, err := io.ReadAll(io.LimitReader(r, MaxHookInput+1))
	if err != nil {
		return h, fmt.Errorf("reading the hook's JSON from standard input: %w", err)
	}
	if _, err := ReadHookInput(bytes.NewReader(b)); err != nil {
		return h, err
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &h); err != nil {
		return h, fmt.Errorf("the hook's input on standard input is not valid JSON: %v", err)
	}
	return h, nil
}

// toolArgs are the arguments of the edit tools of the agents, in each
// one's spelling.
type toolArgs struct {
	FilePath     string  `json:"file_path"`     // Claude Code, Gemini CLI
	Path         string  `json:"path"`          // Copilot CLI
	NotebookPath string  `json:"notebook_path"` // Claude Code's NotebookEdit
	Content      *string `json:"content"`       // Write, write_file
	FileText     *string `json:"file_text"`     // Copilot CLI's create
	OldString    *string `json:"old_string"`    // Edit, replace
	NewString    *string `json:"new_string"`
	ReplaceAll   bool    `json:"replace_all"`
	OldStr       *string `json:"old_str"` // Copilot CLI's edit
	NewStr       *string `json:"new_str"`
	Edits        []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"` // MultiEdit
}

// Tool is the name of the tool the hook ran after.
func (h ToolHook) Tool() string { return cmp.Or(h.ToolName, h.CopilotToolName) }

// Failed reports that the tool said it failed (Gemini CLI's error,
// Copilot CLI's result type): it wrote nothing to report.
func (h ToolHook) Failed() bool {
	if h.CopilotResult != nil && h.CopilotResult.ResultType != "" && h.CopilotResult.ResultType != "success" {
		return true
	}
	var resp struct {
		Error json.RawMessage `json:"error"`
	}
	if len(h.ToolResponse) > 0 && json.Unmarshal(h.ToolResponse, &resp) == nil {
		e := string(bytes.TrimSpace(resp.Error))
		return e != "" && e != "null" && e != `""` && e != "false"
	}
	return false
}

// Write returns the file the tool wrote; ok is false for a tool that
// names no file (a shell command, a search). A relative path is taken
// relative to the hook's cwd.
func (h ToolHook) Write() (Write, bool, error) {
	raw := h.ToolInput
	if len(raw) == 0 && len(h.CopilotToolArgs) > 0 {
		raw = h.CopilotToolArgs
		var s string
		if json.Unmarshal(raw, &s) == nil { // Copilot CLI sends its arguments as a JSON string
			raw = json.RawMessage(s)
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return Write{}, false, nil
	}
	var a toolArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return Write{}, false, nil // arguments that are not an object: no file
		}
		return Write{}, false, fmt.Errorf("the tool's arguments: %v", err)
	}
	w := Write{Path: cmp.Or(a.FilePath, a.Path, a.NotebookPath), Content: a.Content}
	if w.Path == "" {
		return Write{}, false, nil
	}
	if !filepath.IsAbs(w.Path) && h.CWD != "" {
		w.Path = filepath.Join(h.CWD, w.Path)
	}
	if w.Content == nil {
		w.Content = a.FileText
	}
	switch {
	case a.OldString != nil && a.NewString != nil:
		w.Replacements = []Replacement{{Old: *a.OldString, New: *a.NewString, All: a.ReplaceAll}}
	case a.OldStr != nil && a.NewStr != nil:
		w.Replacements = []Replacement{{Old: *a.OldStr, New: *a.NewStr}}
	}
	for _, e := range a.Edits {
		w.Replacements = append(w.Replacements, Replacement{Old: e.OldString, New: e.NewString, All: e.ReplaceAll})
	}
	if a.NotebookPath != "" && a.FilePath == "" {
		w.Content, w.Replacements = nil, nil // a notebook cell's source is not the file's text
	}
	return w, true, nil
}
