package zkwatch

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadPath is wrapped by every ValidatePath error, so callers (the web
// layer) can map it to a 400 without matching message text.
var ErrBadPath = errors.New("invalid znode path")

// ValidatePath checks a znode path the way the ZooKeeper server would, and
// a little stricter: absolute, no trailing slash except "/" itself, no empty
// segments, no "." or ".." segments, no control or non-printing characters,
// valid UTF-8. The error says which rule failed.
func ValidatePath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrBadPath, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case p[0] != '/':
		return bad("must start with /")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return bad("must not end with /")
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	}
	for i, r := range p {
		// The server rejects these too (PathUtils.validatePath); catching
		// them here gives a readable error instead of a protocol one.
		if unicode.IsControl(r) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return bad(fmt.Sprintf("character %U at byte %d is not allowed", r, i))
		}
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return bad("empty segment (//)")
		case ".", "..":
			return bad(`"." and ".." segments are not allowed`)
		}
	}
	return nil
}

// chroot maps between the paths users see and the server's full paths.
type chroot string

func (c chroot) full(p string) string {
	if c == "" {
		return p
	}
	if p == "/" {
		return string(c)
	}
	return string(c) + p
}

// rel returns the user-facing path for a server path, false when the path
// lies outside the chroot.
func (c chroot) rel(p string) (string, bool) {
	if c == "" {
		return p, true
	}
	if p == string(c) {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, string(c)); ok && strings.HasPrefix(rest, "/") {
		return rest, true
	}
	return "", false
}

// join appends a child name to a parent path.
func join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
