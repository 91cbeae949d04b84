package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// envPrefix starts the environment variable of every flag: --allow-host is
// CHANGESETD_ALLOW_HOST. A container image or a compose file can then
// configure the daemon without replacing its command.
const envPrefix = "CHANGESETD_"

// envName is the environment variable that sets the flag named name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// parseFlags parses args, then sets every flag the command line left unset
// from its environment variable when that is set and not empty: the
// command line wins over the environment. Repeatable flags take a
// comma-separated list. Each of exclusive names flags of which at most
// one may be set; one given on the command line silences the variables of
// the others.
func parseFlags(fs *flag.FlagSet, args []string, exclusive ...[]string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	skip := maps.Clone(given)
	for _, group := range exclusive {
		if slices.ContainsFunc(group, func(n string) bool { return given[n] }) {
			for _, n := range group {
				skip[n] = true
			}
		}
	}
	if err := flagsFromEnv(fs, skip); err != nil {
		return err
	}
	for _, group := range exclusive {
		var set []string
		for _, n := range group {
			if f := fs.Lookup(n); f != nil && f.Value.String() != f.DefValue {
				set = append(set, flagSource(fs, n))
			}
		}
		if len(set) > 1 {
			return fmt.Errorf("use only one of %s", strings.Join(set, " and "))
		}
	}
	return nil
}

// flagsFromEnv sets the flags of fs not in skip from the environment.
func flagsFromEnv(fs *flag.FlagSet, skip map[string]bool) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if skip[f.Name] || err != nil {
			return
		}
		name := envName(f.Name)
		v := os.Getenv(name)
		if v == "" {
			return
		}
		if _, ok := f.Value.(*stringList); ok {
			for item := range strings.SplitSeq(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					_ = f.Value.Set(item)
				}
			}
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("%s=%q: %v", name, v, e)
		}
	})
	return err
}

// flagSource names where a flag's value came from, for error messages.
func flagSource(fs *flag.FlagSet, name string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if given {
		return "--" + name
	}
	return envName(name)
}

// printDefaults prints fs's flags as every command's help does: "--name",
// the default when it is not the zero value, and, for the flags that read
// one (envFlag reports which; nil: all), the environment variable.
func printDefaults(fs *flag.FlagSet, envFlag func(name string) bool) {
	w := fs.Output()
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch f.DefValue {
		case "", "false", "0", "0s", "[]":
		default:
			if kind == "string" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
		}
		if envFlag == nil || envFlag(f.Name) {
			fmt.Fprintf(w, " [$%s]", envName(f.Name))
		}
		fmt.Fprintln(w)
	})
}

// splitInterspersed separates flags from positional arguments wherever
// they stand ("serve DIR --log-level debug"), so that both orders mean the
// same; "--" ends the flags. A flag's separate value ("--dir d") stays with
// it.
func splitInterspersed(fs *flag.FlagSet, args []string) (flags, pos []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(pos, args[i+1:]...)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if f := fs.Lookup(name); f != nil && !strings.Contains(name, "=") && !isBoolFlag(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	return flags, pos
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagOutput is w for standard error, where the flag package's messages
// name a flag with one dash ("flag provided but not defined: -nosuch"):
// they say "--name" instead, as every help does.
func flagOutput(w io.Writer) io.Writer { return dashWriter{w} }

type dashWriter struct{ w io.Writer }

// flagMention is a flag named in one of the flag package's messages.
var flagMention = regexp.MustCompile(`(defined: |argument: |for flag )-([A-Za-z])`)

func (d dashWriter) Write(p []byte) (int, error) {
	if _, err := d.w.Write(flagMention.ReplaceAll(p, []byte("$1--$2"))); err != nil {
		return 0, err
	}
	return len(p), nil
}
