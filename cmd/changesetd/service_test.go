package main

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestSystemdUnitQuotesItsCommand(t *testing.T) {
	unit := string(systemdUnitFile([]string{"/opt/my tools/changesetd", "serve", "--listen", "127.0.0.1:7878", "/home/me/100%", "/home/me/$HOME"}))
	want := `ExecStart="/opt/my tools/changesetd" serve --listen 127.0.0.1:7878 /home/me/100%% /home/me/$$HOME` + "\n"
	if !strings.Contains(unit, want) {
		t.Errorf("unit:\n%s\nwant the line %q", unit, want)
	}
	for _, line := range []string{"[Service]", "Restart=on-failure", "RestartPreventExitStatus=2 3", "[Install]", "WantedBy=default.target"} {
		if !strings.Contains(unit, line+"\n") {
			t.Errorf("unit lacks %q", line)
		}
	}
}

func TestLaunchdPlistIsXML(t *testing.T) {
	body := launchdPlist([]string{"/usr/local/bin/changesetd", "serve", "/Users/me/a&b <c>"}, "/Users/me/Library/Logs/changesetd.log")
	var plist struct {
		Dict struct {
			Keys    []string `xml:"key"`
			Strings []string `xml:"string"`
			Array   struct {
				Strings []string `xml:"string"`
			} `xml:"array"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(body, &plist); err != nil {
		t.Fatalf("not XML: %v\n%s", err, body)
	}
	if got := plist.Dict.Array.Strings; len(got) != 3 || got[2] != "/Users/me/a&b <c>" {
		t.Errorf("ProgramArguments = %q", got)
	}
	if plist.Dict.Strings[0] != launchdLabel {
		t.Errorf("Label = %q", plist.Dict.Strings[0])
	}
	for _, k := range []string{"Label", "ProgramArguments", "RunAtLoad", "KeepAlive", "StandardErrorPath"} {
		if !strings.Contains(strings.Join(plist.Dict.Keys, ","), k) {
			t.Errorf("plist lacks %s", k)
		}
	}
}

func TestGoRunBinaryIsRefused(t *testing.T) {
	if !goRunBinary("/tmp/go-build2837465/b001/exe/changesetd") {
		t.Errorf("a go run binary is not recognised")
	}
	for _, p := range []string{"/home/me/go/bin/changesetd", "/usr/local/bin/changesetd", "/tmp/changesetd-e2e-1/changesetd"} {
		if goRunBinary(p) {
			t.Errorf("%s taken for a go run binary", p)
		}
	}
}
