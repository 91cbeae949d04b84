//go:build !linux

package fswatch

import "os"

// subdirs returns the names of dir's subdirectories (not following
// symbolic links).
func subdirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
