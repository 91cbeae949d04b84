package session

import (
	"github.com/changesetd/changesetd/protocol"
)

func rng(l1, c1, l2, c2 int) protocol.TextRange {
	return protocol.TextRange{Start: protocol.TextPosition{Line: l1, Character: c1}, End: protocol.TextPosition{Line: l2, Character: c2}}
}
