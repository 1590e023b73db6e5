package lockqueue

import "strconv"

// Count is n with the noun phrase that agrees with it: "1 node", "3 nodes".
// Every count a person reads goes through it, so no screen says "1 nodes".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + agree(n, one, many)
}

// agree picks the form of a phrase that agrees with n.
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
