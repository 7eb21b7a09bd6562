package cloud9sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// DefaultAddr is where Main listens unless -addr says otherwise.
const DefaultAddr = "127.0.0.1:8099"

// Main runs a standalone simulator with flags from args (without the
// program name) until SIGINT or SIGTERM. It prints the endpoint URL and the
// practice's GUIDs to stdout and answers the exit code: 0 after a clean
// stop, 2 for bad flags, 1 when it cannot listen.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdout, stderr)
}

// run is Main until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, addr, faults, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "cloud9-sim:", err)
		return 2
	}
	sim := New(cfg)
	sim.SetFaults(faults)
	url, stopServer, err := sim.Start(addr)
	if err != nil {
		fmt.Fprintln(stderr, "cloud9-sim:", err)
		return 1
	}
	c := sim.Config()
	fmt.Fprintf(stdout, "cloud9-sim: serving the Cloud9 partner API at %s\n", url)
	fmt.Fprintf(stdout, "  sim clock %s (%s, scale %g), write limit %s per procedure, %d-day template\n",
		formatTime(sim.Now()), c.TimeZone, c.Scale, c.WriteLimit, c.HorizonDays)
	fmt.Fprintf(stdout, "  location %s %q, schedule view %s, appointment type %s %q (%d min)\n",
		c.Location.GUID, c.Location.Name, c.ScheduleView.GUID, sim.slotType.GUID, sim.slotType.Description, c.SlotMinutes)
	for _, ch := range c.Chairs {
		fmt.Fprintf(stdout, "  chair %s %q\n", ch.GUID, ch.Description)
	}
	fmt.Fprintf(stdout, "  orthodontist (providerGUID) %s %q\n", c.Orthodontist.GUID, c.Orthodontist.Name)
	if c.Admin {
		fmt.Fprintf(stdout, "  admin: GET %[1]sstate, PUT %[1]sfaults, POST %[1]sreset\n", url[:len(url)-len("/GetData.ashx")]+adminPrefix)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stopServer(sctx); err != nil {
		fmt.Fprintln(stderr, "cloud9-sim: shutdown:", err)
	}
	fmt.Fprintln(stdout, "cloud9-sim: stopped")
	return 0
}

func parseFlags(args []string, stderr io.Writer) (Config, string, Faults, error) {
	fs := flag.NewFlagSet("cloud9-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cloud9-sim [flags]\n\nServes a simulated Cloud9 Ortho partner API (GetData.ashx) until SIGINT/SIGTERM.\n\nflags:")
		fs.PrintDefaults()
	}
	var (
		cfg       Config
		faults    Faults
		addr      = fs.String("addr", DefaultAddr, "listen address (host:port; port 0 picks a free one)")
		writeLim  = fs.String("write-limit", DefaultWriteLimit().String(), "per-procedure limit of the Set… procedures in simulated time: N/s, N/min, N/h, N/<duration> or off")
		readLim   = fs.String("read-limit", "off", "per-procedure limit of the Get… procedures, same forms")
		window    = fs.String("window", string(WindowSliding), "how the limits count: sliding (N in any Per) or fixed (N per [k·Per, (k+1)·Per))")
		tz        = fs.String("tz", "America/New_York", "time zone of the location (slot times are local)")
		errRate   = fs.Float64("error-rate", 0, "probability (0..1) of answering error code 0 instead of running a call")
		emptyRate = fs.Float64("empty-rate", 0, "probability (0..1) of a read answering empty <Records />")
		noAdmin   = fs.Bool("no-admin", false, "do not serve the JSON admin endpoints under /_sim/")
	)
	fs.StringVar(&cfg.ClientID, "client-id", "", "ClientID to accept (empty: any)")
	fs.StringVar(&cfg.Username, "username", "", "UserName to accept (empty: any)")
	fs.StringVar(&cfg.Password, "password", "", "Password to accept (empty: any)")
	fs.Float64Var(&cfg.Scale, "scale", DefaultScale, "simulated seconds per real second (60: a minute of rate limit passes in a second)")
	fs.BoolVar(&cfg.Gzip, "gzip", false, "gzip every answer without a Content-Encoding header (decode by content)")
	fs.BoolVar(&cfg.GzipDeclared, "gzip-declared", false, "gzip every answer with Content-Encoding: gzip")
	fs.StringVar(&cfg.Charset, "charset", "", "charset of the answers, e.g. windows-1252 (empty: utf-8)")
	fs.BoolVar(&cfg.BlankSlotAppointmentType, "blank-slot-type", false, "answer slots with an empty AppointmentTypeGUID, as the real sandbox does")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed of GUIDs and fault draws (0: from the clock)")
	fs.IntVar(&cfg.HorizonDays, "days", 90, "days of open slots from the simulated today")
	fs.DurationVar(&faults.Latency, "latency", 0, "delay of every answer (real time)")
	if err := fs.Parse(args); err != nil {
		return Config{}, "", Faults{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, "", Faults{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if cfg.WriteLimit, err = ParseRate(*writeLim); err != nil {
		return Config{}, "", Faults{}, fmt.Errorf("-write-limit: %w", err)
	}
	if cfg.ReadLimit, err = ParseRate(*readLim); err != nil {
		return Config{}, "", Faults{}, fmt.Errorf("-read-limit: %w", err)
	}
	if cfg.Window, err = ParseWindow(*window); err != nil {
		return Config{}, "", Faults{}, fmt.Errorf("-window: %w", err)
	}
	if cfg.TimeZone, err = time.LoadLocation(*tz); err != nil {
		return Config{}, "", Faults{}, fmt.Errorf("-tz: %w", err)
	}
	if cfg.Scale <= 0 {
		return Config{}, "", Faults{}, fmt.Errorf("-scale must be positive")
	}
	if cfg.HorizonDays < 1 {
		return Config{}, "", Faults{}, fmt.Errorf("-days must be positive")
	}
	for name, r := range map[string]float64{"-error-rate": *errRate, "-empty-rate": *emptyRate} {
		if r < 0 || r > 1 {
			return Config{}, "", Faults{}, fmt.Errorf("%s must be within 0..1", name)
		}
	}
	if faults.Latency < 0 {
		return Config{}, "", Faults{}, fmt.Errorf("-latency must not be negative")
	}
	faults.ErrorRate, faults.EmptyRecordsRate = *errRate, *emptyRate
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	cfg.Admin = !*noAdmin
	return cfg, *addr, faults, cfg.Validate()
}
