// Package integration holds tests that run against real Nacos servers
// started by test/run.sh. They build only with the "integration" tag.
package integration
