package main

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// The package doc, the usage text and run know the same commands.
func TestEveryCommandIsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	line := regexp.MustCompile(`(?m)^\s+changesetd ([a-z]+)`)
	commands := func(text string) []string {
		var out []string
		for _, m := range line.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
		return out
	}
	inDoc, inUsage := commands(doc), commands(usage)
	if strings.Join(inDoc, " ") != strings.Join(inUsage, " ") {
		t.Errorf("the package doc lists %q, the usage %q", inDoc, inUsage)
	}
	for _, name := range inUsage {
		args := []string{name}
		if sub, ok := map[string]string{"turn": "start", "service": "install"}[name]; ok {
			args = append(args, sub)
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(args, "--help"), strings.NewReader(""), &stdout, &stderr)
		if strings.Contains(stderr.String(), "unknown command") || (name != "version" && code != 0) {
			t.Errorf("changesetd %s --help: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
	}
}
