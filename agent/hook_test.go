package agent

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadHookInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    HookInput
		wantErr string // a part of the error; "" for none
	}{
		{"claude code prompt", `{"session_id":"s1","cwd":"/w","prompt":"fix it","hook_event_name":"UserPromptSubmit"}`, HookInput{CWD: "/w", Prompt: "fix it", SessionID: "s1"}, ""},
		{"copilot spelling", `{"sessionId":"c1","cwd":"/w"}`, HookInput{CWD: "/w", CopilotSessionID: "c1"}, ""},
		{"space around", " \n{}\n\t", HookInput{}, ""},
		{"empty", "", HookInput{}, "no hook input on standard input"},
		{"only space", " \n ", HookInput{}, "no hook input on standard input"},
		{"an array", `[{"session_id":"s"}]`, HookInput{}, "is not a JSON object"},
		{"text", "hello", HookInput{}, `is not a JSON object: "hello"`},
		{"cut short", `{"session_id":`, HookInput{}, "is not valid JSON"},
		{"a number as the prompt", `{"prompt":3}`, HookInput{}, "is not valid JSON"},
		{"too large", `{"prompt":"` + strings.Repeat("x", MaxHookInput) + `"}`, HookInput{}, "is over 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadHookInput(strings.NewReader(tc.in))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ReadHookInput: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ReadHookInput: error %v, want one saying %q", err, tc.wantErr)
			case tc.wantErr == "" && got != tc.want:
				t.Errorf("ReadHookInput = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadHookInputReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadHookInput(iotest.ErrReader(boom))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading the hook's JSON from standard input") {
		t.Errorf("ReadHookInput = %v, want the read's error wrapped", err)
	}
}

func TestHookInputAgent(t *testing.T) {
	for _, tc := range []struct {
		in   HookInput
		want string
	}{
		{HookInput{}, ""},
		{HookInput{SessionID: "s"}, "s"},
		{HookInput{CopilotSessionID: "c"}, "c"},
		{HookInput{SessionID: "s", CopilotSessionID: "c"}, "s"},
	} {
		if got := tc.in.Agent(); got != tc.want {
			t.Errorf("%+v.Agent() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKey(t *testing.T) {
	for name, want := range map[string]string{
		"":                       "",
		"3f2a-bc.d_e~":           "3f2a-bc.d_e~",
		"has space":              "agent-47b5c36fc0b017ba", // sha256's first 8 bytes
		strings.Repeat("a", 128): strings.Repeat("a", 128),
	} {
		if got := Key(name); got != want {
			t.Errorf("Key(%q) = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"has space", "a/b", strings.Repeat("a", 129), "é"} {
		got := Key(name)
		if !strings.HasPrefix(got, "agent-") || len(got) != len("agent-")+16 || !keyPattern.MatchString(got) {
			t.Errorf("Key(%q) = %q, want agent- and 16 hex digits", name, got)
		}
		if Key(name) != got {
			t.Errorf("Key(%q) is not stable", name)
		}
	}
}
