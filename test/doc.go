// Package test holds the project's integration tests and the scripts that
// start real Nacos servers for them (test/nacos/). The Go tests live in
// test/integration and build only with the "integration" tag; test/run.sh
// starts the servers, runs them and stops the servers.
package test
