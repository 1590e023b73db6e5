// Package timespacetest reads a run's time–space diagram (the SVG that
// simulator.WriteSVG draws) back into what tests check: its lanes, its
// labels and how many marks of each kind it has. It parses the file as XML,
// so a diagram that is not well-formed fails to read.
package timespacetest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Lane is one horizontal line of the diagram: Kind is "server", "client"
// or "resource"; Name is who it stands for.
type Lane struct {
	Kind, Name string
}

// Diagram is what a time–space diagram shows.
type Diagram struct {
	// Title is the document's <title>.
	Title string
	Lanes []Lane
	// Texts are the visible labels, in document order.
	Texts []string
	// Marks counts elements by class: "held", "believed", "pause",
	// "violation", "cross", "refused", "grant", "expiry", an event's kind.
	Marks map[string]int
}

// Parse reads an SVG time–space diagram.
func Parse(b []byte) (Diagram, error) {
	d := Diagram{Marks: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var stack []string // element names, to tell a label from a tooltip
	root := true
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return d, fmt.Errorf("the diagram is not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root && (t.Name.Local != "svg" || t.Name.Space != "http://www.w3.org/2000/svg") {
				return d, fmt.Errorf("root element %s %s, want an svg in the SVG namespace", t.Name.Space, t.Name.Local)
			}
			root = false
			stack = append(stack, t.Name.Local)
			d.element(t)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			s := strings.TrimSpace(string(t))
			switch {
			case s == "" || len(stack) == 0:
			case stack[len(stack)-1] == "text":
				d.Texts = append(d.Texts, s)
			case stack[len(stack)-1] == "title" && len(stack) == 2:
				d.Title = s
			}
		}
	}
	if root {
		return d, errors.New("the diagram is empty")
	}
	return d, nil
}

func (d *Diagram) element(t xml.StartElement) {
	var class, name string
	for _, a := range t.Attr {
		switch a.Name.Local {
		case "class":
			class = a.Value
		case "data-name":
			name = a.Value
		}
	}
	fields := strings.Fields(class)
	for _, c := range fields {
		d.Marks[c]++
	}
	if len(fields) == 2 && fields[0] == "lane" {
		d.Lanes = append(d.Lanes, Lane{Kind: fields[1], Name: name})
	}
}

// LanesOf are the names of the lanes of one kind, top to bottom.
func (d Diagram) LanesOf(kind string) []string {
	var out []string
	for _, l := range d.Lanes {
		if l.Kind == kind {
			out = append(out, l.Name)
		}
	}
	return out
}

// Matching are the labels re matches.
func (d Diagram) Matching(re *regexp.Regexp) []string {
	var out []string
	for _, s := range d.Texts {
		if re.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}
