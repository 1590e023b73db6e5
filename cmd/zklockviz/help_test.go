package main

import (
	"strings"
	"testing"
)

// Every lock service serve registers is named in the top-level help and in
// serve's, and serve's shows how to watch a lock of each by its
// service-qualified name: a new service cannot be added without them.
func TestHelpNamesEveryService(t *testing.T) {
	m := NewMain(nil, nil)
	if err := m.registerServices(nil); err != nil {
		t.Fatal(err)
	}
	_, top, _ := runBinary(t, nil, "help")
	_, serve, _ := runBinary(t, nil, "help", "serve")
	for _, svc := range m.services.All() {
		for _, h := range []struct{ name, text string }{{"zklockviz help", top}, {"zklockviz help serve", serve}} {
			if !strings.Contains(h.text, svc.Title) {
				t.Errorf("%s does not name %s", h.name, svc.Title)
			}
		}
		if svc.Name != "zookeeper" && !strings.Contains(serve, "--watch "+svc.Name+":") {
			t.Errorf("zklockviz help serve has no --watch %s:NAME example", svc.Name)
		}
	}
	if len(m.services.All()) < 3 {
		t.Errorf("registerServices registered %d services, want ZooKeeper, etcd and PostgreSQL at least", len(m.services.All()))
	}
}
