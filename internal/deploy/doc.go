// Package deploy checks that brainwire's deployment files hold together:
// docker-compose.yml loads with the Compose specification's own loader
// (compose-go), and its brainwire service, the Dockerfile, go.mod and the
// collector's configuration agree on versions, ports, paths and commands.
// It has no code, only tests, run in CI like every other package: no
// container engine is needed.
package deploy
