package protocol

// MethodHunksReviewChanged sets or clears the reviewed mark of hunks of
// one file of a changeset. The daemon stores the marks, bound to each
// hunk's content, and publishes the file again (changeset/fileSet) with
// its _meta.changesetd.hunks updated, so every subscriber sees them.
const MethodHunksReviewChanged = "x-changesetd/hunksReviewChanged"

// HunksReviewChangedParams are the params of x-changesetd/hunksReviewChanged;
// Channel is the changeset, File a file id of it and Hunks ids from the
// file's _meta.changesetd.hunks.
type HunksReviewChangedParams struct {
	BaseParams
	File     string   `json:"file"`
	Hunks    []string `json:"hunks"`
	Reviewed bool     `json:"reviewed"`
}
