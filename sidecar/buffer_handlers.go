package main

import (
	"context"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/builtin"
	"github.com/flowgate/flowgate/orchestrator/buffer/declared"
)

// builtinTypes are the types a declared handler may not take, whether or
// not the built-in is registered.
var builtinTypes = []string{builtin.TypeWebhookForward, builtin.TypeSSEEmit, builtin.TypeNoop}

// handlersOptions are how BUFFER_HANDLERS_FILE is read.
func (c *Config) handlersOptions() declared.Options {
	return declared.Options{Reserved: builtinTypes, DefaultSecret: c.OutboundSecret, Inbound: c.inboundSecrets()}
}

// validateHandlersFile reports every problem of BUFFER_HANDLERS_FILE at
// start (one line each, file:line).
func (c *Config) validateHandlersFile(p *problems) {
	if c.Buffer.HandlersFile == "" {
		return
	}
	if _, err := declared.Load(c.Buffer.HandlersFile, c.handlersOptions()); err != nil {
		p.add("BUFFER_HANDLERS_FILE", err)
	}
}

// declaredHandlers are the buffer's handlers from BUFFER_HANDLERS_FILE;
// SIGHUP reloads the file.
type declaredHandlers struct {
	path string
	opt  declared.Options
	set  *declared.Set
	buf  *buffer.Buffer
	m    *Main
	mu   sync.Mutex // one reload at a time
}

// loadDeclared registers the file's handlers on buf (nil without a file).
func (m *Main) loadDeclared(buf *buffer.Buffer, fallback buffer.Backoff) (*declaredHandlers, error) {
	c := m.Config
	if c.Buffer.HandlersFile == "" {
		return nil, nil
	}
	opt := c.handlersOptions()
	f, err := declared.Load(c.Buffer.HandlersFile, opt)
	if err != nil {
		return nil, &ConfigError{Var: "BUFFER_HANDLERS_FILE", Err: err}
	}
	d := &declaredHandlers{path: c.Buffer.HandlersFile, opt: opt, buf: buf, m: m,
		set: declared.NewSet(f, fallback, nil, m.Now)}
	d.set.SetRemovedGrace(c.Buffer.RemovedTypeGrace)
	for _, typ := range f.Types() {
		if err := buf.Register(d.set.Handler(typ)); err != nil {
			return nil, &ConfigError{Var: "BUFFER_HANDLERS_FILE", Err: err}
		}
	}
	m.Logger.Info("buffer: declared HTTP handlers loaded", "file", d.path, "types", f.Types())
	return d, nil
}

// reload reads the file again: an invalid file is refused (logged at
// error) and the current one kept; a valid one replaces it at once (new
// attempts use it, attempts in flight finish with the old).
func (d *declaredHandlers) reload() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := declared.Load(d.path, d.opt)
	if err != nil {
		d.m.Logger.Error("buffer: handlers file refused on reload; the current one stays", "file", d.path, "err", err.Error())
		return err
	}
	added := d.set.Swap(f)
	for _, typ := range added {
		if err := d.buf.RegisterLive(d.set.Handler(typ)); err != nil {
			d.m.Logger.Error("buffer: could not add a reloaded handler type", "type", typ, "err", err)
		}
	}
	for _, sp := range f.Specs {
		d.buf.SetCircuit(sp.Type, sp.Circuit)
	}
	removed := slices.Sorted(maps.Keys(d.set.Removed()))
	d.m.Logger.Info("buffer: handlers file reloaded", "file", d.path, "types", f.Types(), "added", added, "removed", removed,
		"removed_grace", d.m.Config.Buffer.RemovedTypeGrace.String())
	return nil
}

// watch reloads on SIGHUP until the process closes.
func (d *declaredHandlers) watch() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				_ = d.reload()
			case <-done:
				return
			}
		}
	}()
	d.m.onClose(func(context.Context) error { signal.Stop(ch); close(done); return nil })
}
