package protocol

// The stat and directory-listing members of AHP's resource* family. A
// diff viewer stats a side (resourceResolve) before it reads it
// (resourceRead); older VS Code builds list the parent directory
// (resourceList) instead.
const (
	MethodResourceResolve = "resourceResolve"
	MethodResourceList    = "resourceList"
)

// ResourceResolveResult types.
const (
	ResourceTypeFile      = "file"
	ResourceTypeDirectory = "directory"
	ResourceTypeSymlink   = "symlink"
)

type ResourceResolveParams struct {
	BaseParams
	URI string `json:"uri"`
	// FollowSymlinks (default true) reports a symbolic link as its
	// target; false reports it as type "symlink".
	FollowSymlinks *bool `json:"followSymlinks,omitempty"`
}

// ResourceResolveResult is a resource's stat: its kind, size in bytes
// and modification time (ISO 8601), where known.
type ResourceResolveResult struct {
	URI         string `json:"uri"`
	Type        string `json:"type"`
	Size        *int64 `json:"size,omitempty"`
	Mtime       string `json:"mtime,omitempty"`
	ContentType string `json:"contentType,omitempty"`
}

type ResourceListParams struct {
	BaseParams
	URI string `json:"uri"`
}

// DirectoryEntry is one entry of a listed directory; Type is "file" or
// "directory".
type DirectoryEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type ResourceListResult struct {
	Entries []DirectoryEntry `json:"entries"`
}
