package server

import (
	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/protocol"
)

// resourceResolve stats a resource before a client reads it: VS Code's
// diff viewer does so for each side of a file. It takes a place among
// the reads in flight like resourceRead, since describing a stored
// object or a patch reads it.
func (c *conn) resourceResolve(req *jsonrpc2.Request, p protocol.ResourceResolveParams) {
	if p.URI == "" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceResolve: uri is required"))
		return
	}
	follow := p.FollowSymlinks == nil || *p.FollowSymlinks
	c.async(req, func() {
		release, err := c.acquireRead()
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		defer release()
		res, err := c.srv.m.ResolveResource(c.ctx, p.URI, follow, maxResourceBytes)
		c.reply(req, res, err)
	})
}

// resourceList lists a directory of a session's working directories.
func (c *conn) resourceList(req *jsonrpc2.Request, p protocol.ResourceListParams) {
	if p.URI == "" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceList: uri is required"))
		return
	}
	c.async(req, func() {
		release, err := c.acquireRead()
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		defer release()
		entries, err := c.srv.m.ListResource(p.URI)
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		c.reply(req, protocol.ResourceListResult{Entries: entries}, nil)
	})
}
