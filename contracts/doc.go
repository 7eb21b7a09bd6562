// Package contracts holds flowgate's wire shapes: request and response
// structs, validation tags, error codes and the error envelope, for every
// external contract flowgate mirrors (Node-RED booking endpoints, the n8n
// task queue and webhooks). It imports only the standard library so every
// other package can share it.
//
// Golden JSON fixtures for each shape live in contracts/testdata; the
// contractstest package compares against them and rewrites them with
// `go test ./contracts/... -update`.
package contracts
