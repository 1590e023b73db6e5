// Package static holds the browser side of zklockviz: plain ES modules and one
// stylesheet, served as they are (no build step, no Node toolchain).
package static

import "embed"

// FS holds every asset; the page handlers serve it under /static/.
//
//go:embed *.js *.css *.svg
var FS embed.FS
