package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the daemon's version, as clients see it in serverInfo. A
// release build sets it with -ldflags "-X main.version=v1.2.3" (the image
// passes git describe); otherwise it comes from the build information Go
// stamps into every binary: the module's version for "go install
// …@v1.2.3", a pseudo-version for a commit, or devVersion for a build
// from a checkout.
var version = ""

// commit is the commit the binary was built from when the build could not
// record it itself (an image built from a context without .git): set with
// -ldflags "-X main.commit=$(git rev-parse HEAD)".
var commit = ""

// devVersion is the version of a build from a checkout that nothing
// stamped.
const devVersion = "0.1.0-dev"

func init() {
	info, _ := debug.ReadBuildInfo()
	version = resolveVersion(version, info)
}

// resolveVersion is the -ldflags value when set, else the main module's
// version from info, else devVersion.
func resolveVersion(ldflags string, info *debug.BuildInfo) string {
	if ldflags != "" {
		return ldflags
	}
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return devVersion
}

// versionLine is what "changesetd version" prints: the version, the
// commit it was built from when the build recorded one (go build in a git
// checkout does; "+dirty" when the tree had changes), and the Go version.
func versionLine() string {
	info, _ := debug.ReadBuildInfo()
	return formatVersion(version, commit, info)
}

// formatVersion is versionLine's text for version v, built from commit
// (when the build information has no vcs.revision) with info.
func formatVersion(v, commit string, info *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "changesetd %s", v)
	var rev, at string
	dirty := false
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = commit
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		fmt.Fprintf(&b, " commit %s", rev)
		if at != "" {
			fmt.Fprintf(&b, " (%s)", at)
		}
	}
	goVersion := runtime.Version()
	if info != nil && info.GoVersion != "" {
		goVersion = info.GoVersion
	}
	fmt.Fprintf(&b, " %s %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
