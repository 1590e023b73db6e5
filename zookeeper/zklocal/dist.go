package zklocal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNotInstalled is returned (wrapped) by Start and StartEnsemble when no
// ZooKeeper distribution or no java executable can be found.
var ErrNotInstalled = errors.New("zklocal: ZooKeeper is not installed " +
	"(apt-get install zookeeper, or set ZOOKEEPER_HOME to an Apache ZooKeeper binary distribution)")

// debianJarDir is where Debian's libzookeeper-java puts its jars. It is a
// variable so tests can point the search somewhere empty.
var debianJarDir = "/usr/share/java"

// distribution is a ZooKeeper installation we know how to launch.
type distribution struct {
	java      string
	classpath []string
	source    string // human-readable origin, for error messages
}

func findDistribution() (distribution, error) {
	var searched []string

	var cp []string
	var source string
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		searched = append(searched, "$ZOOKEEPER_HOME="+home)
		if jars := homeJars(home); jars != nil {
			cp, source = jars, home
		}
	}
	if cp == nil {
		searched = append(searched, debianJarDir)
		if jars := debianJars(debianJarDir); jars != nil {
			cp, source = jars, debianJarDir
		}
	}
	if cp == nil {
		return distribution{}, fmt.Errorf("%w; searched %s", ErrNotInstalled, strings.Join(searched, ", "))
	}

	java, err := findJava()
	if err != nil {
		return distribution{}, err
	}
	return distribution{java: java, classpath: cp, source: source}, nil
}

// homeJars returns the classpath of an upstream binary distribution: since
// 3.5 everything lives in lib/, older releases kept zookeeper-x.y.z.jar at
// the top level.
func homeJars(home string) []string {
	top, _ := filepath.Glob(filepath.Join(home, "zookeeper*.jar"))
	lib, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
	jars := append(top, lib...)
	for _, j := range jars {
		if strings.HasPrefix(filepath.Base(j), "zookeeper-") && !strings.HasPrefix(filepath.Base(j), "zookeeper-jute") {
			sort.Strings(jars)
			return jars
		}
	}
	return nil
}

// debianJars builds a classpath from Debian's shared jar directory.
// zookeeper.jar's manifest Class-Path pulls in most dependencies, but it
// leaves out the servlet API (without it the AdminServer silently does not
// start) and any SLF4J binding (without one the server logs nothing at all).
func debianJars(dir string) []string {
	main := filepath.Join(dir, "zookeeper.jar")
	if _, err := os.Stat(main); err != nil {
		return nil
	}
	cp := []string{main}
	// netty-codec and netty-resolver: the TLS client port (Netty's
	// SslHandler) needs them and the manifest leaves them out.
	for _, name := range []string{"zookeeper-jute.jar", "servlet-api.jar", "netty-codec.jar", "netty-resolver.jar"} {
		if p := filepath.Join(dir, name); exists(p) {
			cp = append(cp, p)
		}
	}
	// Debian 12 patches 3.8 back to log4j 1.2; newer releases may ship
	// reload4j or logback instead. Take the first complete binding.
	bindings := [][]string{
		{"slf4j-log4j12.jar", "log4j-1.2.jar"},
		{"slf4j-reload4j.jar", "reload4j.jar"},
		{"logback-classic.jar", "logback-core.jar"},
	}
	for _, b := range bindings {
		ok := true
		for _, name := range b {
			ok = ok && exists(filepath.Join(dir, name))
		}
		if ok {
			for _, name := range b {
				cp = append(cp, filepath.Join(dir, name))
			}
			break
		}
	}
	return cp
}

func findJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		if p := filepath.Join(jh, "bin", "java"); exists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w; no java executable (set JAVA_HOME or put java on PATH): %w", ErrNotInstalled, err)
	}
	return p, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
