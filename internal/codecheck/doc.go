// Package codecheck holds tests of the code base itself, not of what it
// does: see its tests. It has no code of its own.
package codecheck
