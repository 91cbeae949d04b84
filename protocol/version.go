package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// SupportedVersions lists the version ranges this host accepts, as sent in
// the data of an UnsupportedProtocolVersion error.
var SupportedVersions = []string{">=1.0.0 <2.0.0", ">=0.9.0 <0.10.0", ">=0.7.0 <0.8.0", ">=0.6.0 <0.7.0"}

// Version is a strict MAJOR.MINOR.PATCH version.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less orders versions.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// ParseVersion parses strict MAJOR.MINOR.PATCH: no leading zeros, no
// pre-release or build suffix.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH", s)
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') || strings.TrimLeft(p, "0123456789") != "" {
			return Version{}, fmt.Errorf("version %q: %q is not a number without leading zeros", s, p)
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("version %q: %w", s, err)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// accepted reports whether v is inside one of SupportedVersions.
func accepted(v Version) bool {
	switch {
	case v.Major == 1:
		return true
	case v.Major == 0:
		return v.Minor == 9 || v.Minor == 7 || v.Minor == 6
	}
	return false
}

// Negotiate picks the highest acceptable offer and returns it exactly as
// offered. A malformed offer is an InvalidParams error; no acceptable
// offer is an UnsupportedProtocolVersion error carrying supportedVersions.
func Negotiate(offers []string) (string, error) {
	if len(offers) == 0 {
		return "", Errorf(CodeInvalidParams, "initialize: protocolVersions is empty")
	}
	best, bestStr := Version{}, ""
	for _, s := range offers {
		v, err := ParseVersion(s)
		if err != nil {
			return "", Errorf(CodeInvalidParams, "initialize: %v", err)
		}
		if accepted(v) && (bestStr == "" || best.Less(v)) {
			best, bestStr = v, s
		}
	}
	if bestStr == "" {
		return "", &Error{
			Code:    CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("no supported protocol version in %s; this server speaks %s", strings.Join(offers, ", "), strings.Join(SupportedVersions, ", ")),
			Data:    map[string]any{"supportedVersions": SupportedVersions},
		}
	}
	return bestStr, nil
}

// IsLegacy reports whether a negotiated version predates 0.9.0, whose
// clients expect contentChanged.error, lifecycle "creationFailed" and no
// "recomputing" status.
func IsLegacy(version string) bool {
	v, err := ParseVersion(version)
	if err != nil {
		return false
	}
	return v.Major == 0 && v.Minor < 9
}
