// Package flows holds no Go code. Its directory is the switch-over kit of
// flowgate: n8n workflows (n8n/), an example VM worker (worker/worker.sh)
// and the guide (README.md). The package's tests check them against
// flowgate's own code: the workflows' structure, that their JavaScript and
// the worker's shell sign exactly like webhooks/signature, and that the
// worker and the workflows' requests are accepted by the built binary.
package flows
