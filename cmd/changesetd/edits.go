package main

import (
	"context"
	"io"
)

func editsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return 2
}
