// Package flows holds no Go code. Its directory is the switch-over kit of
// flowgate: n8n workflows (n8n/), an example VM worker (worker/worker.sh),
// the Node-RED proxy and queue-dashboard flows (node-red/, generated from
// node-red/endpoints.json and node-red/src by nodered_test.go), the
// Node-RED palette node-red-contrib-flowgate (node-red/palette, an npm
// package) and the guide (README.md). The package's tests check them
// against flowgate's own code: the workflows' structure, that their
// JavaScript, the worker's shell and the palette sign exactly like
// webhooks/signature, that the worker and the workflows' requests are
// accepted by the built binary, that a real n8n (test/n8n-install,
// test/n8ntest) runs both workflows against the binary, that the Node-RED
// flows are up to date with their list and sources, and that the palette's
// mocha tests pass and its packed tarball, installed into a real Node-RED,
// drives flowgate (palette_test.go, palette_e2e_test.go).
package flows
