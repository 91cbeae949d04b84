package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
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

// printDefaults is fs.PrintDefaults with each flag's variable named.
func printDefaults(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, envPrefix) {
			f.Usage += " [$" + envName(f.Name) + "]"
		}
	})
	fs.PrintDefaults()
}
