#!/bin/sh
# Copies the review page's third-party code into web/static, where
# go:embed puts it in the binary: the page fetches nothing from anywhere
# but the daemon. Run it after changing package.json (then commit
# package-lock.json and the copied files):
#
#	web/vendor/vendor.sh
#
# highlight.js (BSD-3-Clause) colours the diff's code. Its cdn-assets
# package is used because it ships each grammar as a standalone ES
# module: the page loads the core and a language only when a file in that
# language is shown, after the diff is on screen.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
static="$here/../static"
cd "$here"
npm ci --no-audit --no-fund
hl=node_modules/@highlightjs/cdn-assets
cp "$hl/es/core.min.js" "$static/hljs-core.js"
cp "$hl/LICENSE" "$static/hljs-LICENSE.txt"
for lang in bash c cpp csharp css diff dockerfile go ini java javascript json kotlin lua makefile markdown \
	perl php protobuf python ruby rust scala scss shell sql swift typescript xml yaml; do
	cp "$hl/es/languages/$lang.min.js" "$static/hljs-$lang.js"
done
