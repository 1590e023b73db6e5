package simulator

// Recipe is a strategy's pseudocode as the classroom shows it; a client's
// line (ClientInfo.Line) points into Lines, numbered from 1.
type Recipe struct {
	Strategy Strategy `json:"strategy"`
	Lines    []string `json:"lines"`
}
